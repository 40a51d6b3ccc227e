((name vwap) (version 2) (key String)
 (fields
  (((name price) (typ Float) (default ()))
   ((name volume) (typ Int) (default ()))
   ((name venue) (typ (Option String)) (default ("()"))))))
