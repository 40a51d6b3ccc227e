"""Values of a `Schema.field_type`, compiled once per type.

`compile_type` turns a field type into a `TypeCodec`: a set of closures that
read and write its bin_prot bytes, convert to and from its sexplib text, and
give its JSON form.  Compiling walks the type once; the closures do no type
dispatch per value.

Python shape of a value, by field type:
  Int, Int32, Int64 -> int;  Float -> float;  Bool -> bool;  String -> bytes
  Option t -> None, or a 1-tuple `(v,)` (so Some None stays distinct from None)
  List t -> list;  Record -> dict of field name (str) to value, in field order
  Enum -> the constructor's name (str)
"""

from __future__ import annotations

import binascii
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ripple_cli.codec import binprot as bp
from ripple_cli.codec.errors import DecodeError, EncodeError
from ripple_cli.codec.schema import (
    EnumOf,
    FieldType,
    ListOf,
    OptionOf,
    Prim,
    RecordOf,
    SexpShapeError,
    expect_atom,
    expect_list,
    record_fields,
    sexp_int,
    sexp_option,
    text,
)
from ripple_cli.sexp.tree import Sexp, float_atom, parse_float

Reader = Callable[[bytes, int], tuple[Any, int]]
Writer = Callable[[bytearray, Any], None]
Skipper = Callable[[bytes, int], int]


@dataclass(frozen=True, slots=True)
class TypeCodec:
    typ: FieldType
    read: Reader
    write: Writer
    skip: Skipper  # validates and steps over a value without building it
    to_sexp: Callable[[Any], Sexp]
    of_sexp: Callable[[Sexp, str], Any]
    to_json: Callable[[Any], Any]


def tag_width(count: int) -> int:
    """bin_prot writes a constructor index in one byte up to 256 constructors,
    in two bytes (little-endian) beyond."""
    return 1 if count <= 256 else 2


def read_ctor(buf: bytes, pos: int, count: int, what: str) -> tuple[int, int]:
    if tag_width(count) == 1:
        return bp.read_tag(buf, pos, count, what)
    if pos + 2 > len(buf):
        raise DecodeError(f"truncated: need the {what} tag", pos)
    t = buf[pos] | (buf[pos + 1] << 8)
    if t >= count:
        raise DecodeError(f"bad {what} tag {t}", pos)
    return t, pos + 2


def write_ctor(out: bytearray, index: int, count: int) -> None:
    if tag_width(count) == 1:
        out.append(index)
    else:
        out += index.to_bytes(2, "little")


def _skip_of(read: Reader) -> Skipper:
    def skip(buf: bytes, pos: int) -> int:
        return read(buf, pos)[1]

    return skip


def zero_width(t: FieldType) -> bool:
    """A type whose values take no bytes: records of no fields, or of
    fields all zero-width.  A list of them is the one place a count is not
    bounded by the bytes left, so such lists draw on a budget."""
    return isinstance(t, RecordOf) and all(zero_width(f.typ) for f in t.fields)


class _Budget(threading.local):
    buf: object = None
    left = 0


_BUDGET = _Budget()


def start_budget(buf: bytes) -> None:
    """Reading of `buf` begins: lists of zero-width elements in it may hold
    as many elements in all as it has bytes, as if each took one byte, so
    what a buffer decodes into stays linear in its size."""
    _BUDGET.buf = buf
    _BUDGET.left = len(buf)


def _charge(buf: bytes, n: int, pos: int) -> None:
    b = _BUDGET
    if b.buf is not buf:
        start_budget(buf)
    if n > b.left:
        raise DecodeError(
            f"list of {n} empty elements over the decode budget ({b.left} of {len(buf)} left)",
            pos,
        )
    b.left -= n


def float_to_json(x: float) -> Any:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def b64(b: bytes) -> str:
    """base64.b64encode(b), as text.  binascii is what that calls: importing
    base64 itself costs every command's start-up a few ms."""
    return binascii.b2a_base64(b, newline=False).decode("ascii")


def bytes_to_json(b: bytes) -> Any:
    """Valid UTF-8 as a JSON string, anything else as {"base64": ...}."""
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": b64(b)}


_SMALL_INTS = tuple(str(i).encode() for i in range(-128, 128))


def _prim(kind: str) -> TypeCodec:
    t = Prim(kind)
    if kind in ("Int", "Int32", "Int64"):
        rng = {"Int": "int", "Int32": "int32", "Int64": "int64"}[kind]
        read = {"Int": bp.read_int, "Int32": bp.read_int32, "Int64": bp.read_int64}[kind]
        write = {"Int": bp.write_int, "Int32": bp.write_int32, "Int64": bp.write_int64}[kind]

        def int_sexp(v: int) -> Sexp:
            # The integers one or two bytes hold share their atoms: a list of
            # 16M of them printed would otherwise hold 16M atoms of 34 bytes.
            return _SMALL_INTS[v + 128] if -128 <= v < 128 else str(v).encode()

        def int_of_sexp(s: Sexp, path: str) -> int:
            return sexp_int(s, rng, path)

        return TypeCodec(t, read, write, _skip_of(read), int_sexp, int_of_sexp, lambda v: v)
    if kind == "Float":

        def float_of_sexp(s: Sexp, path: str) -> float:
            atom = expect_atom(s, "a float", path)
            try:
                return parse_float(atom.decode("ascii"))
            except (ValueError, UnicodeDecodeError):
                raise SexpShapeError(f"expected a float, found {atom.decode('latin-1')!r}", path) from None

        def skip_float(buf: bytes, pos: int) -> int:
            if pos + 8 > len(buf):
                raise DecodeError("truncated: need a float", pos)
            return pos + 8

        return TypeCodec(t, bp.read_float, bp.write_float, skip_float, float_atom, float_of_sexp, float_to_json)
    if kind == "Bool":

        def bool_of_sexp(s: Sexp, path: str) -> bool:
            atom = expect_atom(s, "a bool", path)
            if atom in (b"true", b"True"):
                return True
            if atom in (b"false", b"False"):
                return False
            raise SexpShapeError(f"expected true or false, found {atom.decode('latin-1')!r}", path)

        return TypeCodec(
            t,
            bp.read_bool,
            bp.write_bool,
            _skip_of(bp.read_bool),
            lambda v: b"true" if v else b"false",
            bool_of_sexp,
            lambda v: v,
        )

    def skip_string(buf: bytes, pos: int) -> int:
        n, pos = bp.read_nat0(buf, pos)
        if pos + n > len(buf):
            raise DecodeError(f"truncated: string of {n} bytes, {len(buf) - pos} left", pos)
        return pos + n

    def string_of_sexp(s: Sexp, path: str) -> bytes:
        return expect_atom(s, "a string", path)

    return TypeCodec(t, bp.read_string, bp.write_string, skip_string, lambda v: v, string_of_sexp, bytes_to_json)


def _option(t: OptionOf) -> TypeCodec:
    inner = compile_type(t.inner)
    iread, iwrite, iskip = inner.read, inner.write, inner.skip
    isexp, iof, ijson = inner.to_sexp, inner.of_sexp, inner.to_json

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        present, pos = bp.read_option_tag(buf, pos)
        if not present:
            return None, pos
        v, pos = iread(buf, pos)
        return (v,), pos

    def skip(buf: bytes, pos: int) -> int:
        present, pos = bp.read_option_tag(buf, pos)
        return iskip(buf, pos) if present else pos

    def write(out: bytearray, v: Any) -> None:
        if v is None:
            out.append(0)
        else:
            out.append(1)
            iwrite(out, v[0])

    def to_sexp(v: Any) -> Sexp:
        return [] if v is None else [isexp(v[0])]

    def of_sexp(s: Sexp, path: str) -> Any:
        x = sexp_option(s, path)
        return None if x is None else (iof(x, path),)

    # An option of an option wraps its present value in a list, so that
    # Some None ([null]) and None (null) stay apart; plain options are null or the value.
    nested = isinstance(t.inner, OptionOf)

    def to_json(v: Any) -> Any:
        if v is None:
            return None
        return [ijson(v[0])] if nested else ijson(v[0])

    return TypeCodec(t, read, write, skip, to_sexp, of_sexp, to_json)


def _list(t: ListOf) -> TypeCodec:
    inner = compile_type(t.inner)
    iread, iwrite, iskip = inner.read, inner.write, inner.skip
    isexp, iof, ijson = inner.to_sexp, inner.of_sexp, inner.to_json

    empty = zero_width(t.inner)

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        at = pos
        if empty:
            # Every element is the same value and takes no bytes: read one,
            # repeat it (a bomb of them costs a list's length, not n reads).
            # Its count is held to the budget, not to the bytes left, which
            # its elements do not use (encode writes [{}; {}] as one byte).
            n, pos = bp.read_nat0(buf, pos)
            _charge(buf, n, at)
            return ([iread(buf, pos)[0]] * n if n else []), pos
        n, pos = bp.read_count(buf, pos)
        items = []
        for _ in range(n):
            v, pos = iread(buf, pos)
            items.append(v)
        return items, pos

    def skip(buf: bytes, pos: int) -> int:
        at = pos
        if empty:
            n, pos = bp.read_nat0(buf, pos)
            _charge(buf, n, at)
            return pos  # its elements take no bytes
        n, pos = bp.read_count(buf, pos)
        for _ in range(n):
            pos = iskip(buf, pos)
        return pos

    def write(out: bytearray, v: Any) -> None:
        bp.write_nat0(out, len(v))
        for x in v:
            iwrite(out, x)

    def of_sexp(s: Sexp, path: str) -> Any:
        items = expect_list(s, "a list", path)
        return [iof(x, f"{path}[{i}]") for i, x in enumerate(items)]

    return TypeCodec(t, read, write, skip, lambda v: [isexp(x) for x in v], of_sexp, lambda v: [ijson(x) for x in v])


def _record(t: RecordOf) -> TypeCodec:
    names = tuple(text(f.name) for f in t.fields)
    raw_names = tuple(f.name for f in t.fields)
    codecs = tuple(compile_type(f.typ) for f in t.fields)
    readers = tuple(zip(names, (c.read for c in codecs), strict=True))

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        row = {}
        for name, r in readers:
            row[name], pos = r(buf, pos)
        return row, pos

    skips = tuple(c.skip for c in codecs)

    def skip(buf: bytes, pos: int) -> int:
        for s in skips:
            pos = s(buf, pos)
        return pos

    writers = tuple(zip(names, (c.write for c in codecs), strict=True))

    def write(out: bytearray, v: Any) -> None:
        for name, w in writers:
            w(out, v[name])

    sexpers = tuple(zip(names, raw_names, (c.to_sexp for c in codecs), strict=True))

    def to_sexp(v: Any) -> Sexp:
        return [[raw, f(v[name])] for name, raw, f in sexpers]

    ofs = tuple(zip(names, (c.of_sexp for c in codecs), strict=True))

    def of_sexp(s: Sexp, path: str) -> Any:
        found = record_fields(s, names, path)
        return {name: f(found[name], f"{path}.{name}") for name, f in ofs}

    jsons = tuple(zip(names, (c.to_json for c in codecs), strict=True))

    def to_json(v: Any) -> Any:
        return {name: f(v[name]) for name, f in jsons}

    return TypeCodec(t, read, write, skip, to_sexp, of_sexp, to_json)


def _enum(t: EnumOf) -> TypeCodec:
    names = tuple(text(n) for n in t.names)
    count = len(names)
    index = {n: i for i, n in enumerate(names)}

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        i, pos = read_ctor(buf, pos, count, "enum")
        return names[i], pos

    def skip(buf: bytes, pos: int) -> int:
        return read_ctor(buf, pos, count, "enum")[1]

    def write(out: bytearray, v: Any) -> None:
        try:
            write_ctor(out, index[v], count)
        except KeyError:
            raise EncodeError(f"{v!r} is not one of the enum's constructors {list(names)}") from None

    def to_sexp(v: Any) -> Sexp:
        atom: bytes = v.encode("utf-8", "surrogateescape")
        return atom

    def of_sexp(s: Sexp, path: str) -> Any:
        atom = text(expect_atom(s, "an enum constructor", path))
        if atom not in index and atom[:1].islower() and atom[:1].upper() + atom[1:] in index:
            atom = atom[:1].upper() + atom[1:]  # ppx_sexp_conv also takes `buy` for `Buy`
        if atom not in index:
            raise SexpShapeError(f"{atom} is not one of {' '.join(names)}", path)
        return atom

    return TypeCodec(t, read, write, skip, to_sexp, of_sexp, lambda v: v)


@lru_cache(maxsize=4096)
def compile_type(t: FieldType) -> TypeCodec:
    if isinstance(t, Prim):
        return _prim(t.kind)
    if isinstance(t, OptionOf):
        return _option(t)
    if isinstance(t, ListOf):
        return _list(t)
    if isinstance(t, RecordOf):
        return _record(t)
    return _enum(t)
