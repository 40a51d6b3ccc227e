(rcp(Frame((version 1)(flags(CRC_PRESENT))(payload"{\"type\":\"request\",\"id\":\"\255\"}"))))
(rcp(Frame((version 1)(flags(CRC_PRESENT))(payload"{\"type\":\"request\","))))
(rcp(Frame((version 1)(flags(CRC_PRESENT))(payload [1,2,3]))))
(rcp(Frame((version 1)(flags(CRC_PRESENT))(payload"{\"type\":\"notice\",\"text\":\"hi\"}"))))
