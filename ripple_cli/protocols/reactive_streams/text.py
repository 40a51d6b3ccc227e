"""Reactive Streams messages as text and JSON, and text back to messages.

The canonical text is sexplib's record style under the protocol's name:
    (reactive-streams(Request((subscriber 1)(demand 5))))
Integers are decimal atoms, Strings and bytes are atoms (quoted and escaped
by the writer when needed), Id lists and packed elements are lists.  Every
field that the bytes need is in the text; `OnNextLastPart`'s `parts` and
`element` are what the decoder joined from the parts before it, shown but
not read back (its bytes are the part's own).
"""

from __future__ import annotations

from typing import Any

from ripple_cli.protocols.base import EncodeError, json_bytes
from ripple_cli.protocols.reactive_streams.wire import (
    BY_CLASS,
    BY_NAME,
    LONG_MAX,
    U64_MAX,
    ClientHello,
    Goodbye,
    GoodbyeAck,
    Kind,
    Message,
    OnError,
    OnNext,
    OnNextLastPart,
    OnNextPacked,
    OnNextPart,
    OnSubscribe,
    Raw,
    Request,
    ServerHello,
    Subscribe,
)
from ripple_cli.sexp.tree import Sexp
from ripple_cli.sexp.write import to_string

PROTOCOL = "reactive-streams"
HEAD = PROTOCOL.encode("ascii")


def _int_atom(v: int) -> bytes:
    return str(v).encode("ascii")


def to_sexp(message: Message) -> Sexp:
    layout = BY_CLASS[type(message)]
    record: list[Sexp] = []
    for field, kind in layout.fields:
        v = getattr(message, field)
        if v is None:  # a derived field the decoder could not compute
            continue
        if kind in (Kind.IDS,):
            value: Sexp = [_int_atom(x) for x in v]
        elif kind is Kind.PACKED:
            value = list(v)
        elif isinstance(v, int):
            value = _int_atom(v)
        else:
            value = v
        record.append([field.encode("ascii"), value])
    return [HEAD, [layout.name.encode("ascii"), record]]


def to_json(message: Message) -> dict[str, Any]:
    """The typed JSON fields (ProtoMessage.fields), in wire order."""
    layout = BY_CLASS[type(message)]
    out: dict[str, Any] = {}
    for field, kind in layout.fields:
        v = getattr(message, field)
        if v is None:
            continue
        if kind is Kind.IDS:
            out[field] = list(v)
        elif kind is Kind.PACKED:
            out[field] = [json_bytes(e) for e in v]
        elif isinstance(v, bytes):
            out[field] = json_bytes(v)
        else:
            out[field] = v
    return out


def _short(b: bytes, limit: int = 40) -> str:
    """An atom as the text shows it, cut for the summary column (only its
    head is escaped: an element may be megabytes)."""
    s = to_string(b[:limit]).decode("utf-8", "replace")
    return s if len(s) <= limit else s[: limit - 1] + "\u2026"


def _demand(n: int) -> str:
    return "unbounded" if n >= LONG_MAX else str(n)


def summary(message: Message) -> str:
    """One short line for the table."""
    m = message
    who = f"#{m.subscriber}" if hasattr(m, "subscriber") else ""
    match m:
        case ClientHello() | ServerHello():
            ext = ",".join(str(x) for x in m.extensions) or "none"
            return f"version {m.version} extensions {ext}"
        case Subscribe():
            return f"{who} to {_short(m.publisher)} initial demand {_demand(m.initial_demand)}"
        case Request():
            return f"{who} +{_demand(m.demand)}"
        case OnSubscribe():
            return f"{who} elements of {m.element_size} bytes" if m.element_size else f"{who} elements length-prefixed"
        case OnNext():
            return f"{who} {len(m.element)} bytes {_short(m.element)}"
        case OnNextPacked():
            return f"{who} {m.count} x {m.element_size} bytes"
        case OnNextPart():
            return f"{who} element {m.element_id} part of {len(m.data)} bytes"
        case OnNextLastPart():
            text = f"{who} element {m.element_id} last part of {len(m.data)} bytes"
            if m.element is not None:
                text += f": {m.parts} parts, {len(m.element)} bytes joined"
            return text
        case OnError():
            return f"{who} {_short(m.error)}"
        case Goodbye():
            return _short(m.reason)
        case GoodbyeAck():
            return _short(m.message)
        case Raw():
            return f"{len(m.data)} bytes not read as messages"
    return who  # Cancel, OnComplete


# ---------------------------------------------------------------- text -> message


def _atom(field: str, v: Sexp) -> bytes:
    if not isinstance(v, bytes):
        raise EncodeError(f"field {field}: expected an atom, got a list")
    return v


def _int(field: str, v: Sexp, limit: int) -> int:
    a = _atom(field, v)
    if not a.isdigit():
        raise EncodeError(f"field {field}: {a.decode('utf-8', 'replace')!r} is not a decimal integer")
    digits = a.lstrip(b"0") or b"0"
    if len(digits) > len(str(limit)):  # before int(): Python refuses over 4,300 digits
        raise EncodeError(f"field {field}: a number of {len(digits)} digits is above {limit}")
    n = int(digits)
    if n > limit:
        raise EncodeError(f"field {field}: {n} is above {limit}")
    return n


def _list(field: str, v: Sexp) -> list[Sexp]:
    if not isinstance(v, list):
        raise EncodeError(f"field {field}: expected a list, got an atom")
    return v


# Fields the draft gives a default (`initialDemand: Long = 0`, `elementSize:
# varint = 0`), and the hello's extensions (none): they may be left out.
_DEFAULTS: dict[str, object] = {"initial_demand": 0, "element_size": 0, "extensions": ()}


def from_sexp(tree: Sexp) -> Message:
    """`(reactive-streams(Type((field value)...)))` -> the message.  Raises
    EncodeError naming what is wrong."""
    if not (isinstance(tree, list) and len(tree) == 2 and tree[0] == HEAD):
        raise EncodeError(f"expected ({PROTOCOL}(Type((field value)...)))")
    body = tree[1]
    if not (isinstance(body, list) and len(body) == 2 and isinstance(body[0], bytes)):
        raise EncodeError("expected one message constructor with its record: (Type((field value)...))")
    name = body[0].decode("utf-8", "replace")
    layout = BY_NAME.get(name)
    if layout is None:
        raise EncodeError(f"unknown message type {name!r} (known: {', '.join(BY_NAME)})")
    given: dict[str, Sexp] = {}
    for item in _list(name, body[1]):
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], bytes)):
            raise EncodeError(f"{name}: expected record fields (name value)")
        field = item[0].decode("utf-8", "replace")
        if field in given:
            raise EncodeError(f"{name}: field {field} given twice")
        given[field] = item[1]
    known = {f for f, _k in layout.fields}
    unknown = sorted(set(given) - known)
    if unknown:
        raise EncodeError(f"{name}: unknown field {unknown[0]} (fields: {', '.join(f for f, _ in layout.fields)})")
    values: dict[str, object] = {}
    count: int | None = None
    for field, kind in layout.fields:
        if field not in given:
            if kind is Kind.DERIVED or kind is Kind.COUNT:
                continue
            if field in _DEFAULTS:
                values[field] = _DEFAULTS[field]
                continue
            raise EncodeError(f"{name}: missing field {field}")
        v = given[field]
        if kind is Kind.VERSION:
            values[field] = _int(field, v, 255)
        elif kind in (Kind.ID, Kind.VARINT, Kind.SIZE):
            values[field] = _int(field, v, U64_MAX)
        elif kind is Kind.LONG:
            values[field] = _int(field, v, LONG_MAX)
        elif kind in (Kind.STRING, Kind.BYTES, Kind.ELEMENT):
            values[field] = _atom(field, v)
        elif kind is Kind.IDS:
            values[field] = tuple(_int(field, x, U64_MAX) for x in _list(field, v))
        elif kind is Kind.COUNT:
            count = _int(field, v, U64_MAX)
        elif kind is Kind.PACKED:
            values[field] = tuple(_atom(field, x) for x in _list(field, v))
        elif kind is Kind.DERIVED:
            # Shown by decode, not part of the bytes: checked for form only.
            if field == "parts":
                _int(field, v, U64_MAX)
            else:
                _atom(field, v)
    if count is not None and count != len(values.get("elements", ())):  # type: ignore[arg-type]
        raise EncodeError(f"{name}: count {count} but {len(values['elements'])} elements")  # type: ignore[arg-type]
    return layout.cls(**values)  # type: ignore[arg-type]
