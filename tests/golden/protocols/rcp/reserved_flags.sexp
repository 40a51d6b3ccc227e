(rcp(Request((version 1)(flags(CRC_PRESENT 256))(payload"{\"type\":\"request\",\"id\":\"6\",\"op\":\"PING\"}"))))
