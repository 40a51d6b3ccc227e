(rcp(Request((version 1)(flags(CRC_PRESENT))(crc 305419896)(payload"{\"type\":\"request\",\"id\":\"5\",\"op\":\"INFO\"}"))))
