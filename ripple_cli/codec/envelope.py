"""The Ripple envelope (reference section 1): a 59-byte header, the payload,
and a CRC-32C over both."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ripple_cli.codec.crc import crc32c
from ripple_cli.codec.errors import EncodeError

MAGIC = b"RIPP"
VERSION = 1
HEADER = struct.Struct("<4sBBBqq32si")
HEADER_SIZE = HEADER.size  # 59
CRC = struct.Struct("<I")
OVERHEAD = HEADER_SIZE + CRC.size  # 63
FINGERPRINT_SIZE = 32
DEFAULT_MAX_PAYLOAD = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Frame:
    """One whole envelope whose CRC checked out; the payload not yet decoded."""

    offset: int  # of the magic, in the stream
    version: int
    tag: int
    flags: int
    seq: int
    time_ns: int
    fingerprint: bytes  # trailing NULs removed
    payload: bytes
    crc: int

    @property
    def size(self) -> int:
        return OVERHEAD + len(self.payload)


def pad_fingerprint(fingerprint: bytes) -> bytes:
    if len(fingerprint) > FINGERPRINT_SIZE:
        raise EncodeError(f"schema fingerprint is {len(fingerprint)} bytes, at most {FINGERPRINT_SIZE} fit")
    return fingerprint.ljust(FINGERPRINT_SIZE, b"\0")


def build_envelope(
    tag: int, seq: int, time_ns: int, fingerprint: bytes, payload: bytes, flags: int = 0, version: int = VERSION
) -> bytes:
    for name, value, lo, hi in (
        ("seq", seq, -(1 << 63), (1 << 63) - 1),
        ("time_ns", time_ns, -(1 << 63), (1 << 63) - 1),
        ("message type", tag, 0, 255),
        ("flags", flags, 0, 255),
        ("version", version, 0, 255),
    ):
        if not lo <= value <= hi:
            raise EncodeError(f"{name} {value} out of range")
    if len(payload) > 0x7FFFFFFF:
        raise EncodeError("payload too large for the envelope's length field")
    head = HEADER.pack(MAGIC, version, tag, flags, seq, time_ns, pad_fingerprint(fingerprint), len(payload))
    body = head + payload
    return body + CRC.pack(crc32c(body))


def frame_bytes(frame: Frame) -> bytes:
    """The envelope exactly as it was read."""
    head = HEADER.pack(
        MAGIC,
        frame.version,
        frame.tag,
        frame.flags,
        frame.seq,
        frame.time_ns,
        pad_fingerprint(frame.fingerprint),
        len(frame.payload),
    )
    return head + frame.payload + CRC.pack(frame.crc)
