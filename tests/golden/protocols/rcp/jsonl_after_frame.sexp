(rcp(Response((version 1)(flags(CRC_PRESENT))(payload"{\"type\":\"response\",\"id\":\"1\",\"status\":\"ok\",\"result\":{\"protocol_version\":1,\"wire_mode\":\"jsonl\",\"server_name\":\"s\",\"server_version\":\"1\",\"features\":[]}}"))))
(rcp(JsonLine((json"{\"type\":\"response\",\"id\":\"2\",\"status\":\"ok\",\"result\":{\"pong\":true}}"))))
