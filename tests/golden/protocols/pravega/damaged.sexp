(pravega(Hello((high_version 17)(low_version 5))))
(pravega(KeepAlive()))
