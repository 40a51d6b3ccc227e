"""A schema's types as Arrow types, and its decoded values as what
pyarrow builds those columns from: the typed tables' columns (tables.py).

Int, Int64 -> int64; Int32 -> int32; Float -> double; Bool -> boolean;
String -> string (bytes that are not UTF-8 as \\xNN escapes, as the
all-messages table writes them); Enum -> string (the constructor);
Option t -> t, nullable; Option (Option t) -> struct<value: (Option t)'s>, nullable
(so that Some None stays apart from None); List t -> list<t>;
Record -> struct.

A converter is built once per type; types whose decoded values pyarrow
takes as they are (numbers, booleans, enums, lists of them) convert with
no Python work per value at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from ripple_cli.codec.schema import EnumOf, FieldType, ListOf, OptionOf, Prim, RecordOf, text

Convert = Callable[[Any], Any] | None  # None: the value is what pyarrow takes


def name_text(name: bytes) -> str:
    """A wire name as a column name: Parquet wants valid UTF-8."""
    return name.decode("utf-8", "backslashreplace")


_PRIMS = {
    "Int": pa.int64(),
    "Int32": pa.int32(),
    "Int64": pa.int64(),
    "Float": pa.float64(),
    "Bool": pa.bool_(),
    "String": pa.string(),
}


def arrow_type(t: FieldType) -> pa.DataType:
    if isinstance(t, Prim):
        return _PRIMS[t.kind]
    if isinstance(t, EnumOf):
        return pa.string()
    if isinstance(t, OptionOf):
        if isinstance(t.inner, OptionOf):
            return pa.struct([pa.field("value", arrow_type(t.inner))])
        return arrow_type(t.inner)
    if isinstance(t, ListOf):
        return pa.list_(arrow_type(t.inner))
    return pa.struct([pa.field(name_text(f.name), arrow_type(f.typ)) for f in t.fields])


def _string(v: bytes) -> str:
    return v.decode("utf-8", "backslashreplace")


def converter(t: FieldType) -> Convert:
    """The function from a decoded value (codec/values.py's shapes) to the
    Python value pyarrow builds `arrow_type(t)` from; None when the value
    is that already."""
    if isinstance(t, Prim):
        return _string if t.kind == "String" else None
    if isinstance(t, EnumOf):
        # A constructor's text keeps bytes that are not UTF-8 as surrogates.
        return None if all(_utf8(n) for n in t.names) else _enum_text
    if isinstance(t, OptionOf):
        return _option(t)
    if isinstance(t, ListOf):
        inner = converter(t.inner)
        if inner is None:
            return None
        return lambda v: [inner(x) for x in v]
    return _record(t)


def _utf8(name: bytes) -> bool:
    try:
        name.decode()
    except UnicodeDecodeError:
        return False
    return True


def _enum_text(v: str) -> str:
    return v.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _option(t: OptionOf) -> Convert:
    # Decoded: None, or (v,).
    if isinstance(t.inner, OptionOf):
        deeper = _option(t.inner)
        if deeper is None:
            return lambda v: None if v is None else {"value": v[0]}
        d = deeper
        return lambda v: None if v is None else {"value": d(v[0])}
    inner = converter(t.inner)
    if inner is None:
        return lambda v: None if v is None else v[0]
    f = inner
    return lambda v: None if v is None else f(v[0])


def _record(t: RecordOf) -> Convert:
    # Decoded: a dict keyed by the field's text (codec/values.py).
    parts = tuple((text(f.name), name_text(f.name), converter(f.typ)) for f in t.fields)

    def convert(v: dict[str, Any]) -> dict[str, Any]:
        return {out: (v[key] if conv is None else conv(v[key])) for key, out, conv in parts}

    return convert


def apply(conv: Convert, value: Any) -> Any:
    return value if conv is None else conv(value)
