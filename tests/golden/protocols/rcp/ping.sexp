(rcp(Request((version 1)(flags(CRC_PRESENT))(payload"{\"type\":\"request\",\"id\":\"1\",\"op\":\"PING\"}"))))
(rcp(Response((version 1)(flags(CRC_PRESENT))(payload"{\"type\":\"response\",\"id\":\"1\",\"status\":\"ok\",\"result\":{\"pong\":true}}"))))
