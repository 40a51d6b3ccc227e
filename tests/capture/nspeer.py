"""The two peers of the veth capture (netns.py), each run inside its own
network namespace by `ip netns exec`: `serve HOST PORT N FILE` accepts N
connections and answers each with FILE's bytes while reading what comes;
`send HOST PORT N FILE SEED` opens N connections at once, writes FILE's
bytes on each in random-sized writes and checks it got FILE back.  The
peers are livecap's, the loopback captures' own."""

from __future__ import annotations

import random
import socket
import sys
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1])]  # livecap, and the ripple_cli it imports

from livecap import _client, _serve_one  # noqa: E402


def serve(host: str, port: int, n: int, data: bytes) -> None:
    with socket.socket() as srv:
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((host, port))
        srv.listen(n)
        print("listening", flush=True)
        threads = []
        for k in range(n):
            conn, _addr = srv.accept()
            threads.append(threading.Thread(target=_serve_one, args=(conn, data, random.Random(k), [])))
            threads[-1].start()
        for t in threads:
            t.join(60)


def send(host: str, port: int, n: int, data: bytes, seed: int) -> None:
    got: list[bytes] = []

    def one(k: int) -> None:
        got.append(_client(host, port, data, random.Random(seed * 100 + k), 3000)[1])

    threads = [threading.Thread(target=one, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    if got != [data] * n:
        sys.exit("the sockets themselves lost bytes")


if __name__ == "__main__":
    mode, host, port, count, path = sys.argv[1:6]
    payload = Path(path).read_bytes()
    if mode == "serve":
        serve(host, int(port), int(count), payload)
    else:
        send(host, int(port), int(count), payload, int(sys.argv[6]))
