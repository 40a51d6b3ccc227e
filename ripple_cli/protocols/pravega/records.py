"""The records inside appended and read data.

A writer wraps each event's payload as an Event record (`00000000`, u32
length, payload); the segment stores those records as they came, so the
data of an AppendBlock, of an AppendBlockEnd, of a ConditionalBlockEnd
and of a SegmentRead is a run of them.  A Java writer's batched block ends
with one PartialEvent (-2) or Padding (-1) command instead, the rest of a
cut event coming in the AppendBlockEnd's data; a read returns a byte
range, so its data may end inside an event and the next read of the same
segment goes on with the rest.

`split` cuts data into `Record`s that cover every byte, so joining their
bytes gives the data back.  Whether a record is legal where it stands is
the analyzer's business, not this module's.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ripple_cli.protocols.pravega.commands import EVENT, HEADER_SIZE, PADDING, PARTIAL_EVENT

_HEADER = struct.Struct(">ii")

# Record kinds, as the text names them.
EVENT_KIND = "Event"  # a type-0 record: the payload of one event
PARTIAL_KIND = "PartialEvent"  # a -2 command: the first part of an event cut at a block's end
PADDING_KIND = "Padding"  # a -1 command of zero bytes filling a block
COMMAND_KIND = "Command"  # any other whole record (a wrong type code, non-zero padding)
CONTINUATION_KIND = "Continuation"  # leading bytes that finish an event begun in an earlier message
FRAGMENT_KIND = "Fragment"  # trailing bytes that are not a whole record


@dataclass(frozen=True, slots=True)
class Record:
    kind: str
    offset: int  # in the data
    raw: bytes  # every byte of the record, header included
    type_code: int | None = None  # the header's type, when there is a whole header

    @property
    def size(self) -> int:
        return len(self.raw)

    @property
    def body(self) -> bytes:
        """The bytes after the header (the event's payload for an Event)."""
        if self.kind in (CONTINUATION_KIND, FRAGMENT_KIND):
            return self.raw
        return self.raw[HEADER_SIZE:]


def split(data: bytes, continuation: int = 0) -> list[Record]:
    """The records of `data`, whose first `continuation` bytes finish an
    event begun earlier.  Bytes that do not make a whole record end the
    list as one Fragment (a header with a negative length included)."""
    out: list[Record] = []
    n = len(data)
    p = min(continuation, n)
    if p:
        out.append(Record(CONTINUATION_KIND, 0, data[:p]))
    while p < n:
        if n - p < HEADER_SIZE:
            out.append(Record(FRAGMENT_KIND, p, data[p:]))
            break
        code, length = _HEADER.unpack_from(data, p)
        end = p + HEADER_SIZE + length
        if length < 0 or end > n:
            out.append(Record(FRAGMENT_KIND, p, data[p:], code))
            break
        raw = data[p:end]
        out.append(Record(_kind(code, raw), p, raw, code))
        p = end
    return out


def _kind(code: int, raw: bytes) -> str:
    if code == EVENT:
        return EVENT_KIND
    if code == PARTIAL_EVENT:
        return PARTIAL_KIND
    if code == PADDING and not any(raw[HEADER_SIZE:]):
        return PADDING_KIND
    return COMMAND_KIND


def whole_size(head: bytes) -> int | None:
    """The size of the record that starts with `head` (at least its 8-byte
    header), or None when the header cannot start a record."""
    if len(head) < HEADER_SIZE:
        return None
    _code, length = _HEADER.unpack_from(head, 0)
    return HEADER_SIZE + length if length >= 0 else None


def event_record(payload: bytes) -> bytes:
    return _HEADER.pack(EVENT, len(payload)) + payload


def command_record(code: int, body: bytes) -> bytes:
    return _HEADER.pack(code, len(body)) + body
