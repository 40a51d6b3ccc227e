(lumberjack(Window((version 1)(count 2))))
(lumberjack(Compressed((version 1)(zlib"x^3ta```\004b& f\201\201\204K\005\210\172i\153E\197% \129\180\204\028\144\000\159~Yb\145~N~\186~\162\030\1444\004i\002i@\214\196V\156\154\156\159\151\130[\023\000\021\192\022/"))))
(lumberjack(Data((version 1)(seq 1)(pairs((line first)(file /var/log/a.log)))(in_compressed 6))))
(lumberjack(Data((version 1)(seq 2)(pairs((line second)(file /var/log/a.log)))(in_compressed 6))))
