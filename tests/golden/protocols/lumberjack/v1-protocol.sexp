(lumberjack(Window((version 1)(count 5))))
(lumberjack(Data((version 1)(seq 1)(pairs((line hello)(host vm1))))))
(lumberjack(Data((version 1)(seq 2)(pairs((line"second line")(offset 42)("\195\188n\195\175""c\195\182d\195\169"))))))
