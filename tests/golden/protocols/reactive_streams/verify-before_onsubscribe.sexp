(reactive-streams(ClientHello((version 0)(extensions()))))
(reactive-streams(ServerHello((version 0)(extensions()))))
(reactive-streams(Subscribe((publisher p)(subscriber 1)(initial_demand 1))))
(reactive-streams(OnNext((subscriber 1)(element_size 0)(element a))))
