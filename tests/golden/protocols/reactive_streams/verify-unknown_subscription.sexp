(reactive-streams(ClientHello((version 0)(extensions()))))
(reactive-streams(ServerHello((version 0)(extensions()))))
(reactive-streams(Request((subscriber 4)(demand 1))))
