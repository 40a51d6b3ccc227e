"""The canonical s-expression of an RCP message, and back to its bytes.

A frame, in sexplib's record style under the protocol's head atom:

    (rcp(Request((version 1)(flags(CRC_PRESENT))(payload"{\\"type\\":...}"))))

The constructor says what the payload is: Request, Response or Event, or
Frame for anything else (not JSON, another JSON value, COMPRESSED).  The
payload is an atom holding the exact bytes, so that key order, spacing and
even bytes that are not UTF-8 survive; the parsed view is in the JSON
fields.  `(crc N)` is present only when the CRC field is not what a writer
computes (a mismatch, or a non-zero field without CRC_PRESENT): without it,
`encode` computes the CRC, so an edited payload gets a right one.
`(extension "...")` is present only when the header extension is not empty.
Flags are the names of the defined bits, then, when reserved bits are set,
one decimal integer holding them.

A JSON line (what the server writes after negotiating `jsonl`):

    (rcp(JsonLine((json"{\\"type\\":\\"response\\",...}"))))

which encodes to the JSON and a newline.
"""

from __future__ import annotations

from ripple_cli.protocols.base import EncodeError
from ripple_cli.protocols.rcp.payload import parse
from ripple_cli.protocols.rcp.wire import (
    COMPRESSED,
    FLAG_BITS,
    FLAG_NAMES,
    MAX_EXTENSION,
    MAX_LENGTH,
    VALID_FLAGS,
    RcpFrame,
    write_frame,
)
from ripple_cli.sexp.tree import Sexp, parse_int

NAME = b"rcp"
FRAME_TYPES = ("Request", "Response", "Event", "Frame")
LINE_TYPE = "JsonLine"
_TYPE_OF_KIND = {"request": "Request", "response": "Response", "event": "Event"}


def frame_type(flags: int, kind: str | None) -> str:
    """The constructor of a frame: its payload's kind, unless the payload
    is not read as JSON (COMPRESSED) or is no message."""
    if flags & COMPRESSED or kind is None:
        return "Frame"
    return _TYPE_OF_KIND[kind]


def _int(n: int) -> bytes:
    return str(n).encode("ascii")


def flags_sexp(flags: int) -> list[Sexp]:
    out: list[Sexp] = [name.encode("ascii") for bit, name in FLAG_NAMES if flags & bit]
    if flags & ~VALID_FLAGS:
        out.append(_int(flags & ~VALID_FLAGS))
    return out


def frame_sexp(frame: RcpFrame, type_name: str, computed_crc: int | None = None) -> Sexp:
    """The text of a frame; `computed_crc` (RcpFrame.computed_crc) when the
    caller has it already."""
    fields: list[Sexp] = [[b"version", _int(frame.version)], [b"flags", flags_sexp(frame.flags)]]
    if computed_crc is None:
        computed_crc = frame.computed_crc
    if frame.crc != computed_crc:
        fields.append([b"crc", _int(frame.crc)])
    if frame.extension:
        fields.append([b"extension", frame.extension])
    fields.append([b"payload", frame.payload])
    return [NAME, [type_name.encode("ascii"), fields]]


def line_sexp(json_text: bytes) -> Sexp:
    return [NAME, [LINE_TYPE.encode("ascii"), [[b"json", json_text]]]]


# ---------------------------------------------------------------- encode


def _atom(v: Sexp, what: str) -> bytes:
    if not isinstance(v, bytes):
        raise EncodeError(f"{what} must be an atom, not a list")
    return v


def _number(v: Sexp, what: str, bits: int) -> int:
    text = _atom(v, what)
    try:
        n = parse_int(text.decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        raise EncodeError(f"{what} {text.decode('ascii', 'replace')!r} is not an integer") from None
    if not 0 <= n < 1 << bits:
        raise EncodeError(f"{what} {n} does not fit in {bits} bits")
    return n


def _flags(v: Sexp) -> int:
    if isinstance(v, bytes):  # a bare number is accepted too: (flags 1)
        return _number(v, "flags", 16)
    flags = 0
    for item in v:
        atom = _atom(item, "a flag")
        name = atom.decode("ascii", "replace")
        if name in FLAG_BITS:
            flags |= FLAG_BITS[name]
        elif name[:1].isdigit():
            flags |= _number(atom, "flags", 16)
        else:
            known = ", ".join(FLAG_BITS)
            raise EncodeError(f"unknown flag {name!r} (known: {known}, or an integer for reserved bits)")
    return flags


def _record(body: Sexp, ctor: str, allowed: tuple[str, ...]) -> dict[str, Sexp]:
    if not isinstance(body, list):
        raise EncodeError(f"{ctor} takes a record: ({ctor}((field value)...))")
    fields: dict[str, Sexp] = {}
    for item in body:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], bytes)):
            raise EncodeError(f"{ctor}: each field is (name value)")
        name = item[0].decode("ascii", "replace")
        if name not in allowed:
            raise EncodeError(f"{ctor}: unknown field {name!r} (fields: {', '.join(allowed)})")
        if name in fields:
            raise EncodeError(f"{ctor}: field {name!r} given twice")
        fields[name] = item[1]
    return fields


def encode(text: Sexp) -> bytes:
    """A message's s-expression back to its bytes."""
    if not (isinstance(text, list) and len(text) == 2 and text[0] == NAME):
        raise EncodeError("an rcp message is (rcp(Constructor(fields...)))")
    inner = text[1]
    if not (isinstance(inner, list) and len(inner) == 2 and isinstance(inner[0], bytes)):
        raise EncodeError("an rcp message is (rcp(Constructor(fields...)))")
    ctor = inner[0].decode("ascii", "replace")
    if ctor == LINE_TYPE:
        fields = _record(inner[1], ctor, ("json",))
        if "json" not in fields:
            raise EncodeError("JsonLine needs (json TEXT)")
        line = _atom(fields["json"], "json")
        if b"\n" in line:
            raise EncodeError("JsonLine: the json text holds a newline, which would end the line")
        return line + b"\n"
    if ctor not in FRAME_TYPES:
        raise EncodeError(f"unknown rcp constructor {ctor!r} (known: {', '.join((*FRAME_TYPES, LINE_TYPE))})")
    fields = _record(inner[1], ctor, ("version", "flags", "crc", "extension", "payload"))
    if "payload" not in fields:
        raise EncodeError(f"{ctor} needs (payload TEXT)")
    payload = _atom(fields["payload"], "payload")
    # Above RCP's 16 MiB is a decoding problem, not a reason to refuse: what
    # `decode --max-payload` accepted must encode back.
    if len(payload) > MAX_LENGTH:
        raise EncodeError(f"{ctor}: payload of {len(payload)} bytes does not fit the 32-bit payload_len")
    version = _number(fields["version"], "version", 16) if "version" in fields else 1
    flags = _flags(fields["flags"]) if "flags" in fields else FLAG_BITS["CRC_PRESENT"]
    extension = _atom(fields["extension"], "extension") if "extension" in fields else b""
    if len(extension) > MAX_EXTENSION:
        raise EncodeError(f"{ctor}: extension of {len(extension)} bytes, above {MAX_EXTENSION}")
    frame = RcpFrame(version, flags, 0, extension, payload)
    crc = _number(fields["crc"], "crc", 32) if "crc" in fields else frame.computed_crc
    frame = RcpFrame(version, flags, crc, extension, payload)
    want = frame_type(flags, None if flags & COMPRESSED else parse(payload).kind)
    if want != ctor:
        raise EncodeError(f"{ctor} given, but this payload makes the frame a {want}")
    return write_frame(frame)
