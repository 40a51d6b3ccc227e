(reactive-streams(ClientHello((version 1)(extensions()))))
(reactive-streams(ServerHello((version 1)(extensions()))))
