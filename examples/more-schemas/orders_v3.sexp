; orders/v3: the one output of examples/demo.ripple that its Handshake does
; not declare, so its Deltas decode only when this file is given:
;   ripple decode --schemas examples/more-schemas examples/demo.ripple
((name orders) (version 3) (key String)
 (fields
  (((name symbol) (typ String) (default ()))
   ((name px) (typ Float) (default ()))
   ((name qty) (typ Int) (default ()))
   ((name side) (typ (Enum (Buy Sell))) (default ()))
   ((name tif) (typ (Enum (Day Ioc Gtc))) (default (Day)))
   ((name client) (typ (Option String)) (default ("()"))))))
