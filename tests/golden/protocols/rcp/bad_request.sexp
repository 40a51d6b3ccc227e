(rcp(Request((version 1)(flags(CRC_PRESENT))(payload"{\"type\":\"request\",\"id\":10,\"op\":\"PING\"}"))))
(rcp(Request((version 1)(flags(CRC_PRESENT))(payload"{\"type\":\"request\",\"id\":\"11\",\"op\":\"FROB\"}"))))
(rcp(Request((version 1)(flags(CRC_PRESENT))(payload"{\"type\":\"request\",\"id\":\"12\"}"))))
