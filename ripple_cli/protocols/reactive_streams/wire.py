"""The bytes of the Reactive Streams network protocol, as ripple encodes them.

The draft (reactive-streams-io PR #4, never merged) fixes the messages and
their fields but no byte encoding.  What follows is RIPPLE'S CONVENTION,
not an upstream standard (man/ripple-reactive-streams.7 documents it):

- a message is a 1-byte type code (1..14, the draft's order; 0 and 15..255
  are not messages) followed by its fields, with no length header;
- `Id`, counts and `elementSize`: unsigned LEB128, minimal, at most 10
  bytes, at most 2^64-1;
- `Long` (demand): unsigned LEB128 of a non-negative int64, at most
  9 bytes; Long.MAX_VALUE (2^63-1) means unbounded (Reactive Streams 3.17);
- String and bytes: an unsigned LEB128 byte count, then the bytes (Strings
  are UTF-8);
- the hello's version: one byte (the draft's `version: byte`), 0 today;
  its extensions: an LEB128 count, then that many Ids.

`read_message` reads one message from a buffer, or says how many bytes it
still needs; `write_message` is its inverse.  Both are pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import ClassVar, Union

from ripple_cli.protocols.base import EncodeError

MAX_VARINT_BYTES = 10  # 10 x 7 bits hold a u64
U64_MAX = (1 << 64) - 1
LONG_MAX = (1 << 63) - 1  # Long.MAX_VALUE: demand this large is unbounded (RS rule 3.17)
MAX_EXTENSIONS = 1 << 16  # Ids in a hello: a bound on what one message may make ripple hold
MAX_PACKED = 1 << 16  # elements in one onNextPacked, for the same reason
# A message's bytes besides its one length-prefixed or fixed-size field: a
# type code and at most three varints.  A decoder buffers at most
# max_payload + HEADROOM bytes.
HEADROOM = 64


class Kind(StrEnum):
    """How a field is laid out on the wire (and shown as text)."""

    VERSION = "version"  # one byte
    ID = "id"  # LEB128 u64
    VARINT = "varint"  # LEB128 u64 (elementSize)
    LONG = "long"  # LEB128 of a non-negative int64
    STRING = "string"  # LEB128 length + UTF-8 bytes
    BYTES = "bytes"  # LEB128 length + bytes
    IDS = "ids"  # LEB128 count + that many Ids
    SIZE = "size"  # the subscription's elementSize: from the decoder's state, not on the wire
    ELEMENT = "element"  # bytes, length-prefixed when elementSize is 0, else exactly elementSize bytes
    COUNT = "count"  # LEB128 count of the packed elements
    PACKED = "packed"  # count x elementSize bytes, no prefix
    DERIVED = "derived"  # computed by the decoder (joined parts): never on the wire


@dataclass(frozen=True, slots=True)
class ClientHello:
    CODE: ClassVar[int] = 1
    version: int
    extensions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ServerHello:
    CODE: ClassVar[int] = 2
    version: int
    extensions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Subscribe:
    CODE: ClassVar[int] = 3
    publisher: bytes
    subscriber: int
    initial_demand: int


@dataclass(frozen=True, slots=True)
class Request:
    CODE: ClassVar[int] = 4
    subscriber: int
    demand: int


@dataclass(frozen=True, slots=True)
class Cancel:
    CODE: ClassVar[int] = 5
    subscriber: int


@dataclass(frozen=True, slots=True)
class OnSubscribe:
    CODE: ClassVar[int] = 6
    subscriber: int
    element_size: int


@dataclass(frozen=True, slots=True)
class OnNext:
    CODE: ClassVar[int] = 7
    subscriber: int
    element_size: int  # the subscription's, from its onSubscribe: 0 = length-prefixed element
    element: bytes


@dataclass(frozen=True, slots=True)
class OnComplete:
    CODE: ClassVar[int] = 8
    subscriber: int


@dataclass(frozen=True, slots=True)
class OnError:
    CODE: ClassVar[int] = 9
    subscriber: int
    error: bytes


@dataclass(frozen=True, slots=True)
class OnNextPacked:
    CODE: ClassVar[int] = 10
    subscriber: int
    element_size: int
    elements: tuple[bytes, ...]

    @property
    def count(self) -> int:
        return len(self.elements)


@dataclass(frozen=True, slots=True)
class OnNextPart:
    CODE: ClassVar[int] = 11
    subscriber: int
    element_id: int  # the draft's `element: Id`
    data: bytes


@dataclass(frozen=True, slots=True)
class OnNextLastPart:
    CODE: ClassVar[int] = 12
    subscriber: int
    element_id: int
    data: bytes
    # Derived by the decoder from the parts before it (None when unknown,
    # e.g. a message built from text): not on the wire.
    parts: int | None = None
    element: bytes | None = None


@dataclass(frozen=True, slots=True)
class Goodbye:
    CODE: ClassVar[int] = 13
    reason: bytes


@dataclass(frozen=True, slots=True)
class GoodbyeAck:
    CODE: ClassVar[int] = 14
    message: bytes


@dataclass(frozen=True, slots=True)
class Raw:
    """Bytes ripple could not read as messages (after an unknown type code,
    a gap, or a message breaking the convention).  Not a message type."""

    CODE: ClassVar[int] = -1
    data: bytes


Message = Union[
    ClientHello,
    ServerHello,
    Subscribe,
    Request,
    Cancel,
    OnSubscribe,
    OnNext,
    OnComplete,
    OnError,
    OnNextPacked,
    OnNextPart,
    OnNextLastPart,
    Goodbye,
    GoodbyeAck,
    Raw,
]


@dataclass(frozen=True)
class Layout:
    cls: type[Message]
    name: str  # the constructor in the text, and ProtoMessage.type
    fields: tuple[tuple[str, Kind], ...]  # in wire order

    @property
    def code(self) -> int:
        return self.cls.CODE


def _layout(cls: type[Message], *kinds: Kind) -> Layout:
    names = [f.name for f in fields(cls)]
    # OnNextPacked shows its count (a property) before the elements.
    if cls is OnNextPacked:
        names.insert(names.index("elements"), "count")
    assert len(names) == len(kinds), cls
    return Layout(cls, cls.__name__, tuple(zip(names, kinds, strict=True)))


K = Kind
LAYOUTS: tuple[Layout, ...] = (
    _layout(ClientHello, K.VERSION, K.IDS),
    _layout(ServerHello, K.VERSION, K.IDS),
    _layout(Subscribe, K.STRING, K.ID, K.LONG),
    _layout(Request, K.ID, K.LONG),
    _layout(Cancel, K.ID),
    _layout(OnSubscribe, K.ID, K.VARINT),
    _layout(OnNext, K.ID, K.SIZE, K.ELEMENT),
    _layout(OnComplete, K.ID),
    _layout(OnError, K.ID, K.STRING),
    _layout(OnNextPacked, K.ID, K.SIZE, K.COUNT, K.PACKED),
    _layout(OnNextPart, K.ID, K.ID, K.BYTES),
    _layout(OnNextLastPart, K.ID, K.ID, K.BYTES, K.DERIVED, K.DERIVED),
    _layout(Goodbye, K.STRING),
    _layout(GoodbyeAck, K.STRING),
)
BY_CODE: dict[int, Layout] = {lay.code: lay for lay in LAYOUTS}
RAW_LAYOUT = Layout(Raw, "Raw", (("data", K.BYTES),))
BY_NAME: dict[str, Layout] = {lay.name: lay for lay in (*LAYOUTS, RAW_LAYOUT)}
BY_CLASS: dict[type[Message], Layout] = {lay.cls: lay for lay in (*LAYOUTS, RAW_LAYOUT)}

# Who sends each message (ProtoMessage.direction): the subscriber's signals,
# the publisher's, and the connection's own (hellos, goodbyes: None).
SUBSCRIBER_SIGNALS = frozenset(("Subscribe", "Request", "Cancel"))
PUBLISHER_SIGNALS = frozenset(
    ("OnSubscribe", "OnNext", "OnComplete", "OnError", "OnNextPacked", "OnNextPart", "OnNextLastPart")
)


# ---------------------------------------------------------------- reading


class NeedMore(Exception):
    """The message is not complete: it needs at least `size` bytes from its start."""

    def __init__(self, size: int) -> None:
        self.size = size


class FramingLost(Exception):
    """Where the next message starts cannot be known (an unknown type code,
    a varint that never ends...): no length header to skip by."""

    def __init__(self, kind: str, detail: str) -> None:
        self.kind = kind
        self.detail = detail


class TooLong(Exception):
    """A field's length is above the bound: the message is skipped, not
    buffered.  It ends `end` bytes after its start, followed by
    `trailing` more varints (a Subscribe's Id and demand after its publisher)."""

    def __init__(self, layout: Layout, detail: str, end: int, trailing: int, values: dict[str, object]) -> None:
        self.layout = layout
        self.detail = detail
        self.end = end
        self.trailing = trailing
        self.values = values


@dataclass(frozen=True, slots=True)
class Soft:
    """A flaw of a message whose extent is still known: it is shown raw
    (bad_varint, bad_long) or as decoded with a warning (bad_utf8)."""

    kind: str
    detail: str


@dataclass(frozen=True, slots=True)
class Read:
    message: Message
    size: int
    flaws: tuple[Soft, ...]


def read_varint(buf: bytes | bytearray, p: int, end: int) -> tuple[int, int, bool]:
    """(value, position after it, minimal?) of the LEB128 at p; position -1
    when the buffer ends inside it.  Raises FramingLost when it runs past
    10 bytes: its end, and so the next message's start, is unknown."""
    value = 0
    for i in range(MAX_VARINT_BYTES):
        if p + i >= end:
            return 0, -1, False
        b = buf[p + i]
        value |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            return value, p + i + 1, i == 0 or b != 0
    raise FramingLost("bad_varint", f"a varint runs past {MAX_VARINT_BYTES} bytes")


def read_message(buf: bytes | bytearray, pos: int, end: int, sizes: Mapping[int, int], max_payload: int) -> Read:
    """The message at buf[pos:end].  `sizes` gives the elementSize of the
    subscriptions this direction publishes (from their onSubscribe).
    Raises NeedMore, FramingLost or TooLong."""
    code = buf[pos]
    layout = BY_CODE.get(code)
    if layout is None:
        raise FramingLost("unknown_type", f"unknown message type code {code}")
    name = layout.name
    p = pos + 1
    values: dict[str, object] = {}
    flaws: list[Soft] = []

    def varint(field: str, limit: int, kind: str) -> int:
        nonlocal p
        try:
            v, q, minimal = read_varint(buf, p, end)
        except FramingLost as e:
            raise FramingLost(e.kind, f"{name} {field}: {e.detail}") from None
        if q < 0:
            raise NeedMore(end - pos + 1)
        if not minimal:
            flaws.append(Soft("bad_varint", f"{name} {field} is a non-minimal varint ({q - p} bytes for {v})"))
        elif v > limit:
            what = "a Long" if kind == "bad_long" else "64 bits"
            flaws.append(Soft(kind, f"{name} {field} {v} does not fit {what}"))
        p = q
        return v

    def blob(field: str, n: int, trailing: int) -> bytes:
        nonlocal p
        if n > max_payload:
            raise TooLong(
                layout,
                f"{name} {field} of {n} bytes is above the maximum of {max_payload}",
                p - pos + n,
                trailing,
                values,
            )
        if p + n > end:
            raise NeedMore(p + n - pos)
        data = bytes(buf[p : p + n])
        p += n
        return data

    specs = layout.fields
    for k, (field, kind) in enumerate(specs):
        if kind is Kind.VERSION:
            if p >= end:
                raise NeedMore(p - pos + 1)
            values[field] = buf[p]
            p += 1
        elif kind is Kind.ID or kind is Kind.VARINT:
            values[field] = varint(field, U64_MAX, "bad_varint")
        elif kind is Kind.LONG:
            values[field] = varint(field, LONG_MAX, "bad_long")
        elif kind is Kind.STRING or kind is Kind.BYTES:
            n = varint(field, U64_MAX, "bad_varint")
            trailing = sum(1 for _f, kk in specs[k + 1 :] if kk in (Kind.ID, Kind.LONG, Kind.VARINT))
            data = blob(field, n, trailing)
            if kind is Kind.STRING:
                try:
                    data.decode("utf-8")
                except UnicodeDecodeError as e:
                    flaws.append(Soft("bad_utf8", f"{name} {field} is not UTF-8 (byte {e.start})"))
            values[field] = data
        elif kind is Kind.IDS:
            n = varint(field, U64_MAX, "bad_varint")
            if n > MAX_EXTENSIONS:
                raise FramingLost("bad_count", f"{name} lists {n} {field}, above ripple's bound of {MAX_EXTENSIONS}")
            ids = []
            for _ in range(n):
                ids.append(varint(field, U64_MAX, "bad_varint"))
                if p - pos > max_payload + HEADROOM:
                    raise FramingLost("bad_count", f"{name} {field} take more than {max_payload} bytes")
            values[field] = tuple(ids)
        elif kind is Kind.SIZE:
            subscriber = values["subscriber"]
            assert isinstance(subscriber, int)
            values[field] = sizes.get(subscriber, 0)
        elif kind is Kind.ELEMENT:
            size = values["element_size"]
            assert isinstance(size, int)
            n = varint(field, U64_MAX, "bad_varint") if size == 0 else size
            values[field] = blob(field, n, 0)
        elif kind is Kind.COUNT:
            size = values["element_size"]
            assert isinstance(size, int)
            count = varint(field, U64_MAX, "bad_varint")
            if count and not size:
                raise FramingLost(
                    "no_element_size",
                    f"{name} of {count} elements for subscriber {values['subscriber']}, whose elementSize is "
                    "not known (no onSubscribe with elementSize > 0 on this direction)",
                )
            if count > MAX_PACKED and count * size <= max_payload:
                raise TooLong(
                    layout,
                    f"{name} of {count} elements is above ripple's bound of {MAX_PACKED}",
                    p - pos + count * size,
                    0,
                    values,
                )
            values[field] = count
        elif kind is Kind.PACKED:
            size, packed = values["element_size"], values["count"]
            assert isinstance(size, int) and isinstance(packed, int)
            data = blob(field, packed * size, 0)
            values[field] = tuple(data[i : i + size] for i in range(0, len(data), size)) if size else ()
        # Kind.DERIVED: not on the wire
    values.pop("count", None)
    message = layout.cls(**values)  # type: ignore[arg-type]
    return Read(message, p - pos, tuple(flaws))


# ---------------------------------------------------------------- writing


def write_varint(value: int, out: bytearray) -> None:
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return


def write_message(message: Message) -> bytes:
    """The bytes of a message (Raw: its bytes as they are).  Raises
    EncodeError when a value does not fit ripple's convention."""
    layout = BY_CLASS[type(message)]
    if isinstance(message, Raw):
        return message.data
    name = layout.name
    out = bytearray((layout.code,))

    def varint(field: str, v: object, limit: int) -> None:
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= limit:
            raise EncodeError(f"{name} {field}: {v!r} is not an integer from 0 to {limit}")
        write_varint(v, out)

    def blob(field: str, v: object) -> bytes:
        if not isinstance(v, bytes):
            raise EncodeError(f"{name} {field}: {v!r} is not bytes")
        return v

    size = getattr(message, "element_size", 0)
    for field, kind in layout.fields:
        v = getattr(message, field)
        if kind is Kind.VERSION:
            if not isinstance(v, int) or not 0 <= v <= 255:
                raise EncodeError(f"{name} {field}: {v!r} is not a byte (0 to 255)")
            out.append(v)
        elif kind is Kind.ID or kind is Kind.VARINT:
            varint(field, v, U64_MAX)
        elif kind is Kind.LONG:
            varint(field, v, LONG_MAX)
        elif kind is Kind.STRING or kind is Kind.BYTES:
            data = blob(field, v)
            write_varint(len(data), out)
            out += data
        elif kind is Kind.IDS:
            write_varint(len(v), out)
            for x in v:
                varint(field, x, U64_MAX)
        elif kind is Kind.SIZE:  # the subscription's, not on the wire
            if not isinstance(v, int) or not 0 <= v <= U64_MAX:
                raise EncodeError(f"{name} {field}: {v!r} is not an integer from 0 to {U64_MAX}")
        elif kind is Kind.ELEMENT:
            data = blob(field, v)
            if size == 0:
                write_varint(len(data), out)
            elif len(data) != size:
                raise EncodeError(f"{name} element of {len(data)} bytes in a subscription of element_size {size}")
            out += data
        elif kind is Kind.COUNT:
            if v and not size:
                raise EncodeError(f"{name} of {v} elements needs an element_size above 0")
            write_varint(v, out)
        elif kind is Kind.PACKED:
            for i, element in enumerate(v):
                data = blob(f"{field}[{i}]", element)
                if len(data) != size:
                    raise EncodeError(f"{name} element {i} has {len(data)} bytes, not element_size {size}")
                out += data
    return bytes(out)
