"""Round trips of random schemas and random values of every field type:
value -> bytes -> value (floats by bit pattern) and value -> sexp text ->
value (a NaN comes back as a NaN of the same sign: text cannot keep a NaN's
payload, as in OCaml)."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from ripple_strategies import canon, deltas, field_types, prop, schemas, values

from ripple_cli.codec.delta import CompiledSchema, Delta
from ripple_cli.codec.errors import DecodeError
from ripple_cli.codec.schema import (
    FieldType,
    Schema,
    field_type_of_sexp,
    read_field_type,
    read_schema,
    schema_of_sexp,
    sexp_of_field_type,
    sexp_of_schema,
    write_field_type,
    write_schema,
)
from ripple_cli.codec.values import compile_type
from ripple_cli.sexp import parse_one, to_string, to_string_hum

typed_values = field_types.flatmap(lambda t: st.tuples(st.just(t), values(t)))


@prop(300)
@given(typed_values)
def test_value_bytes_round_trip(tv: tuple[FieldType, Any]) -> None:
    t, v = tv
    c = compile_type(t)
    out = bytearray()
    c.write(out, v)
    data = bytes(out)
    back, end = c.read(data, 0)
    assert end == len(data)
    assert canon(back) == canon(v)
    assert c.skip(data, 0) == len(data)
    # in the middle of other bytes, read from an offset
    framed = b"\x01\x02" + data + b"\xff"
    back, end = c.read(framed, 2)
    assert end == len(data) + 2
    assert canon(back) == canon(v)
    # every strict prefix is a DecodeError, never another exception
    for cut in range(len(data)):
        try:
            c.read(data[:cut], 0)
        except DecodeError:
            pass
        else:  # a prefix can be a whole value only if the type allows it, which it cannot here
            raise AssertionError(f"prefix of {cut} bytes read as a value")


@prop(300)
@given(typed_values)
def test_value_text_round_trip(tv: tuple[FieldType, Any]) -> None:
    t, v = tv
    c = compile_type(t)
    sexp = c.to_sexp(v)
    line = to_string(sexp)
    assert b"\n" not in line
    back = c.of_sexp(parse_one(line), "v")
    assert canon(back, keep_nan_payload=False) == canon(v, keep_nan_payload=False)
    back = c.of_sexp(parse_one(to_string_hum(sexp)), "v")
    assert canon(back, keep_nan_payload=False) == canon(v, keep_nan_payload=False)
    # and printing again gives the same text
    assert to_string(c.to_sexp(back)) == line


@prop(200)
@given(field_types)
def test_field_type_round_trips(t: FieldType) -> None:
    out = bytearray()
    write_field_type(out, t)
    assert read_field_type(bytes(out), 0) == (t, len(out))
    assert field_type_of_sexp(parse_one(to_string(sexp_of_field_type(t)))) == t


@prop(150)
@given(schemas)
def test_schema_round_trips(s: Schema) -> None:
    out = bytearray()
    write_schema(out, s)
    assert read_schema(bytes(out), 0) == (s, len(out))
    assert schema_of_sexp(parse_one(to_string(sexp_of_schema(s)))) == s
    assert schema_of_sexp(parse_one(to_string_hum(sexp_of_schema(s)))) == s


schema_deltas = schemas.flatmap(lambda s: st.tuples(st.just(s), values(s.key), deltas(s)))


@prop(200)
@given(schema_deltas)
def test_key_and_delta_round_trips(sd: tuple[Schema, Any, Delta]) -> None:
    s, key, delta = sd
    c = CompiledSchema(s)
    kb, db = c.write_key(key), c.write_delta(delta)
    assert canon(c.read_key(kb)) == canon(key)
    assert canon(c.read_delta(db)) == canon(delta)
    c.validate(kb, db)
    # one byte more or less is an error, never another exception
    for bad in (db + b"\x00", db[:-1]):
        try:
            c.read_delta(bad)
        except DecodeError:
            pass
        else:
            raise AssertionError("a delta with a byte more or less decoded")
    text = to_string(c.delta_to_sexp(delta))
    back = c.delta_of_sexp(parse_one(text), "delta")
    assert canon(back, keep_nan_payload=False) == canon(delta, keep_nan_payload=False)
    key_back = c.key.of_sexp(parse_one(to_string(c.key.to_sexp(key))), "key")
    assert canon(key_back, keep_nan_payload=False) == canon(key, keep_nan_payload=False)


@prop(200)
@given(field_types, st.binary(max_size=40))
def test_random_bytes_never_raise_anything_but_decode_error(t: FieldType, data: bytes) -> None:
    c = compile_type(t)
    for reader in (c.read, c.skip):
        with contextlib.suppress(DecodeError):
            reader(data, 0)
