(reactive-streams(ClientHello((version 0)(extensions()))))
(reactive-streams(ServerHello((version 0)(extensions()))))
(reactive-streams(ClientHello((version 0)(extensions()))))
