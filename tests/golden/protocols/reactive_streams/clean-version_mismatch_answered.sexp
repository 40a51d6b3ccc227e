(reactive-streams(ClientHello((version 1)(extensions()))))
(reactive-streams(ServerHello((version 0)(extensions()))))
(reactive-streams(Goodbye((reason"version 0 only"))))
