(rcp(JsonLine((json"{\"type\":\"response\",\"id\":\"1\",\"status\":\"ok\",\"result\":{\"protocol_version\":1,\"wire_mode\":\"jsonl\",\"server_name\":\"rstmdb\",\"server_version\":\"0.1.0\",\"features\":[]}}"))))
(rcp(JsonLine((json"{\"type\":\"response\",\"id\":\"2\",\"status\":\"ok\",\"result\":{\"pong\":true}}"))))
(rcp(JsonLine((json"{\"type\":\"response\",\"id\":\"3\",\"status\":\"error\",\"error\":{\"code\":\"INSTANCE_NOT_FOUND\",\"message\":\"instance not found: x\",\"retryable\":false}}"))))
(rcp(JsonLine((json"{\"type\":\"event\",\"subscription_id\":\"sub-2\",\"instance_id\":\"x\",\"machine\":\"m\",\"version\":1,\"wal_offset\":3,\"from_state\":\"a\",\"to_state\":\"b\",\"event\":\"go\"}"))))
