"""Lumberjack frames as bytes: the five frame types, their readers and writers.

Every frame is an ASCII version byte (`1` or `2`), an ASCII type byte, then
a body whose layout depends on the type (all integers unsigned 32-bit
big-endian).  There is no overall length: the reader must know each type's
layout to find where a frame ends, and a `D` frame's length is only known
once all its pairs are read.  Pure: bytes in, frames out, and back.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

U32 = struct.Struct(">I")
SEQ_LEN = struct.Struct(">II")  # J: seq, payload length; D: seq, pair count
U32_MAX = 0xFFFFFFFF

VERSION_BYTES = {0x31: 1, 0x32: 2}  # ASCII '1', '2': a digit, not the value 1 or 2
VERSION_BYTE = {1: 0x31, 2: 0x32}

WINDOW, DATA, JSON, COMPRESSED, ACK = 0x57, 0x44, 0x4A, 0x43, 0x41  # W D J C A
TYPE_LETTERS = {WINDOW: "W", DATA: "D", JSON: "J", COMPRESSED: "C", ACK: "A"}
WRITER_TYPES = frozenset((WINDOW, DATA, JSON, COMPRESSED))  # sent by the writer (client)
HEADER = 2  # version and type bytes


@dataclass(frozen=True, slots=True)
class Window:
    """`W`: the writer announces the next batch's size (v2), or its window (v1)."""

    version: int
    count: int


@dataclass(frozen=True, slots=True)
class Ack:
    """`A`: the reader acknowledges events."""

    version: int
    seq: int


@dataclass(frozen=True, slots=True)
class Data:
    """`D`: one event as key/value byte strings, in wire order (keys may repeat)."""

    version: int
    seq: int
    pairs: tuple[tuple[bytes, bytes], ...]


@dataclass(frozen=True, slots=True)
class Json:
    """`J`: one event as a JSON document (kept as its exact bytes)."""

    version: int
    seq: int
    payload: bytes


@dataclass(frozen=True, slots=True)
class Compressed:
    """`C`: zlib bytes holding a stream of whole frames (kept compressed: zlib
    implementations do not produce the same bytes, so only the original
    bytes re-encode exactly)."""

    version: int
    payload: bytes


LumberjackFrame = Window | Ack | Data | Json | Compressed


def letter(frame: LumberjackFrame) -> str:
    return {Window: "W", Ack: "A", Data: "D", Json: "J", Compressed: "C"}[type(frame)]


def is_writer(frame: LumberjackFrame) -> bool:
    return not isinstance(frame, Ack)


def encode_frame(frame: LumberjackFrame) -> bytes:
    v = VERSION_BYTE[frame.version]
    if isinstance(frame, Window):
        return bytes((v, WINDOW)) + U32.pack(frame.count)
    if isinstance(frame, Ack):
        return bytes((v, ACK)) + U32.pack(frame.seq)
    if isinstance(frame, Json):
        return bytes((v, JSON)) + SEQ_LEN.pack(frame.seq, len(frame.payload)) + frame.payload
    if isinstance(frame, Compressed):
        return bytes((v, COMPRESSED)) + U32.pack(len(frame.payload)) + frame.payload
    out = [bytes((v, DATA)), SEQ_LEN.pack(frame.seq, len(frame.pairs))]
    for key, value in frame.pairs:
        out += [U32.pack(len(key)), key, U32.pack(len(value)), value]
    return b"".join(out)


# ------------------------------------------------------------------ reading


@dataclass(frozen=True, slots=True)
class Need:
    """Not enough bytes yet: the frame needs at least `total` bytes from its
    start (a lower bound for `D`, whose end is found pair by pair)."""

    total: int


@dataclass(frozen=True, slots=True)
class Invalid:
    """No frame can start here: `kind` is a problem kind, `detail` why."""

    kind: str
    detail: str


@dataclass(slots=True)
class DataScan:
    """How far a `D` frame has been read, so that a frame arriving in many
    chunks is read once, not again from its start at every chunk."""

    pos: int = HEADER + 8  # index from the frame's start of the next pair
    used: int = 0  # pair bytes so far (counted against the payload bound)
    pairs: list[tuple[bytes, bytes]] = field(default_factory=list)


Read = tuple[LumberjackFrame, int] | Need | Invalid


def read_frame(buf: bytes | bytearray, p: int, n: int, max_payload: int, scan: DataScan | None = None) -> Read:
    """The frame starting at `buf[p]` (bytes up to `n` are valid): the frame
    and its end index, or `Need`, or `Invalid`.  A `D` frame read in part
    keeps its progress in `scan` (pass the same object again)."""
    if n - p < HEADER:
        if n > p and buf[p] not in VERSION_BYTES:
            return _bad_version(buf[p])
        return Need(HEADER)
    version = VERSION_BYTES.get(buf[p])
    if version is None:
        return _bad_version(buf[p])
    kind = buf[p + 1]
    if kind in (WINDOW, ACK):
        if n - p < 6:
            return Need(6)
        value = U32.unpack_from(buf, p + 2)[0]
        return (Window(version, value) if kind == WINDOW else Ack(version, value)), p + 6
    if kind == COMPRESSED:
        if n - p < 6:
            return Need(6)
        length = U32.unpack_from(buf, p + 2)[0]
        if length > max_payload:
            return Invalid("bad_length", f"C frame length {length} above the maximum {max_payload} (--max-payload)")
        if n - p < 6 + length:
            return Need(6 + length)
        return Compressed(version, bytes(buf[p + 6 : p + 6 + length])), p + 6 + length
    if kind == JSON:
        if n - p < 10:
            return Need(10)
        seq, length = SEQ_LEN.unpack_from(buf, p + 2)
        if length > max_payload:
            return Invalid("bad_length", f"J frame length {length} above the maximum {max_payload} (--max-payload)")
        if n - p < 10 + length:
            return Need(10 + length)
        return Json(version, seq, bytes(buf[p + 10 : p + 10 + length])), p + 10 + length
    if kind == DATA:
        return _read_data(buf, p, n, version, max_payload, scan)
    return Invalid("bad_frame", f"unknown frame type 0x{kind:02x} (expected W, D, J, C or A)")


def _bad_version(b: int) -> Invalid:
    return Invalid("bad_frame", f"bad version byte 0x{b:02x} (expected 0x31 or 0x32, ASCII 1 or 2)")


def _read_data(buf: bytes | bytearray, p: int, n: int, version: int, max_payload: int, scan: DataScan | None) -> Read:
    if n - p < 10:
        return Need(10)
    seq, count = SEQ_LEN.unpack_from(buf, p + 2)
    # Each pair takes at least 8 bytes (two lengths): a count that cannot
    # fit in the payload bound is refused before anything is read.
    if count > max_payload // 8:
        return Invalid("bad_length", f"D frame with {count} pairs: more than {max_payload} bytes (--max-payload)")
    st = scan if scan is not None else DataScan()
    while len(st.pairs) < count:
        q = p + st.pos
        if n - q < 4:
            return Need(st.pos + 4)
        klen = U32.unpack_from(buf, q)[0]
        if st.used + 8 + klen > max_payload:
            return Invalid("bad_length", f"D frame key length {klen}: pairs above {max_payload} bytes (--max-payload)")
        if n - q < 8 + klen:
            return Need(st.pos + 8 + klen)
        vlen = U32.unpack_from(buf, q + 4 + klen)[0]
        if st.used + 8 + klen + vlen > max_payload:
            return Invalid(
                "bad_length", f"D frame value length {vlen}: pairs above {max_payload} bytes (--max-payload)"
            )
        end = q + 8 + klen + vlen
        if n < end:
            return Need(st.pos + 8 + klen + vlen)
        st.pairs.append((bytes(buf[q + 4 : q + 4 + klen]), bytes(buf[q + 8 + klen : end])))
        st.pos += 8 + klen + vlen
        st.used += 8 + klen + vlen
    return Data(version, seq, tuple(st.pairs)), p + st.pos
