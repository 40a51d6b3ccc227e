#!/usr/bin/env python3
"""The two ends of the proxy workloads of bench.py, each in a process of its
own (so that neither shares an interpreter with the other or the bench).

    netpeer.py serve SINK_PORT ECHO_PORT
        SINK_PORT: reads a connection to its end, then answers the byte
        count (in a Heartbeat envelope) and closes.  ECHO_PORT: sends each
        request (one Ripple envelope) back.  Prints "ready" once both
        listen; stops when stdin closes.

    netpeer.py send HOST:PORT FILE
        Sends FILE in 1 MiB writes, half-closes, waits for the count; prints
        "BYTES SECONDS" (connect to answer).

    netpeer.py pingpong HOST:PORT FILE COUNT
        FILE holds one request (a small envelope): sends it and waits for it
        to come back, COUNT times after a tenth as many to warm up, on one
        connection; prints the round trips' p50 and p99 in microseconds.

All sockets are on 127.0.0.1 with TCP_NODELAY.
"""

from __future__ import annotations

import socket
import struct
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # ripple_cli, for the sink's answer

from ripple_cli.codec.envelope import build_envelope
from ripple_cli.codec.messages import FIXED_FINGERPRINTS, HEARTBEAT, Heartbeat, read_payload, write_payload

HEADER_SIZE = 59  # a Ripple envelope's header; its last four bytes are the payload length
PAYLOAD_LEN = struct.Struct("<i")


def _nodelay(s: socket.socket) -> socket.socket:
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def _recv_exact(c: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = c.recv(n - len(out))
        if not chunk:
            break
        out += chunk
    return bytes(out)


def _sink(c: socket.socket) -> None:
    with c:
        buf = bytearray(1 << 20)
        n = 0
        while k := c.recv_into(buf):
            n += k
        c.sendall(count_envelope(n))


def count_envelope(n: int) -> bytes:
    """The sink's answer, a Ripple Heartbeat whose timestamp is the byte
    count: a tap in the way decodes it like the rest of the traffic."""
    payload = write_payload(Heartbeat(b"bench-sink", n, 0.0))
    return build_envelope(HEARTBEAT, 1, n, FIXED_FINGERPRINTS[HEARTBEAT], payload)


def _count_of(answer: bytes) -> int:
    body = read_payload(HEARTBEAT, answer[HEADER_SIZE:-4])
    assert isinstance(body, Heartbeat)
    return body.timestamp_ns


def _recv_envelope(c: socket.socket) -> bytes:
    """One Ripple envelope (59-byte header, payload, CRC), or b"" at the end."""
    head = _recv_exact(c, HEADER_SIZE)
    if len(head) < HEADER_SIZE:
        return b""
    (length,) = PAYLOAD_LEN.unpack_from(head, HEADER_SIZE - 4)
    rest = _recv_exact(c, length + 4)
    return head + rest if len(rest) == length + 4 else b""


def _echo(c: socket.socket) -> None:
    """Each request is one envelope, sent back: the bytes on the wire are
    only envelopes, which the tap decodes."""
    with c:
        while request := _recv_envelope(c):
            c.sendall(request)


def _listen(port: int, handler: object) -> None:
    srv = socket.create_server(("127.0.0.1", port), reuse_port=False)
    srv.listen(16)

    def loop() -> None:
        while True:
            c, _ = srv.accept()
            threading.Thread(target=handler, args=(_nodelay(c),), daemon=True).start()  # type: ignore[arg-type]

    threading.Thread(target=loop, daemon=True).start()


def serve(sink_port: int, echo_port: int) -> None:
    _listen(sink_port, _sink)
    _listen(echo_port, _echo)
    print("ready", flush=True)
    sys.stdin.read()  # until the bench closes our stdin


def _address(text: str) -> tuple[str, int]:
    host, port = text.rsplit(":", 1)
    return host, int(port)


def send(address: str, path: str) -> None:
    t0 = time.perf_counter()
    with _nodelay(socket.create_connection(_address(address))) as s, open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            s.sendall(chunk)
        s.shutdown(socket.SHUT_WR)
        answer = _recv_envelope(s)
        seconds = time.perf_counter() - t0
    print(_count_of(answer), f"{seconds:.6f}")


def pingpong(address: str, path: str, count: int) -> None:
    with open(path, "rb") as f:
        request = f.read()
    warm = max(count // 10, 1)
    times: list[int] = []
    with _nodelay(socket.create_connection(_address(address))) as s:
        for i in range(warm + count):
            t0 = time.perf_counter_ns()
            s.sendall(request)
            back = _recv_exact(s, len(request))
            t = time.perf_counter_ns() - t0
            if back != request:
                raise SystemExit(f"pingpong: the answer differs from the request (round {i})")
            if i >= warm:
                times.append(t)
    times.sort()
    p50 = times[len(times) // 2] / 1000
    p99 = times[min(len(times) - 1, (len(times) * 99) // 100)] / 1000
    print(f"{p50:.1f} {p99:.1f}")


def main() -> None:
    cmd, *args = sys.argv[1:]
    if cmd == "serve":
        serve(int(args[0]), int(args[1]))
    elif cmd == "send":
        send(args[0], args[1])
    elif cmd == "pingpong":
        pingpong(args[0], args[1], int(args[2]))
    else:
        raise SystemExit(f"netpeer: unknown command {cmd}")


if __name__ == "__main__":
    main()
