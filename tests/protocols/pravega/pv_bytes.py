"""Pravega bytes for the tests, built by hand with struct from the layouts
in shared/protocols/facts.md section 2 (WireCommands.java's writeFields),
independently of the package under test: `int32 type, int32 length`
big-endian, Java DataOutput fields, `writeUTF` strings (u16 length +
modified UTF-8, encoded here by its own small writer), UUIDs as two int64s.

Also the helpers to decode them (the fixture streams are in
pv_fixtures.py; what every protocol's tests use is in
tests/protocols/dissector_kit.py).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable

from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.base import DissectOptions, Item
from ripple_cli.protocols.pravega import PravegaDissector
from tests.protocols.dissector_kit import feed_all, messages, texts

DISSECTOR = PravegaDissector()
NEW_WRITER = -(1 << 63)
W1 = uuid.UUID("6f1c2b3a-0000-4000-8000-00000000a001")
W2 = uuid.UUID("6f1c2b3a-0000-4000-8000-00000000b002")
SEG = "examples/trades/0.#epoch.0"

# ------------------------------------------------------------ primitives


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


def boolean(b: bool | int) -> bytes:
    return bytes((int(b),))


def uid(u: uuid.UUID) -> bytes:
    msb, lsb = u.int >> 64, u.int & ((1 << 64) - 1)
    return struct.pack(">QQ", msb, lsb)


def java_utf(s: str) -> bytes:
    """Modified UTF-8 as DataOutputStream.writeUTF writes it (no length)."""
    out = bytearray()
    units = s.encode("utf-16-be", "surrogatepass")  # a non-BMP character as its surrogate pair
    for k in range(0, len(units), 2):
        (c,) = struct.unpack_from(">H", units, k)
        if 1 <= c <= 0x7F:
            out.append(c)
        elif c <= 0x7FF:
            out += bytes((0xC0 | c >> 6, 0x80 | c & 0x3F))
        else:
            out += bytes((0xE0 | c >> 12, 0x80 | c >> 6 & 0x3F, 0x80 | c & 0x3F))
    return bytes(out)


def utf(s: str | bytes) -> bytes:
    """writeUTF: u16 length, then the bytes (a str is encoded as Java does;
    bytes are written as given, to build odd strings)."""
    b = java_utf(s) if isinstance(s, str) else s
    return struct.pack(">H", len(b)) + b


def cmd(code: int, body: bytes, length: int | None = None) -> bytes:
    return i32(code) + i32(len(body) if length is None else length) + body


def event(payload: bytes) -> bytes:
    """An Event record: type 0, length, payload (PendingEvent)."""
    return cmd(0, payload)


# ------------------------------------------------------------ commands


def hello(high: int = 17, low: int = 5) -> bytes:
    return cmd(-127, i32(high) + i32(low))


def keep_alive() -> bytes:
    return cmd(100, b"")


def padding(n: int) -> bytes:
    return cmd(-1, bytes(n))


def partial_event(data: bytes) -> bytes:
    return cmd(-2, data)


def setup_append(rid: int, writer: uuid.UUID, segment: str | bytes, token: str = "") -> bytes:
    return cmd(1, i64(rid) + uid(writer) + utf(segment) + utf(token))


def append_setup(rid: int, segment: str, writer: uuid.UUID, last: int = NEW_WRITER) -> bytes:
    return cmd(2, i64(rid) + utf(segment) + uid(writer) + i64(last))


def append_block(writer: uuid.UUID, data: bytes) -> bytes:
    # The length covers the writer id and the streamed data.
    return cmd(3, uid(writer) + data)


def append_block_end(writer: uuid.UUID, whole: int, data: bytes, num: int, last: int, rid: int | None = None) -> bytes:
    body = uid(writer) + i32(whole) + i32(len(data)) + data + i32(num) + i64(last)
    return cmd(4, body + (i64(rid) if rid is not None else b""))


def conditional_append(writer: uuid.UUID, number: int, expected: int, payload: bytes, rid: int | None = None) -> bytes:
    body = uid(writer) + i64(number) + i64(expected) + event(payload)
    return cmd(5, body + (i64(rid) if rid is not None else b""))


def data_appended(writer: uuid.UUID, number: int, *optional: int) -> bytes:
    """optional: previousEventNumber, requestId, currentSegmentWriteOffset (a prefix)."""
    return cmd(7, uid(writer) + i64(number) + b"".join(i64(x) for x in optional))


def conditional_check_failed(writer: uuid.UUID, number: int, rid: int | None = None) -> bytes:
    return cmd(8, uid(writer) + i64(number) + (i64(rid) if rid is not None else b""))


def read_segment(segment: str, offset: int, suggested: int, token: str = "", rid: int | None = None) -> bytes:
    body = utf(segment) + i64(offset) + i32(suggested) + utf(token)
    return cmd(9, body + (i64(rid) if rid is not None else b""))


def segment_read(
    segment: str, offset: int, data: bytes, at_tail: bool = False, end: bool = False, rid: int | None = None
) -> bytes:
    body = utf(segment) + i64(offset) + boolean(at_tail) + boolean(end) + i32(len(data)) + data
    return cmd(10, body + (i64(rid) if rid is not None else b""))


def wrong_host(rid: int, segment: str, host: str, trace: str | None = None) -> bytes:
    return cmd(50, i64(rid) + utf(segment) + utf(host) + (utf(trace) if trace is not None else b""))


def _seg_error(code: int, rid: int, segment: str, trace: str | None, offset: int | None) -> bytes:
    body = i64(rid) + utf(segment)
    if trace is not None:
        body += utf(trace)
        if offset is not None:
            body += i64(offset)
    return cmd(code, body)


def segment_is_sealed(rid: int, segment: str, trace: str | None = None, offset: int | None = None) -> bytes:
    return _seg_error(51, rid, segment, trace, offset)


def no_such_segment(rid: int, segment: str, trace: str | None = None, offset: int | None = None) -> bytes:
    return _seg_error(53, rid, segment, trace, offset)


def segment_already_exists(rid: int, segment: str, trace: str | None = None) -> bytes:
    return cmd(52, i64(rid) + utf(segment) + (utf(trace) if trace is not None else b""))


def segment_is_truncated(
    rid: int, segment: str, start: int, trace: str | None = None, offset: int | None = None
) -> bytes:
    body = i64(rid) + utf(segment) + i64(start)
    if trace is not None:
        body += utf(trace) + (i64(offset) if offset is not None else b"")
    return cmd(56, body)


def operation_unsupported(rid: int, name: str, trace: str | None = None) -> bytes:
    return cmd(57, i64(rid) + utf(name) + (utf(trace) if trace is not None else b""))


def invalid_event_number(writer: uuid.UUID, rid: int, trace: str | None = None, number: int | None = None) -> bytes:
    body = uid(writer) + i64(rid)
    if trace is not None:
        body += utf(trace) + (i64(number) if number is not None else b"")
    return cmd(55, body)


def auth_token_check_failed(rid: int, trace: str | None = None, code: int | None = None) -> bytes:
    body = i64(rid)
    if trace is not None:
        body += utf(trace) + (i32(code) if code is not None else b"")
    return cmd(60, body)


def error_message(rid: int, segment: str, message: str, code: int) -> bytes:
    return cmd(61, i64(rid) + utf(segment) + utf(message) + i32(code))


def conditional_block_end(writer: uuid.UUID, number: int, expected: int, data: bytes, rid: int) -> bytes:
    return cmd(89, uid(writer) + i64(number) + i64(expected) + i32(len(data)) + data + i64(rid))


# ------------------------------------------------------------ decoding helpers


def decode(
    chunks: Iterable[bytes], options: DissectOptions | None = None, from_client: bool | None = None
) -> list[Item]:
    return feed_all(DISSECTOR.stream(options or DissectOptions(), from_client), chunks)


def lines(data: bytes) -> list[bytes]:
    return texts(decode([data]))


def analyze(data: bytes) -> list[Problem]:
    """The analyzer's problems for a raw transcript (both sides in one file)."""
    analyzer = DISSECTOR.analyzer(DissectOptions())
    assert analyzer is not None
    out: list[Problem] = []
    for m in messages(decode([data])):
        out += analyzer.observe(None, m)
    return out + analyzer.close()
