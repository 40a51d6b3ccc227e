"""Lumberjack frames <-> their canonical s-expressions.

One constructor per frame type, in sexplib's record style, under the head
atom `lumberjack`:

    (lumberjack(Window((version 2)(count 3))))
    (lumberjack(Compressed((version 2)(zlib"x\\156..."))))
    (lumberjack(Json((version 2)(seq 1)(json"{\\"message\\":\\"hello\\"}")(in_compressed 6))))
    (lumberjack(Data((version 1)(seq 1)(pairs((line hello)(host vm1))))))
    (lumberjack(Ack((version 2)(seq 3))))

Every byte of a frame is in its text, so `frame_of_sexp` rebuilds the exact
bytes: JSON payloads and D pairs as the byte strings they are, and a `C`
frame's zlib bytes as they were sent (deflate implementations disagree, so
recompressing would not give them back).  A frame found inside a `C` frame
adds `(in_compressed OFFSET)`, the stream offset of the outermost `C` frame
holding it; its text encodes to that inner frame's own bytes.
"""

from __future__ import annotations

from ripple_cli.protocols.base import EncodeError
from ripple_cli.protocols.lumberjack.wire import U32_MAX, Ack, Compressed, Data, Json, LumberjackFrame, Window
from ripple_cli.sexp.tree import Sexp, parse_int
from ripple_cli.sexp.write import to_string

PROTOCOL = b"lumberjack"
NAMES: dict[type, str] = {Window: "Window", Ack: "Ack", Data: "Data", Json: "Json", Compressed: "Compressed"}
# The record fields of each constructor, in the order they are printed.
FIELDS: dict[str, tuple[str, ...]] = {
    "Window": ("version", "count"),
    "Ack": ("version", "seq"),
    "Data": ("version", "seq", "pairs"),
    "Json": ("version", "seq", "json"),
    "Compressed": ("version", "zlib"),
}
OPTIONAL = ("in_compressed",)


def _int(n: int) -> bytes:
    return b"%d" % n


def frame_sexp(frame: LumberjackFrame, in_compressed: int | None = None) -> Sexp:
    fields: list[Sexp] = [[b"version", _int(frame.version)]]
    if isinstance(frame, Window):
        fields.append([b"count", _int(frame.count)])
    elif isinstance(frame, Ack):
        fields.append([b"seq", _int(frame.seq)])
    elif isinstance(frame, Data):
        fields.append([b"seq", _int(frame.seq)])
        fields.append([b"pairs", [[k, v] for k, v in frame.pairs]])
    elif isinstance(frame, Json):
        fields.append([b"seq", _int(frame.seq)])
        fields.append([b"json", frame.payload])
    else:
        fields.append([b"zlib", frame.payload])
    if in_compressed is not None:
        fields.append([b"in_compressed", _int(in_compressed)])
    return [PROTOCOL, [NAMES[type(frame)].encode(), fields]]


def frame_of_sexp(text: Sexp) -> tuple[LumberjackFrame, int | None]:
    """The frame a text describes, and its `in_compressed` offset if any.
    Raises EncodeError naming what is wrong."""
    if not (isinstance(text, list) and len(text) == 2 and text[0] == PROTOCOL):
        raise EncodeError("expected (lumberjack(CONSTRUCTOR(FIELDS...)))")
    body = text[1]
    if not (isinstance(body, list) and len(body) == 2 and isinstance(body[0], bytes)):
        raise EncodeError("expected (CONSTRUCTOR((field value)...)) after lumberjack")
    name = body[0].decode("ascii", "replace")
    if name not in FIELDS:
        raise EncodeError(f"unknown Lumberjack message {name!r} (expected one of {', '.join(FIELDS)})")
    record = _record(name, body[1])
    version = _number(name, record, "version")
    if version not in (1, 2):
        raise EncodeError(f"{name}: version {version} (expected 1 or 2)")
    frame: LumberjackFrame
    if name == "Window":
        frame = Window(version, _number(name, record, "count"))
    elif name == "Ack":
        frame = Ack(version, _number(name, record, "seq"))
    elif name == "Json":
        frame = Json(version, _number(name, record, "seq"), _bytes(name, record, "json"))
    elif name == "Compressed":
        frame = Compressed(version, _bytes(name, record, "zlib"))
    else:
        frame = Data(version, _number(name, record, "seq"), _pairs(record["pairs"]))
    if isinstance(frame, Json | Compressed) and len(frame.payload) > U32_MAX:
        raise EncodeError(f"{name}: payload longer than a 32-bit length")
    in_compressed = _number(name, record, "in_compressed") if "in_compressed" in record else None
    return frame, in_compressed


def _record(name: str, fields: Sexp) -> dict[str, Sexp]:
    if not isinstance(fields, list):
        raise EncodeError(f"{name}: expected a record ((field value)...)")
    out: dict[str, Sexp] = {}
    for item in fields:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], bytes)):
            raise EncodeError(f"{name}: expected (field value), found {_show(item)}")
        key = item[0].decode("ascii", "replace")
        if key not in FIELDS[name] and key not in OPTIONAL:
            raise EncodeError(f"{name}: unknown field {key!r} (expected {', '.join(FIELDS[name] + OPTIONAL)})")
        if key in out:
            raise EncodeError(f"{name}: field {key!r} given twice")
        out[key] = item[1]
    for key in FIELDS[name]:
        if key not in out:
            raise EncodeError(f"{name}: missing field {key!r}")
    return out


def _number(name: str, record: dict[str, Sexp], key: str) -> int:
    value = record[key]
    if not isinstance(value, bytes):
        raise EncodeError(f"{name}: {key} must be a number, found a list")
    try:
        n = parse_int(value.decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        raise EncodeError(f"{name}: {key} {_show(value)} is not a number") from None
    if not 0 <= n <= U32_MAX:
        raise EncodeError(f"{name}: {key} {n} outside 0..{U32_MAX}")
    return n


def _bytes(name: str, record: dict[str, Sexp], key: str) -> bytes:
    value = record[key]
    if not isinstance(value, bytes):
        raise EncodeError(f"{name}: {key} must be an atom (a byte string), found a list")
    return value


def _pairs(value: Sexp) -> tuple[tuple[bytes, bytes], ...]:
    if not isinstance(value, list):
        raise EncodeError("Data: pairs must be a list ((key value)...)")
    out = []
    for item in value:
        if not (isinstance(item, list) and len(item) == 2 and all(isinstance(x, bytes) for x in item)):
            raise EncodeError(f"Data: expected a pair (key value) of atoms, found {_show(item)}")
        key, val = item
        assert isinstance(key, bytes) and isinstance(val, bytes)
        out.append((key, val))
    if len(out) > U32_MAX:
        raise EncodeError("Data: more pairs than a 32-bit count")
    return tuple(out)


def _show(item: Sexp) -> str:
    text = to_string(item).decode("utf-8", "replace")
    return text if len(text) <= 40 else text[:37] + "..."
