"""Real Lumberjack writers from npm (tests/peers, installed by
scripts/npm-peers.sh) and a reader written for the tests, on 127.0.0.1.

`Reader` is a Lumberjack server of its own: it reads frames with its own
code (not ripple's), inflates C frames, answers with acks in either
server style, and keeps what it received and sent, in order."""

from __future__ import annotations

import json
import os
import shutil
import socket
import ssl
import struct
import subprocess
import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
PEERS = ROOT / "tests" / "peers"
SEND = PEERS / "send.js"


def require_peers() -> None:
    if shutil.which("node") is None or not (PEERS / "node_modules" / "lumberjack-protocol").is_dir():
        pytest.skip("the npm peers are not installed: run scripts/npm-peers.sh (make test does)")


def send(mode: str, port: int, queued: list[dict[str, Any]], later: list[dict[str, Any]], window: int = 0) -> list[int]:
    """Run a real writer (see tests/peers/send.js); the acks it received."""
    spec = json.dumps({"queued": queued, "later": later, "window": window})
    r = subprocess.run(
        ["node", str(SEND), mode, str(port), spec], cwd=PEERS, capture_output=True, text=True, timeout=60, check=False
    )
    lines = [json.loads(ln) for ln in r.stdout.splitlines()]
    assert r.returncode == 0 and lines and lines[-1] == {"done": True}, (r.stdout, r.stderr)
    return [ln["ack"] for ln in lines if "ack" in ln]


def js_strings(event: dict[str, Any]) -> dict[str, str]:
    """An event as lumberjack-protocol sends it: every value turned into a
    string by JavaScript ("" + value), null ones dropped."""

    def text(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float) and v.is_integer():
            return str(int(v))
        return str(v)

    return {k: text(v) for k, v in event.items() if v is not None}


def self_signed(tmp: Path) -> ssl.SSLContext:
    """A throwaway certificate made by openssl, for a TLS reader."""
    key, cert = tmp / "key.pem", tmp / "cert.pem"
    args = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1"]
    subprocess.run(["openssl", *args, "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    # lumberjack-protocol's client leaves without a TLS close_notify.
    ctx.options |= ssl.OP_IGNORE_UNEXPECTED_EOF
    return ctx


HOSTNAME = os.uname().nodename  # what lumberjack-protocol adds as `host`


# ---------------------------------------------------------------- the reader


def _frame_length(buf: bytes | bytearray, p: int) -> int | None:
    """The length of the whole frame at p, or None while it is incomplete."""
    n = len(buf) - p
    if n < 6:
        return None
    kind = buf[p + 1 : p + 2]
    if kind in (b"W", b"A"):
        return 6
    if kind == b"C":
        size = 6 + struct.unpack_from(">I", buf, p + 2)[0]
    elif kind == b"J":
        if n < 10:
            return None
        size = 10 + struct.unpack_from(">I", buf, p + 6)[0]
    elif kind == b"D":
        if n < 10:
            return None
        size = 10
        for _ in range(struct.unpack_from(">I", buf, p + 6)[0] * 2):
            if n < size + 4:
                return None
            size += 4 + struct.unpack_from(">I", buf, p + size)[0]
    else:
        raise AssertionError(f"the test reader cannot read {bytes(buf[p : p + 2])!r}")
    return size if n >= size else None


def _pairs(frame: bytes) -> dict[str, str]:
    out, at = {}, 10
    for _ in range(struct.unpack_from(">I", frame, 6)[0]):
        klen = struct.unpack_from(">I", frame, at)[0]
        key = frame[at + 4 : at + 4 + klen].decode()
        at += 4 + klen
        vlen = struct.unpack_from(">I", frame, at)[0]
        out[key] = frame[at + 4 : at + 4 + vlen].decode()
        at += 4 + vlen
    return out


@dataclass
class Reader:
    """One connection's reader.  `style`: "count" (go-lumber: the ack is the
    number of events in the batch, sent once the batch is whole, after a
    keepalive) or "eager" (the highest seq seen, after every read that
    brought events, as logstash-input-beats and the Ruby reader do)."""

    style: str = "count"
    tls: ssl.SSLContext | None = None
    received: bytearray = field(default_factory=bytearray)
    sent: bytearray = field(default_factory=bytearray)
    acks: list[int] = field(default_factory=list)
    events: list[tuple[int, Any]] = field(default_factory=list)  # (seq, event) as this reader read them
    transcript: list[tuple[bool, bytes]] = field(default_factory=list)  # (from the writer?, bytes), in order
    error: BaseException | None = None

    def __post_init__(self) -> None:
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(1)
        self.port = int(self.srv.getsockname()[1])
        self.client_port = 0  # the writer's port, once it connected
        self._version = b"2"
        self._batch: int | None = None
        self._in_batch = 0
        self._highest = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def join(self, timeout: float = 30) -> None:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the reader never saw the connection end"
        self.srv.close()
        if self.error is not None:
            raise self.error

    def _serve(self) -> None:
        try:
            conn, addr = self.srv.accept()
            self.client_port = int(addr[1])
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            with conn:
                self._read(conn)
        except BaseException as e:  # reported by join()
            self.error = e

    def _read(self, conn: socket.socket) -> None:
        buf = bytearray()
        while chunk := conn.recv(65536):
            self.received += chunk
            self.transcript.append((True, chunk))
            buf += chunk
            p, before = 0, len(self.events)
            while (size := _frame_length(buf, p)) is not None:
                self._frame(bytes(buf[p : p + size]), conn)
                p += size
            del buf[:p]
            if self.style == "eager" and len(self.events) > before:
                self._ack(conn, self._highest)
        assert not buf, "the writer closed inside a frame"

    def _frame(self, frame: bytes, conn: socket.socket) -> None:
        kind = frame[1:2]
        if kind == b"W":
            self._version = frame[:1]
            self._batch, self._in_batch = struct.unpack_from(">I", frame, 2)[0], 0
        elif kind == b"C":
            inner, p = zlib.decompress(frame[6:]), 0
            while p < len(inner):
                size = _frame_length(inner, p)
                assert size is not None, "a partial frame inside a C frame"
                self._frame(inner[p : p + size], conn)
                p += size
        elif kind in (b"J", b"D"):
            seq = struct.unpack_from(">I", frame, 2)[0]
            self.events.append((seq, json.loads(frame[10:]) if kind == b"J" else _pairs(frame)))
            self._highest = seq
            self._in_batch += 1
            if self.style == "count" and self._in_batch == self._batch:
                self._ack(conn, 0)  # a keepalive first, as go-lumber sends while a batch is worked on
                self._ack(conn, self._in_batch)
        else:
            raise AssertionError(f"the writer sent {frame!r}")

    def _ack(self, conn: socket.socket, seq: int) -> None:
        frame = self._version + b"A" + struct.pack(">I", seq)
        conn.sendall(frame)
        self.sent += frame
        self.acks.append(seq)
        self.transcript.append((False, frame))
