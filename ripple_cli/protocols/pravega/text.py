"""Commands <-> their canonical s-expressions, JSON fields and summaries.

The text of a command is `(pravega(Name((field value)...)))`, sexplib's
record style, the fields in wire order and only those present on the wire
(an optional trailing field Java did not find is left out, so that the
text says exactly which were sent).  These conventions are ripple's:

- integers are decimal atoms; booleans `true`/`false` (another byte value
  as its decimal number); UUIDs in their 8-4-4-4-12 form;
- strings are their text as a UTF-8 atom; a string whose bytes are not
  exactly what Java's `writeUTF` writes for its text is `(raw "bytes")`;
- data (appended or read bytes) is the list of its records:
  `(Event payload)`, `(PartialEvent bytes)`, `(Padding n)`,
  `(Command((type t)(body bytes)))`, `(Continuation bytes)`,
  `(Fragment bytes)` (see records.py);
- a body shown as bytes is `(body "...")` (an `Unknown` code adds
  `(type n)`); bytes after the last field are `(trailing "...")`;
- `completes_partial_event` (AppendBlockEnd) and `completes_event`
  (SegmentRead) show the event(s) an earlier message began; they come from
  the stream, and `encode` ignores them.
"""

from __future__ import annotations

import uuid
from typing import Any

from ripple_cli.protocols.base import EncodeError, json_bytes
from ripple_cli.protocols.pravega import mutf8
from ripple_cli.protocols.pravega import records as rec
from ripple_cli.protocols.pravega.commands import (
    APPEND_BLOCK_END,
    CODES,
    HEADER_SIZE,
    MAX_BODY,
    NEW_WRITER,
    PADDING,
    SEGMENT_READ,
    UNKNOWN,
    name_of,
)
from ripple_cli.protocols.pravega.wire import (
    LAYOUTS,
    Command,
    Data,
    Kind,
    MString,
    Value,
)
from ripple_cli.sexp.tree import Sexp, parse_int

PROTOCOL = b"pravega"
TRUE, FALSE = b"true", b"false"
DERIVED = {APPEND_BLOCK_END: "completes_partial_event", SEGMENT_READ: "completes_event"}
_DERIVED_NAMES = frozenset(DERIVED.values())


def _int(n: int) -> bytes:
    return str(n).encode("ascii")


# ------------------------------------------------------------ to the text


def to_sexp(cmd: Command) -> Sexp:
    name = name_of(cmd.code).encode("ascii")
    fields: list[Sexp] = []
    if cmd.raw is not None:
        if name == UNKNOWN.encode():
            fields.append([b"type", _int(cmd.code)])
        fields.append([b"body", cmd.raw])
    elif cmd.code == PADDING:
        fields.append([b"length", _int(cmd.padding or 0)])
    else:
        kinds = {f.name: f.kind for f in LAYOUTS[cmd.code]}
        for key, value in cmd.values.items():
            fields.append([key.encode("ascii"), _value_sexp(kinds[key], value)])
        if cmd.trailing:
            fields.append([b"trailing", cmd.trailing])
        if cmd.completes is not None and cmd.code in DERIVED:
            fields.append([DERIVED[cmd.code].encode("ascii"), [record_sexp(r) for r in cmd.completes]])
    return [PROTOCOL, [name, fields]]


def _value_sexp(kind: Kind, v: Value) -> Sexp:
    if kind is Kind.BOOL:
        assert isinstance(v, int)
        return TRUE if v == 1 else FALSE if v == 0 else _int(v)
    if isinstance(v, int):
        return _int(v)
    if isinstance(v, uuid.UUID):
        return str(v).encode("ascii")
    if isinstance(v, MString):
        return mutf8.to_atom(v.text) if v.decoded.canonical else [b"raw", v.raw]
    if isinstance(v, Data):
        return [record_sexp(r) for r in v.records]
    if isinstance(v, rec.Record):
        return record_sexp(v)
    return v


def record_sexp(r: rec.Record) -> Sexp:
    if r.kind == rec.PADDING_KIND:
        return [b"Padding", _int(len(r.body))]
    if r.kind == rec.COMMAND_KIND:
        return [b"Command", [[b"type", _int(r.type_code or 0)], [b"body", r.body]]]
    return [r.kind.encode("ascii"), r.body]


# ------------------------------------------------------------ JSON fields


def to_fields(cmd: Command) -> dict[str, Any]:
    out: dict[str, Any] = {"type_code": cmd.code}
    if cmd.raw is not None:
        out["body"] = json_bytes(cmd.raw)
        return out
    if cmd.code == PADDING:
        out["length"] = cmd.padding or 0
        return out
    kinds = {f.name: f.kind for f in LAYOUTS[cmd.code]}
    for key, value in cmd.values.items():
        out[key] = _value_json(kinds[key], value)
    if cmd.trailing:
        out["trailing"] = json_bytes(cmd.trailing)
    if cmd.completes is not None and cmd.code in DERIVED:
        out[DERIVED[cmd.code]] = [record_json(r) for r in cmd.completes]
    return out


def _value_json(kind: Kind, v: Value) -> Any:
    if kind is Kind.BOOL:
        assert isinstance(v, int)
        return v == 1 if v in (0, 1) else v
    if isinstance(v, int):
        return v
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, MString):
        if v.decoded.valid:
            return json_bytes(mutf8.to_atom(v.text))
        return json_bytes(v.raw)
    if isinstance(v, Data):
        return {
            "length": len(v.raw),
            "event_count": sum(1 for r in v.records if r.kind == rec.EVENT_KIND),
            "records": [record_json(r) for r in v.records],
        }
    if isinstance(v, rec.Record):
        return record_json(v)
    return json_bytes(v)


def record_json(r: rec.Record) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": r.kind, "offset": r.offset, "size": r.size}
    if r.type_code is not None and r.kind in (rec.COMMAND_KIND, rec.FRAGMENT_KIND):
        out["type"] = r.type_code
    if r.kind == rec.PADDING_KIND:
        out["length"] = len(r.body)
    else:
        out["data"] = json_bytes(r.body)
    return out


# ------------------------------------------------------------ summaries


def _short(u: Value | None) -> str:
    return str(u)[:8] if isinstance(u, uuid.UUID) else "?"


def _n(v: Value | None) -> str:
    if v == NEW_WRITER:
        return "none"
    return str(v) if isinstance(v, int) else "?"


def _s(v: Value | None) -> str:
    return v.text if isinstance(v, MString) and v.decoded.valid else "?"


def _data(v: Value | None) -> str:
    if not isinstance(v, Data):
        return ""
    events = sum(1 for r in v.records if r.kind == rec.EVENT_KIND)
    parts = [f"{events} event{'s' if events != 1 else ''} in {len(v.raw)} bytes"]
    for r in v.records:
        if r.kind not in (rec.EVENT_KIND,):
            parts.append(f"{r.kind} {r.size}")
    return ", ".join(parts)


def summary(cmd: Command) -> str:
    v = cmd.values
    name = name_of(cmd.code)
    if cmd.raw is not None:
        what = f"type {cmd.code}" if name == UNKNOWN else name
        return f"{what}: {len(cmd.raw)} bytes shown raw"
    if cmd.code == PADDING:
        return f"{cmd.padding} bytes of padding"
    match name:
        case "Hello":
            return f"versions {_n(v.get('low_version'))}..{_n(v.get('high_version'))}"
        case "KeepAlive":
            return "keep-alive"
        case "PartialEvent":
            raw = v.get("data")
            return f"{len(raw) if isinstance(raw, bytes) else 0} bytes of a cut event"
        case "SetupAppend":
            return f"writer {_short(v.get('writer_id'))} to {_s(v.get('segment'))} (request {_n(v.get('request_id'))})"
        case "AppendSetup":
            last = _n(v.get("last_event_number"))
            return f"writer {_short(v.get('writer_id'))} on {_s(v.get('segment'))}, last event {last}"
        case "AppendBlock":
            return f"writer {_short(v.get('writer_id'))}: {_data(v.get('data'))}"
        case "AppendBlockEnd":
            num = v.get("num_events")
            text = (
                f"writer {_short(v.get('writer_id'))}: {_n(num)} event{'' if num == 1 else 's'} up to "
                f"#{_n(v.get('last_event_number'))}, whole {_n(v.get('size_of_whole_events'))} bytes"
            )
            data = v.get("data")
            if isinstance(data, Data) and data.raw:
                text += f"; {_data(data)}"
            return text
        case "ConditionalAppend" | "ConditionalBlockEnd":
            return (
                f"writer {_short(v.get('writer_id'))}: event #{_n(v.get('event_number'))} "
                f"at offset {_n(v.get('expected_offset'))}"
            )
        case "DataAppended":
            text = f"writer {_short(v.get('writer_id'))}: acked up to #{_n(v.get('event_number'))}"
            if "previous_event_number" in v:
                text += f" (from #{_n(v.get('previous_event_number'))})"
            return text
        case "ConditionalCheckFailed" | "InvalidEventNumber":
            return f"writer {_short(v.get('writer_id'))}: event #{_n(v.get('event_number'))}"
        case "ReadSegment":
            return (
                f"{_s(v.get('segment'))} at {_n(v.get('segment_offset'))}, up to {_n(v.get('suggested_length'))} bytes"
            )
        case "SegmentRead":
            flags = [f for f in ("at_tail", "end_of_segment") if v.get(f)]
            text = f"{_s(v.get('segment'))} at {_n(v.get('segment_offset'))}: {_data(v.get('data'))}"
            return text + "".join(f", {f}" for f in flags)
        case "WrongHost":
            return f"{_s(v.get('segment'))}: go to {_s(v.get('correct_host'))}"
        case "OperationUnsupported":
            return f"{_s(v.get('operation_name'))} (request {_n(v.get('request_id'))})"
        case "ErrorMessage":
            return f"{_s(v.get('segment'))}: {_s(v.get('message'))} (code {_n(v.get('error_code'))})"
        case "AuthTokenCheckFailed":
            return f"request {_n(v.get('request_id'))} (code {_n(v.get('error_code', -1))})"
    segment = v.get("segment")
    return f"{_s(segment)} (request {_n(v.get('request_id'))})" if segment else name


# ------------------------------------------------------------ from the text


def _atom(x: Sexp, what: str) -> bytes:
    if not isinstance(x, bytes):
        raise EncodeError(f"{what}: expected an atom, found a list")
    return x


def _list(x: Sexp, what: str) -> list[Sexp]:
    if not isinstance(x, list):
        raise EncodeError(f"{what}: expected a list, found the atom {x!r}")
    return x


def _parse_int(x: Sexp, what: str, bits: int) -> int:
    a = _atom(x, what)
    try:
        n = parse_int(a.decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        raise EncodeError(f"{what}: not an integer: {a!r}") from None
    if not -(1 << (bits - 1)) <= n < (1 << (bits - 1)):
        raise EncodeError(f"{what}: {n} does not fit in {bits} bits")
    return n


def _required(fields: dict[bytes, Sexp], key: bytes, what: str) -> Sexp:
    if key not in fields:
        raise EncodeError(f"{what}: missing field {key.decode('ascii')}")
    return fields.pop(key)


def _record_fields(x: Sexp, what: str) -> dict[bytes, Sexp]:
    out: dict[bytes, Sexp] = {}
    for item in _list(x, what):
        pair = _list(item, what)
        if len(pair) != 2 or not isinstance(pair[0], bytes):
            raise EncodeError(f"{what}: expected (name value) pairs")
        if pair[0] in out:
            raise EncodeError(f"{what}: field {pair[0].decode('ascii', 'replace')} given twice")
        out[pair[0]] = pair[1]
    return out


def from_sexp(tree: Sexp) -> Command:
    """The command a text describes (EncodeError when it describes none)."""
    top = _list(tree, "pravega message")
    if len(top) != 2 or top[0] != PROTOCOL:
        raise EncodeError("expected (pravega(Name(fields...)))")
    body = _list(top[1], "pravega message")
    if len(body) != 2:
        raise EncodeError("expected (pravega(Name(fields...)))")
    name = _atom(body[0], "command name").decode("ascii", "replace")
    fields = _record_fields(body[1], name)
    if name == UNKNOWN:
        code = _parse_int(_required(fields, b"type", name), "Unknown type", 32)
        if code in CODES.values():
            raise EncodeError(f"type {code} is {name_of(code)}, not Unknown")
    elif name in CODES:
        code = CODES[name]
    else:
        raise EncodeError(f"unknown command name {name}")
    if b"body" in fields:
        raw = _atom(fields.pop(b"body"), f"{name} body")
        _no_more(fields, name)
        return Command(code, raw=raw)
    if name == UNKNOWN:
        raise EncodeError("Unknown needs a (body ...) field")
    if code == PADDING:
        n = _parse_int(_required(fields, b"length", name), "Padding length", 32)
        _no_more(fields, name)
        if n < 0:
            raise EncodeError("Padding length is negative")
        if n > MAX_BODY:  # not 2 GiB of zeros in memory for a frame no reader takes
            raise EncodeError(f"Padding length {n} is above a command's largest body, {MAX_BODY} bytes")
        return Command(code, padding=n)
    layout = LAYOUTS.get(code)
    if layout is None:
        raise EncodeError(f"{name} has no documented layout: give its bytes as (body ...)")
    values: dict[str, Value] = {}
    for f in layout:
        key = f.name.encode("ascii")
        if key not in fields:
            if not f.optional:
                raise EncodeError(f"{name}: missing field {f.name}")
            continue
        values[f.name] = _parse_value(f.kind, fields.pop(key), f"{name}.{f.name}")
    trailing = _atom(fields.pop(b"trailing"), f"{name} trailing") if b"trailing" in fields else b""
    for derived in _DERIVED_NAMES:
        fields.pop(derived.encode("ascii"), None)
    _no_more(fields, name)
    return Command(code, values, trailing)


def _no_more(fields: dict[bytes, Sexp], name: str) -> None:
    if fields:
        extra = ", ".join(sorted(k.decode("ascii", "replace") for k in fields))
        raise EncodeError(f"{name}: unknown field(s) {extra}")


def _parse_value(kind: Kind, x: Sexp, what: str) -> Value:
    if kind is Kind.I32:
        return _parse_int(x, what, 32)
    if kind is Kind.I64:
        return _parse_int(x, what, 64)
    if kind is Kind.BOOL:
        if x == TRUE:
            return 1
        if x == FALSE:
            return 0
        n = _parse_int(x, what, 16)
        if not 0 <= n <= 255:
            raise EncodeError(f"{what}: a boolean is true, false or a byte value")
        return n
    if kind is Kind.UUID:
        try:
            return uuid.UUID(_atom(x, what).decode("ascii"))
        except (ValueError, UnicodeDecodeError):
            raise EncodeError(f"{what}: not a UUID: {x!r}") from None
    if kind is Kind.UTF:
        if isinstance(x, list):
            if len(x) != 2 or x[0] != b"raw":
                raise EncodeError(f"{what}: a string is an atom or (raw bytes)")
            s = MString.of_raw(_atom(x[1], what))
        else:
            try:
                s = MString.of_text(mutf8.from_atom(x))
            except UnicodeDecodeError:
                raise EncodeError(f"{what}: not UTF-8 text; give the exact bytes as (raw ...)") from None
        if len(s.raw) > 0xFFFF:
            raise EncodeError(f"{what}: {len(s.raw)} bytes, more than writeUTF's 65535")
        return s
    if kind in (Kind.BLOB, Kind.REST):
        recs = [parse_record(r, what) for r in _list(x, what)]
        raw = b"".join(recs)
        first = _list(x, what)[0] if x else None
        cont = len(recs[0]) if isinstance(first, list) and first and first[0] == b"Continuation" else 0
        return Data.of(raw, cont)
    if kind is Kind.RAW:
        return _atom(x, what)
    raw = parse_record(x, what)
    records = rec.split(raw) if raw else [rec.Record(rec.FRAGMENT_KIND, 0, b"")]
    if len(records) != 1:  # a Continuation or Fragment's bytes may read as several
        raise EncodeError(f"{what}: its bytes read as {len(records)} records, not the one record an event is")
    return records[0]


def parse_record(x: Sexp, what: str) -> bytes:
    """A record's text back to its bytes."""
    item = _list(x, what)
    if len(item) != 2:
        raise EncodeError(f"{what}: a record is (Kind value)")
    kind = _atom(item[0], what).decode("ascii", "replace")
    if kind == rec.EVENT_KIND:
        return rec.event_record(_atom(item[1], what))
    if kind == rec.PARTIAL_KIND:
        return rec.command_record(-2, _atom(item[1], what))
    if kind == rec.PADDING_KIND:
        n = _parse_int(item[1], f"{what} Padding", 32)
        if n < 0:
            raise EncodeError(f"{what}: Padding length is negative")
        if n > MAX_BODY - HEADER_SIZE:
            raise EncodeError(f"{what}: Padding length {n} is above a command's largest body, {MAX_BODY} bytes")
        return rec.command_record(PADDING, bytes(n))
    if kind == rec.COMMAND_KIND:
        fields = _record_fields(item[1], f"{what} Command")
        code = _parse_int(_required(fields, b"type", f"{what} Command"), f"{what} Command type", 32)
        body = _atom(_required(fields, b"body", f"{what} Command"), f"{what} Command body")
        _no_more(fields, f"{what} Command")
        return rec.command_record(code, body)
    if kind in (rec.CONTINUATION_KIND, rec.FRAGMENT_KIND):
        return _atom(item[1], what)
    raise EncodeError(f"{what}: unknown record kind {kind}")
