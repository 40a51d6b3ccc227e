(rcp(Request((version 2)(flags(CRC_PRESENT))(payload"{\"type\":\"request\",\"id\":\"8\",\"op\":\"PING\"}"))))
