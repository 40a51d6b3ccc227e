(rcp(Request((version 1)(flags(CRC_PRESENT))(extension"\000\001\254\255")(payload"{\"type\":\"request\",\"id\":\"9\",\"op\":\"PING\"}"))))
