"""Is this the start of a Pravega connection direction?

Both sides open with Hello (`FFFFFF81 00000008`, then two small version
numbers), which decides it.  A capture entered part-way is accepted only
when its first bytes are a whole command of a documented layout that
decodes cleanly and the header after it is sane as well; or, for a first
command too long to wait for, a data-carrying command whose header and
leading fields hold.  Anything else is NO: a false YES would misdecode a
connection of another protocol.
"""

from __future__ import annotations

from ripple_cli.protocols.base import Detection
from ripple_cli.protocols.pravega.commands import (
    APPEND_BLOCK,
    APPEND_BLOCK_END,
    CONDITIONAL_APPEND,
    CONDITIONAL_BLOCK_END,
    HEADER_SIZE,
    HELLO,
    MAX_BODY,
    SEGMENT_READ,
    TOP_LEVEL,
)
from ripple_cli.protocols.pravega.wire import HEADER, LAYOUTS, reads_cleanly

DETECT_WINDOW = 64 << 10  # a first command longer than this is judged on its header and first fields
MAX_VERSION = 0xFFFF  # wire versions are small numbers (17 in 2025)
# First commands that may well be longer than the window (appended or read data).
_BIG = frozenset((APPEND_BLOCK, APPEND_BLOCK_END, CONDITIONAL_APPEND, CONDITIONAL_BLOCK_END, SEGMENT_READ))


def detect(head: bytes) -> Detection:
    if len(head) < 4:
        prefix = head[:3]
        return (
            Detection.MORE if b"\x00\x00\x00".startswith(prefix) or b"\xff\xff\xff".startswith(prefix) else Detection.NO
        )
    code = int.from_bytes(head[:4], "big", signed=True)
    if code not in TOP_LEVEL:
        return Detection.NO
    if len(head) < HEADER_SIZE:
        return Detection.MORE
    _, length = HEADER.unpack_from(head, 0)
    if not 0 <= length <= MAX_BODY:
        return Detection.NO
    if code == HELLO:
        if length != 8:
            return Detection.NO
        if len(head) < 16:
            return Detection.MORE
        high, low = HEADER.unpack_from(head, 8)
        return Detection.YES if 0 <= low <= MAX_VERSION and 0 <= high <= MAX_VERSION else Detection.NO
    if code not in LAYOUTS:
        return Detection.NO
    size = HEADER_SIZE + length
    if size > DETECT_WINDOW:
        if code not in _BIG:
            return Detection.NO
        if len(head) < DETECT_WINDOW:
            return Detection.MORE
        return Detection.YES if _leading_fields(code, length, head[HEADER_SIZE:DETECT_WINDOW]) else Detection.NO
    if len(head) < size + HEADER_SIZE:
        return Detection.MORE
    if not reads_cleanly(code, head[HEADER_SIZE:size]):
        return Detection.NO
    code2, length2 = HEADER.unpack_from(head, size)
    return Detection.YES if code2 in TOP_LEVEL and 0 <= length2 <= MAX_BODY else Detection.NO


def _i32(b: bytes, at: int) -> int:
    return int.from_bytes(b[at : at + 4], "big", signed=True)


def _leading_fields(code: int, length: int, body: bytes) -> bool:
    """The first part of a long body: the fields before its data must read,
    the data's length must agree with the header's, and the data must start
    like an Event record."""
    event_start = b"\x00\x00\x00\x00"
    if code == APPEND_BLOCK:  # writer id, then the streamed records
        return body[16:20] == event_start
    if code == APPEND_BLOCK_END:  # id, whole size, data length, data, count, last, (request id)
        return _i32(body, 16) >= 0 and _i32(body, 20) in (length - 36, length - 44) and body[24:28] == event_start
    if code == CONDITIONAL_APPEND:  # id, number, offset, event record, (request id)
        return body[32:36] == event_start and _i32(body, 36) in (length - 40, length - 48)
    if code == CONDITIONAL_BLOCK_END:  # id, number, offset, data length, data, request id
        return _i32(body, 32) == length - 44 and body[36:40] == event_start
    # SEGMENT_READ: segment, offset, two booleans, data length, data, (request id)
    at = 2 + int.from_bytes(body[:2], "big") + 8
    n = _i32(body, at + 2)
    fixed = at + 6
    return (
        len(body) >= fixed + 4
        and body[at] in (0, 1)
        and body[at + 1] in (0, 1)
        and n in (length - fixed, length - fixed - 8)
        and body[fixed : fixed + 4] == event_start
    )
