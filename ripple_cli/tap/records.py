"""What the relay process tells the tap, on the relay's stdout: a stream of
records, each an 18-byte header and a payload.

    type      u8   LISTENING, ERROR, OPEN, DATA, GAP, END, NOTE, STOPPED
    conn      u32  the connection's number (from 1), 0 when none
    c2s       u8   1: client -> upstream, 0: upstream -> client
    time_ns   i64  when the relay saw it (wall clock)
    length    u32  payload bytes that follow

Payloads: DATA the forwarded bytes; GAP the number of bytes dropped (u64);
END the reason (UTF-8); OPEN, NOTE and LISTENING a small JSON object;
ERROR a message for the user.  Little-endian throughout.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

HEADER = struct.Struct("<BIBqI")
GAP_SIZE = struct.Struct("<Q")

LISTENING = 1  # {"addresses": ["127.0.0.1:9000", ...]}
ERROR = 2  # the relay cannot run (cannot listen): the message, then it exits
OPEN = 3  # {"client": [host, port], "server": [host, port]}
DATA = 4
GAP = 5
END = 6
NOTE = 7  # {"kind": ..., "detail": ..., "error": bool}
STOPPED = 8  # the relay is done: nothing follows


@dataclass(frozen=True, slots=True)
class Record:
    type: int
    conn: int
    c2s: bool
    time_ns: int
    payload: bytes

    def json(self) -> dict[str, Any]:
        value = json.loads(self.payload)
        assert isinstance(value, dict)
        return value


def pack(rtype: int, conn: int = 0, c2s: bool = False, time_ns: int = 0, payload: bytes = b"") -> bytes:
    return HEADER.pack(rtype, conn, c2s, time_ns, len(payload)) + payload


def pack_json(rtype: int, obj: dict[str, Any], conn: int = 0, time_ns: int = 0) -> bytes:
    return pack(rtype, conn, False, time_ns, json.dumps(obj).encode("utf-8"))


def read_records(f: BinaryIO) -> Iterator[Record]:
    """The records of `f` until its end (a record cut short ends it too:
    the relay died mid-write, and the caller sees no STOPPED)."""
    size = HEADER.size
    while True:
        head = f.read(size)
        if len(head) < size:
            return
        rtype, conn, c2s, time_ns, length = HEADER.unpack(head)
        payload = f.read(length) if length else b""
        if len(payload) < length:
            return
        yield Record(rtype, conn, bool(c2s), time_ns, payload)
