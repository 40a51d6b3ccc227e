(lumberjack(Window((version 2)(count 2))))
(lumberjack(Json((version 2)(seq 1)(json"{\"@timestamp\":\"2026-11-22T05:00:00.000Z\",\"message\":\"GET /index.html 200\",\"n\":3,\"f\":-1.25e3,\"ok\":false,\"none\":null,\"tags\":[\"web\",\"prod\"],\"beat\":{\"name\":\"h1\"}}"))))
(lumberjack(Json((version 2)(seq 2)(json"{\"message\":\"caf\195\169 \226\152\131 \\u00e9\\n\"}"))))
