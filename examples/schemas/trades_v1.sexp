((name trades) (version 1) (key Int64)
 (fields
  (((name symbol) (typ String) (default ()))
   ((name price) (typ Float) (default ()))
   ((name qty) (typ Int32) (default ()))
   ((name side) (typ (Enum (Buy Sell Short_sell))) (default ()))
   ((name currency) (typ (Enum (USD))) (default (USD)))
   ((name exec_ns) (typ Int64) (default ()))
   ((name is_block) (typ Bool) (default (false)))
   ((name venue) (typ (Option (Option String))) (default ("()")))
   ((name fees) (typ (List (Option Float))) (default ("()")))
   ((name parties)
    (typ
     (List
      (Record
       (((name name) (typ String) (default ()))
        ((name account) (typ Int) (default ()))
        ((name role) (typ (Enum (Maker Taker))) (default ()))))))
    (default ("()"))))))
