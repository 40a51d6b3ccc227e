((name book) (version 4)
 (key
  (Record
   (((name symbol) (typ String) (default ()))
    ((name venue) (typ (Enum (XNYS XNAS BATS ARCX IEXG))) (default ())))))
 (fields
  (((name bid)
    (typ
     (Option
      (Record
       (((name px) (typ Float) (default ()))
        ((name size) (typ Int) (default ()))))))
    (default ("()")))
   ((name ask)
    (typ
     (Option
      (Record
       (((name px) (typ Float) (default ()))
        ((name size) (typ Int) (default ()))))))
    (default ("()")))
   ((name levels)
    (typ
     (List
      (Record
       (((name px) (typ Float) (default ()))
        ((name size) (typ Int) (default ()))
        ((name orders) (typ Int32) (default ()))))))
    (default ()))
   ((name status) (typ (Enum (Open Halted Closed Auction))) (default (Open)))
   ((name stats)
    (typ
     (Record
      (((name high) (typ Float) (default ()))
       ((name low) (typ Float) (default ()))
       ((name last)
        (typ
         (Record
          (((name px) (typ Float) (default ()))
           ((name at_ns) (typ Int64) (default ())))))
        (default ()))
       ((name vwap) (typ (Option Float)) (default ("()"))))))
    (default ()))
   ((name crossed) (typ Bool) (default (false))))))
