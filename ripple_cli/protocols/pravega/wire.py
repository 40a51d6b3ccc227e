"""Command bodies: the documented layouts, read and written field by field.

A layout is the field list of a command in wire order (the order of its
`writeFields`).  Reading follows the Java `readFrom` methods: big-endian
integers, booleans as one byte, UUIDs as two int64s, strings as `writeUTF`
(u16 length + modified UTF-8), optional trailing fields read only when
enough bytes remain (`in.available()`), and bytes past the last field
ignored by Java but kept here (`Command.trailing`) so that writing gives
the same bytes back.  A body that does not fit its layout is kept whole
as `Command.raw` with the reason, like a code without a documented layout.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field, replace
from enum import Enum

from ripple_cli.codec.problems import Severity
from ripple_cli.protocols.note import Note
from ripple_cli.protocols.pravega import mutf8
from ripple_cli.protocols.pravega import records as rec
from ripple_cli.protocols.pravega.commands import (
    APPEND_BLOCK,
    APPEND_BLOCK_END,
    APPEND_SETUP,
    AUTH_TOKEN_CHECK_FAILED,
    COMMANDS,
    CONDITIONAL_APPEND,
    CONDITIONAL_BLOCK_END,
    CONDITIONAL_CHECK_FAILED,
    DATA_APPENDED,
    ERROR_MESSAGE,
    HEADER_SIZE,
    HELLO,
    INVALID_EVENT_NUMBER,
    KEEP_ALIVE,
    NO_SUCH_SEGMENT,
    OPERATION_UNSUPPORTED,
    PADDING,
    PARTIAL_EVENT,
    READ_SEGMENT,
    SEGMENT_ALREADY_EXISTS,
    SEGMENT_IS_SEALED,
    SEGMENT_IS_TRUNCATED,
    SEGMENT_READ,
    SETUP_APPEND,
    WRONG_HOST,
    name_of,
)
from ripple_cli.terminal.words import plural

HEADER = struct.Struct(">ii")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U16 = struct.Struct(">H")


class Kind(Enum):
    I32 = "i32"
    I64 = "i64"
    BOOL = "bool"  # one byte; Java reads any non-zero byte as true
    UUID = "uuid"  # most significant int64, then least significant
    UTF = "utf"  # writeUTF: u16 length + modified UTF-8
    BLOB = "blob"  # i32 length + that many bytes of event records
    REST = "rest"  # every byte left, as event records (AppendBlock's streamed data)
    RAW = "raw"  # every byte left, uninterpreted (PartialEvent)
    EVENT = "event"  # one record with its own 8-byte header (ConditionalAppend)


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    kind: Kind
    optional: bool = False  # read only when enough bytes remain


def _f(name: str, kind: Kind) -> Field:
    return Field(name, kind)


def _opt(name: str, kind: Kind) -> Field:
    return Field(name, kind, optional=True)


I32, I64, BOOL, UUID, UTF = Kind.I32, Kind.I64, Kind.BOOL, Kind.UUID, Kind.UTF

# The layouts ripple decodes.  Every other code of the table is shown with
# its body as raw bytes.  Padding has its own reader (a count of zeros).
LAYOUTS: dict[int, tuple[Field, ...]] = {
    HELLO: (_f("high_version", I32), _f("low_version", I32)),
    KEEP_ALIVE: (),
    PARTIAL_EVENT: (_f("data", Kind.RAW),),
    SETUP_APPEND: (_f("request_id", I64), _f("writer_id", UUID), _f("segment", UTF), _f("delegation_token", UTF)),
    APPEND_SETUP: (_f("request_id", I64), _f("segment", UTF), _f("writer_id", UUID), _f("last_event_number", I64)),
    APPEND_BLOCK: (_f("writer_id", UUID), _f("data", Kind.REST)),
    APPEND_BLOCK_END: (
        _f("writer_id", UUID),
        _f("size_of_whole_events", I32),
        _f("data", Kind.BLOB),
        _f("num_events", I32),
        _f("last_event_number", I64),
        _opt("request_id", I64),
    ),
    CONDITIONAL_APPEND: (
        _f("writer_id", UUID),
        _f("event_number", I64),
        _f("expected_offset", I64),
        _f("event", Kind.EVENT),
        _opt("request_id", I64),
    ),
    DATA_APPENDED: (
        _f("writer_id", UUID),
        _f("event_number", I64),
        _opt("previous_event_number", I64),
        _opt("request_id", I64),
        _opt("current_segment_write_offset", I64),
    ),
    CONDITIONAL_CHECK_FAILED: (_f("writer_id", UUID), _f("event_number", I64), _opt("request_id", I64)),
    READ_SEGMENT: (
        _f("segment", UTF),
        _f("segment_offset", I64),
        _f("suggested_length", I32),
        _f("delegation_token", UTF),
        _opt("request_id", I64),
    ),
    SEGMENT_READ: (
        _f("segment", UTF),
        _f("segment_offset", I64),
        _f("at_tail", BOOL),
        _f("end_of_segment", BOOL),
        _f("data", Kind.BLOB),
        _opt("request_id", I64),
    ),
    WRONG_HOST: (_f("request_id", I64), _f("segment", UTF), _f("correct_host", UTF), _opt("server_stack_trace", UTF)),
    SEGMENT_IS_SEALED: (
        _f("request_id", I64),
        _f("segment", UTF),
        _opt("server_stack_trace", UTF),
        _opt("segment_offset", I64),
    ),
    SEGMENT_ALREADY_EXISTS: (_f("request_id", I64), _f("segment", UTF), _opt("server_stack_trace", UTF)),
    NO_SUCH_SEGMENT: (
        _f("request_id", I64),
        _f("segment", UTF),
        _opt("server_stack_trace", UTF),
        _opt("segment_offset", I64),
    ),
    INVALID_EVENT_NUMBER: (
        _f("writer_id", UUID),
        _f("request_id", I64),
        _opt("server_stack_trace", UTF),
        _opt("event_number", I64),
    ),
    SEGMENT_IS_TRUNCATED: (
        _f("request_id", I64),
        _f("segment", UTF),
        _f("start_offset", I64),
        _opt("server_stack_trace", UTF),
        _opt("segment_offset", I64),
    ),
    OPERATION_UNSUPPORTED: (_f("request_id", I64), _f("operation_name", UTF), _opt("server_stack_trace", UTF)),
    AUTH_TOKEN_CHECK_FAILED: (_f("request_id", I64), _opt("server_stack_trace", UTF), _opt("error_code", I32)),
    ERROR_MESSAGE: (_f("request_id", I64), _f("segment", UTF), _f("message", UTF), _f("error_code", I32)),
    CONDITIONAL_BLOCK_END: (
        _f("writer_id", UUID),
        _f("event_number", I64),
        _f("expected_offset", I64),
        _f("data", Kind.BLOB),
        _f("request_id", I64),
    ),
}

KINDS_BY_NAME: dict[str, Kind] = {f.name: f.kind for layout in LAYOUTS.values() for f in layout}


@dataclass(frozen=True, slots=True)
class MString:
    """A string field: its exact bytes and what Java makes of them."""

    raw: bytes
    decoded: mutf8.ModifiedUtf8

    @classmethod
    def of_text(cls, text: str) -> MString:
        raw = mutf8.encode(text)
        return cls(raw, mutf8.ModifiedUtf8(text, True, True))

    @classmethod
    def of_raw(cls, raw: bytes) -> MString:
        return cls(raw, mutf8.decode(raw))

    @property
    def text(self) -> str:
        return self.decoded.text


@dataclass(frozen=True, slots=True)
class Data:
    """A data field: its bytes and the records they split into."""

    raw: bytes
    records: tuple[rec.Record, ...]
    continuation: int = 0  # leading bytes that finish an event of an earlier message

    @classmethod
    def of(cls, raw: bytes, continuation: int = 0) -> Data:
        return cls(raw, tuple(rec.split(raw, continuation)), min(continuation, len(raw)))


Value = int | uuid.UUID | MString | Data | rec.Record | bytes


@dataclass(frozen=True, slots=True)
class Command:
    """One wire command.  `values` holds the fields present, in wire order;
    `raw` is set instead when the body is shown as bytes (a code without a
    documented layout, an unknown code, or a body that does not fit)."""

    code: int
    values: dict[str, Value] = field(default_factory=dict)
    trailing: bytes = b""
    raw: bytes | None = None
    padding: int | None = None  # Padding: the count of zero bytes
    notes: tuple[Note, ...] = ()
    # Shown, never written: the records an earlier message began and this
    # one's data finishes (AppendBlockEnd after a PartialEvent, SegmentRead
    # after a read that ended inside an event).  Set by the stream decoder.
    completes: tuple[rec.Record, ...] | None = None

    @property
    def name(self) -> str:
        return name_of(self.code)

    def with_data(self, data: Data) -> Command:
        values = dict(self.values)
        values["data"] = data
        return replace(self, values=values)


class BodyError(ValueError):
    """A body that does not fit its layout."""


class _Reader:
    def __init__(self, body: bytes) -> None:
        self.body = body
        self.pos = 0

    @property
    def left(self) -> int:
        return len(self.body) - self.pos

    def take(self, n: int, what: str) -> bytes:
        if n > self.left:
            raise BodyError(f"{what} needs {n} bytes at byte {self.pos}, {self.left} left")
        out = self.body[self.pos : self.pos + n]
        self.pos += n
        return out

    def i32(self, what: str) -> int:
        return int(_I32.unpack(self.take(4, what))[0])

    def i64(self, what: str) -> int:
        return int(_I64.unpack(self.take(8, what))[0])


def _present(f: Field, r: _Reader) -> bool:
    if not f.optional:
        return True
    if f.kind is Kind.UTF:
        return r.left > 0  # `in.available() > 0 ? in.readUTF() : ""`
    need = 4 if f.kind is Kind.I32 else 8
    return r.left >= need  # `in.available() >= Long.BYTES ? in.readLong() : -1`


def read_body(code: int, body: bytes) -> Command:
    """The command of type `code` with this body (never raises)."""
    if code == PADDING:
        if any(body):
            return Command(
                code, raw=body, notes=(Note("nonzero_padding", "Padding with non-zero bytes", Severity.WARNING),)
            )
        return Command(code, padding=len(body))
    layout = LAYOUTS.get(code)
    if layout is None:
        if code not in COMMANDS:
            return Command(code, raw=body, notes=(Note("unknown_type", f"unknown type code {code}, shown raw"),))
        return Command(code, raw=body)
    try:
        return _read_layout(code, layout, body)
    except BodyError as e:
        return Command(code, raw=body, notes=(Note("bad_body", f"{name_of(code)} body does not decode: {e}"),))


_FIXED = {Kind.I32: 4, Kind.I64: 8, Kind.BOOL: 1, Kind.UUID: 16}


def reads_cleanly(code: int, buf: bytes | bytearray, start: int = 0, end: int | None = None) -> bool:
    """Whether buf[start:end] is a body of a documented layout that reads
    with nothing odd about it (read_body would give no raw body, no
    trailing bytes, no error): evidence that these bytes are that command,
    for detection and resynchronisation.

    Why not read_body: a resynchronising decoder asks this of every
    candidate header in a damaged region, each claiming a body up to the
    frame limit; copying and splitting each claimed body made the scan
    quadratic (a 1 MiB region took half a minute).  Here only the fields'
    lengths are followed and strings (at most 64 KiB, and never holding the
    zero bytes every header starts with) are checked; nothing is copied."""
    layout = LAYOUTS.get(code)
    if layout is None:
        return False
    end = len(buf) if end is None else end
    at = start
    fixed = _FIXED
    for f in layout:
        left = end - at
        if f.optional and not (left > 0 if f.kind is Kind.UTF else left >= fixed[f.kind]):
            break
        k = f.kind
        if k in fixed:
            at += fixed[k]
        elif k is Kind.UTF:
            if left < 2:
                return False
            (n,) = _U16.unpack_from(buf, at)
            if n > left - 2 or not mutf8.decode(bytes(buf[at + 2 : at + 2 + n])).valid:
                return False
            at += 2 + n
        elif k is Kind.BLOB or k is Kind.EVENT:
            size = 4 if k is Kind.BLOB else HEADER_SIZE
            if left < size:
                return False
            n = _I32.unpack_from(buf, at + size - 4)[0]
            if n < 0:
                return False
            at += size + n
        else:  # REST, RAW: every byte left
            at = end
        if at > end:
            return False
    return at == end


def _read_layout(code: int, layout: tuple[Field, ...], body: bytes) -> Command:
    r = _Reader(body)
    values: dict[str, Value] = {}
    notes: list[Note] = []
    for f in layout:
        if not _present(f, r):
            break
        values[f.name] = _read_value(f, r, notes)
    trailing = body[r.pos :]
    if trailing:
        notes.append(
            Note(
                "trailing_bytes",
                f"{plural(len(trailing), 'byte')} after the last field of {name_of(code)} (ignored by Java)",
                Severity.WARNING,
            )
        )
    return Command(code, values, trailing, notes=tuple(notes))


def _read_value(f: Field, r: _Reader, notes: list[Note]) -> Value:
    k = f.kind
    if k is Kind.I32:
        return r.i32(f.name)
    if k is Kind.I64:
        return r.i64(f.name)
    if k is Kind.BOOL:
        b = r.take(1, f.name)[0]
        if b > 1:
            notes.append(Note("bad_bool", f"{f.name} is the byte {b}, not 0 or 1 (Java reads true)", Severity.WARNING))
        return b
    if k is Kind.UUID:
        return uuid.UUID(bytes=r.take(16, f.name))
    if k is Kind.UTF:
        (n,) = _U16.unpack(r.take(2, f.name))
        s = MString.of_raw(r.take(n, f.name))
        if not s.decoded.canonical:
            sev = Severity.WARNING if s.decoded.valid else Severity.ERROR
            verdict = "Java reads it, but it is" if s.decoded.valid else "not modified UTF-8:"
            notes.append(Note("bad_string", f"{f.name} {verdict} {s.decoded.error}", sev))
        return s
    if k is Kind.BLOB:
        n = r.i32(f.name + " length")
        if n < 0:
            raise BodyError(f"{f.name} length {n} is negative")
        return Data.of(r.take(n, f.name))
    if k is Kind.REST:
        return Data.of(r.take(r.left, f.name))
    if k is Kind.RAW:
        return r.take(r.left, f.name)
    # Kind.EVENT: ConditionalAppend reads the type, the length, then the bytes.
    start = r.pos
    _code, n = HEADER.unpack(r.take(HEADER_SIZE, f.name + " header"))
    if n < 0:
        raise BodyError(f"{f.name} length {n} is negative")
    r.take(n, f.name)
    (record,) = rec.split(r.body[start : r.pos])
    return record


# ------------------------------------------------------------------ writing


def write_body(cmd: Command) -> bytes:
    if cmd.raw is not None:
        return cmd.raw
    if cmd.code == PADDING:
        return bytes(cmd.padding or 0)
    layout = LAYOUTS[cmd.code]
    out = bytearray()
    for f in layout:
        if f.name not in cmd.values:
            continue  # absent optional field (encode checks the result reads back)
        _write_value(f.kind, cmd.values[f.name], out)
    out += cmd.trailing
    return bytes(out)


def write_command(cmd: Command) -> bytes:
    body = write_body(cmd)
    return HEADER.pack(cmd.code, len(body)) + body


def _write_value(k: Kind, v: Value, out: bytearray) -> None:
    if k is Kind.I32:
        assert isinstance(v, int)
        out += _I32.pack(v)
    elif k is Kind.I64:
        assert isinstance(v, int)
        out += _I64.pack(v)
    elif k is Kind.BOOL:
        assert isinstance(v, int)
        out.append(v)
    elif k is Kind.UUID:
        assert isinstance(v, uuid.UUID)
        out += v.bytes
    elif k is Kind.UTF:
        assert isinstance(v, MString)
        out += _U16.pack(len(v.raw)) + v.raw
    elif k is Kind.BLOB:
        assert isinstance(v, Data)
        out += _I32.pack(len(v.raw)) + v.raw
    elif k is Kind.REST:
        assert isinstance(v, Data)
        out += v.raw
    elif k is Kind.RAW:
        assert isinstance(v, bytes)
        out += v
    else:
        assert isinstance(v, rec.Record)
        out += v.raw
