(lumberjack(Ack((version 2)(seq 0))))
(lumberjack(Ack((version 2)(seq 3))))
(lumberjack(Ack((version 1)(seq 2))))
(lumberjack(Ack((version 1)(seq 5))))
