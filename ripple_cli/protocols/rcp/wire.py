"""The byte layouts of rstmdb RCP: the binary frame and the JSON line.

A frame is an 18-byte header (all big-endian), a header extension of
`header_len` bytes, then `payload_len` bytes of UTF-8 JSON:

    0  magic "RCPX"     4  version (1)    6  flags        8  header_len
    10 payload_len      14 crc32c of the payload only (0 without CRC_PRESENT)

A JSON line is the JSON text and a newline; the server writes them instead
of frames once a HELLO negotiated the `jsonl` wire mode.

Everything here is pure: bytes in, values out, and back.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from ripple_cli.codec.crc import crc32c

MAGIC = b"RCPX"
VERSION = 1
HEADER = struct.Struct(">4sHHHII")
HEADER_SIZE = HEADER.size  # 18
MAX_PAYLOAD = 16 << 20  # rstmdb-protocol's MAX_PAYLOAD_SIZE: 16 MiB
MAX_LENGTH = 0xFFFF_FFFF  # payload_len is 32 bits
MAX_EXTENSION = 0xFFFF  # header_len is 16 bits
DEFAULT_PORT = 7401

CRC_PRESENT = 0x0001
COMPRESSED = 0x0002  # defined and validated upstream, set by no peer
STREAM = 0x0004
END_STREAM = 0x0008
VALID_FLAGS = 0x000F  # any other bit makes the real decoder reject the frame

# Bit order is the order of the names in the text form.
FLAG_NAMES: tuple[tuple[int, str], ...] = (
    (CRC_PRESENT, "CRC_PRESENT"),
    (COMPRESSED, "COMPRESSED"),
    (STREAM, "STREAM"),
    (END_STREAM, "END_STREAM"),
)
FLAG_BITS = {name: bit for bit, name in FLAG_NAMES}


@dataclass(frozen=True, slots=True)
class Header:
    version: int
    flags: int
    header_len: int
    payload_len: int
    crc: int

    @property
    def size(self) -> int:
        """Bytes of the whole frame on the wire."""
        return HEADER_SIZE + self.header_len + self.payload_len


@dataclass(frozen=True, slots=True)
class RcpFrame:
    """A frame as it was on the wire: every field as written, so that
    `write_frame` gives back the same bytes (a wrong CRC included)."""

    version: int
    flags: int
    crc: int  # the field as written
    extension: bytes
    payload: bytes

    @property
    def size(self) -> int:
        return HEADER_SIZE + len(self.extension) + len(self.payload)

    @property
    def computed_crc(self) -> int:
        """What a writer puts in the CRC field: the payload's CRC32C when
        CRC_PRESENT is set, else 0."""
        return crc32c(self.payload) if self.flags & CRC_PRESENT else 0

    @property
    def crc_ok(self) -> bool | None:
        """Whether the CRC matches (None: CRC_PRESENT clear, nothing to check)."""
        return crc32c(self.payload) == self.crc if self.flags & CRC_PRESENT else None


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> Header:
    """The header at `pos` (the caller checked that 18 bytes are there and
    that they start with the magic)."""
    _magic, version, flags, header_len, payload_len, crc = HEADER.unpack_from(buf, pos)
    return Header(version, flags, header_len, payload_len, crc)


def read_frame(buf: bytes | bytearray | memoryview, pos: int, header: Header) -> RcpFrame:
    """The whole frame at `pos` (the caller checked that it is all there)."""
    ext_at = pos + HEADER_SIZE
    payload_at = ext_at + header.header_len
    return RcpFrame(
        header.version,
        header.flags,
        header.crc,
        bytes(buf[ext_at:payload_at]),
        bytes(buf[payload_at : payload_at + header.payload_len]),
    )


def write_frame(frame: RcpFrame) -> bytes:
    return (
        HEADER.pack(MAGIC, frame.version, frame.flags, len(frame.extension), len(frame.payload), frame.crc)
        + frame.extension
        + frame.payload
    )


def flag_names(flags: int) -> list[str]:
    """The names of the defined bits that are set, in bit order."""
    return [name for bit, name in FLAG_NAMES if flags & bit]


def plausible_header(header: Header, max_payload: int) -> bool:
    """A header a real writer could have sent: what resynchronisation and
    detection accept as the start of a frame."""
    return header.version == VERSION and not header.flags & ~VALID_FLAGS and header.payload_len <= max_payload


def valid_frame_at(
    buf: bytes | bytearray | memoryview,
    pos: int,
    end: int,
    max_payload: int,
    crc: Callable[[int, int], int] | None = None,
) -> RcpFrame | bool:
    """Is there a frame at `pos` sure enough to resynchronise on?  The
    frame, or False when there is none, or True when more bytes would tell.
    Sure enough: magic, version 1, known flags, a payload within the bound,
    and a matching CRC (or, without CRC_PRESENT, a zero CRC field and a
    payload that starts like a JSON object).  `crc(start, stop)` gives the
    CRC32C of `buf[start:stop]` where the caller has a cheaper way than
    hashing the range (crcrange.py: resync tries every candidate, each
    claiming a payload of its own); the payload is copied only once the
    frame is known to be one."""
    have = end - pos
    head = bytes(buf[pos : pos + min(4, have)])
    if not MAGIC.startswith(head):
        return False
    if have < HEADER_SIZE:
        return True
    header = read_header(buf, pos)
    if not plausible_header(header, max_payload):
        return False
    if have < header.size:
        return True
    start, stop = pos + HEADER_SIZE + header.header_len, pos + header.size
    if header.flags & CRC_PRESENT:
        computed = crc(start, stop) if crc is not None else crc32c(memoryview(buf)[start:stop])
        if computed != header.crc:
            return False
    elif header.crc != 0 or start == stop or buf[start] != 0x7B:  # "{"
        return False
    return read_frame(buf, pos, header)
