"""`Schema.t`: the description of an output's key and row (reference section 4).

The types mirror ripple_wire.ml's `Schema` module one to one.  Names are
`bytes` (they are bin_prot strings); `text()` gives them for display.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from ripple_cli.codec import binprot as bp
from ripple_cli.codec.errors import DecodeError
from ripple_cli.sexp.tree import Sexp, parse_int
from ripple_cli.sexp.write import to_string

PRIMITIVES = ("Int", "Int32", "Int64", "Float", "Bool", "String")
# Constructor indices of Schema.field_type, in declaration order.
_TAGS = ("Int", "Int32", "Int64", "Float", "Bool", "String", "Option", "List", "Record", "Enum")
MAX_TYPE_DEPTH = 64  # deeper nesting is refused rather than exhausting the stack


def text(name: bytes) -> str:
    """Display form of a wire name: UTF-8, undecodable bytes kept reversibly."""
    return name.decode("utf-8", "surrogateescape")


@dataclass(frozen=True, slots=True)
class Prim:
    kind: str  # one of PRIMITIVES


@dataclass(frozen=True, slots=True)
class OptionOf:
    inner: FieldType


@dataclass(frozen=True, slots=True)
class ListOf:
    inner: FieldType


@dataclass(frozen=True, slots=True)
class RecordOf:
    fields: tuple[Field, ...]


@dataclass(frozen=True, slots=True)
class EnumOf:
    names: tuple[bytes, ...]


FieldType = Union[Prim, OptionOf, ListOf, RecordOf, EnumOf]


@dataclass(frozen=True, slots=True)
class Field:
    name: bytes
    typ: FieldType
    default: bytes | None = None  # canonical sexp text of the default value


@dataclass(frozen=True, slots=True)
class Schema:
    name: bytes
    version: int
    key: FieldType
    fields: tuple[Field, ...]

    @property
    def fingerprint(self) -> bytes:
        """`NAME/vVERSION`, also the envelope's schema fingerprint."""
        return b"%b/v%d" % (self.name, self.version)


INT = Prim("Int")
INT32 = Prim("Int32")
INT64 = Prim("Int64")
FLOAT = Prim("Float")
BOOL = Prim("Bool")
STRING = Prim("String")
_PRIM_BY_NAME = {p.kind: p for p in (INT, INT32, INT64, FLOAT, BOOL, STRING)}


# ------------------------------------------------------------- bin_prot


def read_field_type(buf: bytes, pos: int, depth: int = 0) -> tuple[FieldType, int]:
    if depth > MAX_TYPE_DEPTH:
        raise DecodeError("field type nested too deeply", pos)
    tag, pos = bp.read_tag(buf, pos, len(_TAGS), "field_type")
    name = _TAGS[tag]
    if tag < 6:
        return _PRIM_BY_NAME[name], pos
    if name == "Option":
        inner, pos = read_field_type(buf, pos, depth + 1)
        return OptionOf(inner), pos
    if name == "List":
        inner, pos = read_field_type(buf, pos, depth + 1)
        return ListOf(inner), pos
    if name == "Record":
        fields, pos = read_fields(buf, pos, depth + 1)
        return RecordOf(fields), pos
    n, pos = bp.read_count(buf, pos)
    names = []
    for _ in range(n):
        s, pos = bp.read_string(buf, pos)
        names.append(s)
    return EnumOf(tuple(names)), pos


def read_fields(buf: bytes, pos: int, depth: int = 0) -> tuple[tuple[Field, ...], int]:
    n, pos = bp.read_count(buf, pos)
    fields = []
    for _ in range(n):
        name, pos = bp.read_string(buf, pos)
        typ, pos = read_field_type(buf, pos, depth)
        has_default, pos = bp.read_option_tag(buf, pos)
        default = None
        if has_default:
            default, pos = bp.read_string(buf, pos)
        fields.append(Field(name, typ, default))
    return tuple(fields), pos


def read_schema(buf: bytes, pos: int) -> tuple[Schema, int]:
    name, pos = bp.read_string(buf, pos)
    version, pos = bp.read_int(buf, pos)
    key, pos = read_field_type(buf, pos)
    fields, pos = read_fields(buf, pos)
    return Schema(name, version, key, fields), pos


def write_field_type(out: bytearray, t: FieldType) -> None:
    if isinstance(t, Prim):
        out.append(_TAGS.index(t.kind))
    elif isinstance(t, OptionOf):
        out.append(6)
        write_field_type(out, t.inner)
    elif isinstance(t, ListOf):
        out.append(7)
        write_field_type(out, t.inner)
    elif isinstance(t, RecordOf):
        out.append(8)
        write_fields(out, t.fields)
    else:
        out.append(9)
        bp.write_nat0(out, len(t.names))
        for s in t.names:
            bp.write_string(out, s)


def write_fields(out: bytearray, fields: tuple[Field, ...]) -> None:
    bp.write_nat0(out, len(fields))
    for f in fields:
        bp.write_string(out, f.name)
        write_field_type(out, f.typ)
        if f.default is None:
            out.append(0)
        else:
            out.append(1)
            bp.write_string(out, f.default)


def write_schema(out: bytearray, s: Schema) -> None:
    bp.write_string(out, s.name)
    bp.write_int(out, s.version)
    write_field_type(out, s.key)
    write_fields(out, s.fields)


# ------------------------------------------------------------- s-expressions


def sexp_of_field_type(t: FieldType) -> Sexp:
    if isinstance(t, Prim):
        return t.kind.encode()
    if isinstance(t, OptionOf):
        return [b"Option", sexp_of_field_type(t.inner)]
    if isinstance(t, ListOf):
        return [b"List", sexp_of_field_type(t.inner)]
    if isinstance(t, RecordOf):
        return [b"Record", [sexp_of_field(f) for f in t.fields]]
    return [b"Enum", list(t.names)]


def sexp_of_field(f: Field) -> Sexp:
    default: Sexp = [] if f.default is None else [f.default]
    return [[b"name", f.name], [b"typ", sexp_of_field_type(f.typ)], [b"default", default]]


def sexp_of_schema(s: Schema) -> Sexp:
    return [
        [b"name", s.name],
        [b"version", str(s.version).encode()],
        [b"key", sexp_of_field_type(s.key)],
        [b"fields", [sexp_of_field(f) for f in s.fields]],
    ]


class SexpShapeError(ValueError):
    """An s-expression that does not have the shape of the expected type.
    `path` names where, e.g. `msg.Delta.delta.Patch[1]`."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.message = message
        self.path = path


def expect_atom(s: Sexp, what: str, path: str) -> bytes:
    if not isinstance(s, bytes):
        raise SexpShapeError(f"expected {what}, found a list", path)
    return s


def expect_list(s: Sexp, what: str, path: str) -> list[Sexp]:
    if not isinstance(s, list):
        raise SexpShapeError(f"expected {what}, found atom {shown_atom(s)}", path)
    return s


def shown_atom(atom: bytes, most: int = 40) -> str:
    """An atom in an error line: as the sexp text writes it (quoted and
    escaped when it must be), cut after `most` characters."""
    text = to_string(atom).decode("ascii", "backslashreplace")
    return text if len(text) <= most else text[: most - 3] + "..."


def record_fields(s: Sexp, names: tuple[str, ...], path: str) -> dict[str, Sexp]:
    """ppx_sexp_conv's record reading: `((name value)...)` in any order, each
    field exactly once, no unknown fields."""
    items = expect_list(s, "a record", path)
    found: dict[str, Sexp] = {}
    for item in items:
        pair = expect_list(item, "a (field value) pair", path)
        if len(pair) != 2 or not isinstance(pair[0], bytes):
            raise SexpShapeError("expected a (field value) pair", path)
        name = pair[0].decode("utf-8", "surrogateescape")
        if name not in names:
            raise SexpShapeError(f"unknown field {name}", path)
        if name in found:
            raise SexpShapeError(f"duplicate field {name}", path)
        found[name] = pair[1]
    missing = [n for n in names if n not in found]
    if missing:
        raise SexpShapeError(f"missing field {missing[0]}", path)
    return found


def variant(s: Sexp, path: str) -> tuple[str, list[Sexp]]:
    """A variant value: `Ctor` or `(Ctor args...)`.  Like ppx_sexp_conv, a
    lowercase first letter is accepted."""
    if isinstance(s, bytes):
        name, args = s, []
    else:
        if not s or not isinstance(s[0], bytes):
            raise SexpShapeError("expected a constructor", path)
        name, args = s[0], s[1:]
        if not args:  # ppx_sexp_conv refuses it too (stag_no_args, or missing arguments)
            bare = name.decode("utf-8", "surrogateescape")
            raise SexpShapeError(f"({bare}) has no arguments: write {bare} alone, or give its arguments", path)
    # capitalize_ascii, on the bytes: a first byte that is not an ASCII
    # letter stays as it is (`été`), as ppx_sexp_conv and the printer leave it
    return (name[:1].upper() + name[1:]).decode("utf-8", "surrogateescape"), args


_BITS = {"int": 63, "int32": 32, "int64": 64}  # what int_of_string, Int32.of_string, Int64.of_string read


def sexp_int(s: Sexp, kind: str, path: str) -> int:
    atom = expect_atom(s, "an integer", path)
    try:
        return parse_int(atom.decode("ascii"), _BITS[kind])
    except (ValueError, UnicodeDecodeError):
        pass
    try:
        n = parse_int(atom.decode("ascii"))  # a number, but not of this width
    except (ValueError, UnicodeDecodeError):
        raise SexpShapeError(f"expected an integer, found {atom.decode('latin-1')!r}", path) from None
    raise SexpShapeError(f"{kind} {n} out of range", path)


def sexp_option(s: Sexp, path: str) -> Sexp | None:
    """`()` is None; `(x)` is Some x (also sexplib's `(some x)` / `none`)."""
    if isinstance(s, bytes):
        if s.lower() == b"none":
            return None
        raise SexpShapeError("expected an option: () or (value)", path)
    if len(s) == 0:
        return None
    if len(s) == 1:
        return s[0]
    if len(s) == 2 and s[0] in (b"some", b"Some"):
        return s[1]
    raise SexpShapeError("expected an option: () or (value)", path)


def field_type_of_sexp(s: Sexp, path: str = "typ", depth: int = 0) -> FieldType:
    if depth > MAX_TYPE_DEPTH:
        raise SexpShapeError("field type nested too deeply", path)
    ctor, args = variant(s, path)
    if ctor in _PRIM_BY_NAME:
        if args or not isinstance(s, bytes):
            raise SexpShapeError(f"{ctor} takes no argument", path)
        return _PRIM_BY_NAME[ctor]
    if ctor in ("Option", "List", "Record", "Enum"):
        if len(args) != 1:
            raise SexpShapeError(f"{ctor} takes one argument", path)
        arg = args[0]
        if ctor == "Option":
            return OptionOf(field_type_of_sexp(arg, path, depth + 1))
        if ctor == "List":
            return ListOf(field_type_of_sexp(arg, path, depth + 1))
        if ctor == "Record":
            items = expect_list(arg, "a list of fields", path)
            return RecordOf(tuple(field_of_sexp(f, f"{path}.Record", depth + 1) for f in items))
        names = expect_list(arg, "a list of constructor names", path)
        return EnumOf(tuple(expect_atom(n, "a constructor name", path) for n in names))
    raise SexpShapeError(f"unknown field type {ctor}", path)


def field_of_sexp(s: Sexp, path: str, depth: int = 0) -> Field:
    f = record_fields(s, ("name", "typ", "default"), path)
    name = expect_atom(f["name"], "a field name", path + ".name")
    typ = field_type_of_sexp(f["typ"], f"{path}({text(name)}).typ", depth)
    d = sexp_option(f["default"], path + ".default")
    default = None if d is None else expect_atom(d, "the default's text", path + ".default")
    return Field(name, typ, default)


def schema_flaw(schema: Schema) -> str | None:
    """Why no worker's OCaml type can have this schema, or None: a record
    (the row, the key or one inside them) that names a field twice, which
    an OCaml record cannot (and a Set, JSON and a table could not show
    faithfully).  Such a schema is data a Handshake may still carry; its
    Deltas are not decoded with it."""

    def walk(t: FieldType, where: str) -> str | None:
        if isinstance(t, (OptionOf, ListOf)):
            return walk(t.inner, where)
        if isinstance(t, RecordOf):
            return fields_flaw(t.fields, where)
        return None

    def fields_flaw(fields: tuple[Field, ...], where: str) -> str | None:
        seen: set[bytes] = set()
        for f in fields:
            if f.name in seen:
                return f"names field {text(f.name)} twice in {where}"
            seen.add(f.name)
        for f in fields:
            flaw = walk(f.typ, f"the record of field {text(f.name)}")
            if flaw:
                return flaw
        return None

    return fields_flaw(schema.fields, "its row") or walk(schema.key, "its key")


def schema_of_sexp(s: Sexp, path: str = "schema") -> Schema:
    f = record_fields(s, ("name", "version", "key", "fields"), path)
    name = expect_atom(f["name"], "a schema name", path + ".name")
    version = sexp_int(f["version"], "int", path + ".version")
    key = field_type_of_sexp(f["key"], path + ".key")
    items = expect_list(f["fields"], "a list of fields", path + ".fields")
    fields = tuple(field_of_sexp(x, f"{path}.fields[{i}]") for i, x in enumerate(items))
    return Schema(name, version, key, fields)
