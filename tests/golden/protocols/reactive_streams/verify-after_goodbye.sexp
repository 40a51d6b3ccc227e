(reactive-streams(ClientHello((version 0)(extensions()))))
(reactive-streams(ServerHello((version 0)(extensions()))))
(reactive-streams(Goodbye((reason bye))))
(reactive-streams(Subscribe((publisher p)(subscriber 1)(initial_demand 0))))
