"""The two peers of the veth capture (netns.py), each run inside its own
network namespace by `ip netns exec`: `serve HOST PORT N FILE` accepts N
connections and answers each with FILE's bytes while reading what comes;
`send HOST PORT N FILE SEED` opens N connections at once, writes FILE's
bytes on each in random-sized writes and checks it got FILE back.
Standard library only: it runs as a plain script."""

from __future__ import annotations

import random
import socket
import sys
import threading
from pathlib import Path


def _answer(conn: socket.socket, data: bytes, rng: random.Random) -> None:
    with conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        at = 0
        while chunk := conn.recv(65536):
            if at < len(data):
                n = rng.randint(1, 3000)
                conn.sendall(data[at : at + n])
                at += n
            del chunk
        conn.sendall(data[at:])


def serve(host: str, port: int, n: int, data: bytes) -> None:
    with socket.socket() as srv:
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((host, port))
        srv.listen(n)
        print("listening", flush=True)
        threads = []
        for k in range(n):
            conn, _addr = srv.accept()
            threads.append(threading.Thread(target=_answer, args=(conn, data, random.Random(k))))
            threads[-1].start()
        for t in threads:
            t.join(60)


def _send(host: str, port: int, data: bytes, rng: random.Random, got: list[bytes]) -> None:
    with socket.create_connection((host, port), timeout=60) as c:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        received = bytearray()

        def read() -> None:
            while chunk := c.recv(65536):
                received.extend(chunk)

        reader = threading.Thread(target=read)
        reader.start()
        at = 0
        while at < len(data):
            n = rng.randint(1, 3000)
            c.sendall(data[at : at + n])
            at += n
        c.shutdown(socket.SHUT_WR)
        reader.join(60)
    got.append(bytes(received))


def send(host: str, port: int, n: int, data: bytes, seed: int) -> None:
    got: list[bytes] = []
    threads = [
        threading.Thread(target=_send, args=(host, port, data, random.Random(seed * 100 + k), got)) for k in range(n)
    ]
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
