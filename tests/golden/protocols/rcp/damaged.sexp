(rcp(Request((version 1)(flags(CRC_PRESENT))(payload"{\"type\":\"request\",\"id\":\"13\",\"op\":\"PING\"}"))))
(rcp(Request((version 1)(flags(CRC_PRESENT))(payload"{\"type\":\"request\",\"id\":\"14\",\"op\":\"PING\"}"))))
