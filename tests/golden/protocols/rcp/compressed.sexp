(rcp(Frame((version 1)(flags(CRC_PRESENT COMPRESSED))(payload"x\156\171V*\169,HU\178R\000\000"))))
