(rcp(Request((version 1)(flags())(payload"{\"type\":\"request\",\"id\":\"3\",\"op\":\"PING\"}"))))
(rcp(Request((version 1)(flags())(crc 3735928559)(payload"{\"type\":\"request\",\"id\":\"4\",\"op\":\"PING\"}"))))
