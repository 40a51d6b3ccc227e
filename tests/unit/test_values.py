"""Values of every Schema.field_type kind through CompiledSchema:
bytes <-> value <-> sexp, and the JSON form.

The expected bytes and text were produced by OCaml types with
`[@@deriving bin_io, sexp]` equivalent to these schemas (bin_prot and
sexplib v0.15).
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any

import pytest

from ripple_cli.codec.delta import REMOVE, CompiledSchema, Patch, SetRow
from ripple_cli.codec.errors import DecodeError, EncodeError
from ripple_cli.codec.jsonview import ARRAY_BATCH, JsonArray, body_to_json, dump_chunks, dumps
from ripple_cli.codec.messages import DeltaView
from ripple_cli.codec.schema import (
    BOOL,
    FLOAT,
    INT,
    INT32,
    INT64,
    STRING,
    EnumOf,
    Field,
    FieldType,
    ListOf,
    OptionOf,
    RecordOf,
    Schema,
    SexpShapeError,
)
from ripple_cli.codec.values import compile_type
from ripple_cli.sexp import parse_one, to_string


def h(s: str) -> bytes:
    return bytes.fromhex(s)


OCAML_NAN = struct.unpack("<d", h("01 00 00 00 00 00 f0 7f"))[0]  # OCaml's `nan`

INNER = RecordOf((Field(b"c", FLOAT), Field(b"d", OptionOf(STRING))))
NESTED = RecordOf((Field(b"a", INT), Field(b"b", INNER)))
SIDE = EnumOf((b"Buy", b"Sell", b"Short_sell"))
VENUE = EnumOf((b"XNYS", b"XNAS", b"BATS", b"ARCX", b"IEXG"))
BOOK_KEY = RecordOf((Field(b"symbol", STRING), Field(b"venue", VENUE)))

# (type, value, bytes, one-line text, JSON)
CASES: list[tuple[FieldType, Any, str, bytes, Any]] = [
    (
        NESTED,
        {"a": -129, "b": {"c": 1.5, "d": (b"x y",)}},
        "fe 7f ff 00 00 00 00 00 00 f8 3f 01 03 78 20 79",
        b'((a -129)(b((c 1.5)(d("x y")))))',
        {"a": -129, "b": {"c": 1.5, "d": "x y"}},
    ),
    (
        NESTED,
        {"a": 0x7FFF, "b": {"c": -0.0, "d": None}},
        "fe ff 7f 00 00 00 00 00 00 00 80 00",
        b"((a 32767)(b((c -0)(d()))))",
        {"a": 32767, "b": {"c": -0.0, "d": None}},
    ),
    (SIDE, "Short_sell", "02", b"Short_sell", "Short_sell"),
    (SIDE, "Buy", "00", b"Buy", "Buy"),
    (OptionOf(OptionOf(INT)), None, "00", b"()", None),
    (OptionOf(OptionOf(INT)), (None,), "01 00", b"(())", [None]),
    (OptionOf(OptionOf(INT)), ((5,),), "01 01 05", b"((5))", [5]),
    (OptionOf(OptionOf(OptionOf(INT))), (((1,),),), "01 01 01 01", b"(((1)))", [[1]]),
    (OptionOf(OptionOf(OptionOf(INT))), ((None,),), "01 01 00", b"((()))", [[None]]),
    (
        ListOf(OptionOf(FLOAT)),
        [(0.1,), None, (OCAML_NAN,)],
        "03 01 9a 99 99 99 99 99 b9 3f 00 01 01 00 00 00 00 00 f0 7f",
        b"((0.1)()(NAN))",
        [0.1, None, "NaN"],
    ),
    (
        ListOf(FLOAT),
        [math.inf, -math.inf],
        "02 00 00 00 00 00 00 f0 7f 00 00 00 00 00 00 f0 ff",
        b"(INF -INF)",
        ["Infinity", "-Infinity"],
    ),
    (ListOf(ListOf(INT)), [[1, 2], [], [-1]], "03 02 01 02 00 01 ff ff", b"((1 2)()(-1))", [[1, 2], [], [-1]]),
    (ListOf(STRING), [], "00", b"()", []),
    (INT64, -(2**63), "fc 00 00 00 00 00 00 00 80", b"-9223372036854775808", -(2**63)),
    (INT64, 2**63 - 1, "fc ff ff ff ff ff ff ff 7f", b"9223372036854775807", 2**63 - 1),
    (INT, 2**62 - 1, "fc ff ff ff ff ff ff ff 3f", b"4611686018427387903", 2**62 - 1),
    (INT, -(2**62), "fc 00 00 00 00 00 00 00 c0", b"-4611686018427387904", -(2**62)),
    (INT32, -(2**31), "fd 00 00 00 80", b"-2147483648", -(2**31)),
    (INT32, 2**31 - 1, "fd ff ff ff 7f", b"2147483647", 2**31 - 1),
    (
        BOOK_KEY,
        {"symbol": b"AAPL", "venue": "XNAS"},
        "04 41 41 50 4c 01",
        b"((symbol AAPL)(venue XNAS))",
        {"symbol": "AAPL", "venue": "XNAS"},
    ),
    (STRING, b'a"b\\\n\xe9', "06 61 22 62 5c 0a e9", b'"a\\"b\\\\\\n\\233"', {"base64": "YSJiXArp"}),
    (STRING, "é".encode(), "02 c3 a9", b'"\\195\\169"', "é"),
    (STRING, b"", "00", b'""', ""),
    (BOOL, True, "01", b"true", True),
    (BOOL, False, "00", b"false", False),
    (FLOAT, 101.25, "00 00 00 00 00 50 59 40", b"101.25", 101.25),
]


def same(a: Any, b: Any) -> bool:
    """Equality that compares floats by bit pattern."""
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def json_same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@pytest.mark.parametrize(("typ", "value", "hex_", "text", "js"), CASES)
def test_value_bytes_text_json(typ: FieldType, value: Any, hex_: str, text: bytes, js: Any) -> None:
    c = compile_type(typ)
    out = bytearray()
    c.write(out, value)
    assert bytes(out) == h(hex_)
    back, end = c.read(h(hex_), 0)
    assert end == len(h(hex_))
    assert same(back, value)
    assert c.skip(h(hex_), 0) == end
    assert to_string(c.to_sexp(value)) == text
    if not (isinstance(typ, ListOf) and typ.inner == OptionOf(FLOAT)):  # text keeps no NaN payload
        assert same(c.of_sexp(parse_one(text), "v"), value)
    assert json_same(c.to_json(value), js)


@pytest.mark.parametrize(("typ", "value", "hex_", "text", "js"), CASES)
def test_every_truncation_and_trailing_context(typ: FieldType, value: Any, hex_: str, text: bytes, js: Any) -> None:
    c = compile_type(typ)
    data = h(hex_)
    for cut in range(len(data)):
        with pytest.raises(DecodeError):
            c.read(data[:cut], 0)
        with pytest.raises(DecodeError):
            c.skip(data[:cut], 0)
    assert c.read(b"\xee" + data + b"\xee", 1)[1] == len(data) + 1


# ---------------------------------------------------------------- a whole schema

ROW_FIELDS = (
    Field(b"n", NESTED),
    Field(b"side", SIDE),
    Field(b"oo", OptionOf(OptionOf(INT)), b"()"),
    Field(b"lo", ListOf(OptionOf(FLOAT))),
    Field(b"ll", ListOf(ListOf(INT))),
    Field(b"s", STRING),
    Field(b"flag", BOOL),
    Field(b"i32", INT32),
    Field(b"i64", INT64),
)
BOOK = Schema(b"book", 4, BOOK_KEY, ROW_FIELDS)
ROW = {
    "n": {"a": -129, "b": {"c": 1.5, "d": (b"x y",)}},
    "side": "Short_sell",
    "oo": (None,),
    "lo": [(0.1,), None],
    "ll": [[1, 2], [], [-1]],
    "s": b"\xe9",
    "flag": True,
    "i32": -(2**31),
    "i64": 2**63 - 1,
}
ROW_BYTES = h(
    "fe 7f ff 00 00 00 00 00 00 f8 3f 01 03 78 20 79"  # n
    "02"  # side
    "01 00"  # oo
    "02 01 9a 99 99 99 99 99 b9 3f 00"  # lo
    "03 02 01 02 00 01 ff ff"  # ll
    "01 e9"  # s
    "01"  # flag
    "fd 00 00 00 80"  # i32
    "fc ff ff ff ff ff ff ff 7f"  # i64
)
ROW_TEXT = (
    b'((n((a -129)(b((c 1.5)(d("x y"))))))(side Short_sell)(oo(()))(lo((0.1)()))(ll((1 2)()(-1)))'
    b'(s"\\233")(flag true)(i32 -2147483648)(i64 9223372036854775807))'
)


def test_set_row_bytes_text_json() -> None:
    c = CompiledSchema(BOOK)
    delta = SetRow(ROW)
    assert c.write_delta(delta) == b"\x00" + ROW_BYTES
    assert c.read_delta(b"\x00" + ROW_BYTES) == delta
    c.validate(c.write_key({"symbol": b"AAPL", "venue": "XNAS"}), b"\x00" + ROW_BYTES)
    assert to_string(c.delta_to_sexp(delta)) == b"(Set" + ROW_TEXT + b")"
    assert c.delta_of_sexp(parse_one(b"(Set" + ROW_TEXT + b")"), "delta") == delta
    assert c.delta_to_json(delta) == {
        "op": "set",
        "row": {
            "n": {"a": -129, "b": {"c": 1.5, "d": "x y"}},
            "side": "Short_sell",
            "oo": [None],
            "lo": [0.1, None],
            "ll": [[1, 2], [], [-1]],
            "s": {"base64": "6Q=="},
            "flag": True,
            "i32": -2147483648,
            "i64": 9223372036854775807,
        },
    }
    assert c.field_values(delta) == ROW


def test_patch_bytes_text_json() -> None:
    c = CompiledSchema(BOOK)
    patch = Patch(((1, "Sell"), (2, None), (8, -1), (1, "Buy")))
    data = h("01 04 01 01 02 00 08 ff ff 01 00")
    assert c.write_delta(patch) == data
    assert c.read_delta(data) == patch
    text = b"(Patch((Side Sell)(Oo())(I64 -1)(Side Buy)))"
    assert to_string(c.delta_to_sexp(patch)) == text
    assert c.delta_of_sexp(parse_one(text), "delta") == patch
    assert c.delta_to_json(patch) == {
        "op": "patch",
        "updates": [
            {"field": "side", "value": "Sell"},
            {"field": "oo", "value": None},
            {"field": "i64", "value": -1},
            {"field": "side", "value": "Buy"},
        ],
    }
    assert c.field_values(patch) == {"side": "Buy", "oo": None, "i64": -1}
    assert c.write_delta(Patch(())) == h("01 00")
    assert to_string(c.delta_to_sexp(Patch(()))) == b"(Patch())"


def test_remove() -> None:
    c = CompiledSchema(BOOK)
    assert c.write_delta(REMOVE) == h("02")
    assert c.read_delta(h("02")) == REMOVE
    assert to_string(c.delta_to_sexp(REMOVE)) == b"Remove"
    assert c.delta_to_json(REMOVE) == {"op": "remove"}
    assert c.field_values(REMOVE) == {}


def test_record_key() -> None:
    c = CompiledSchema(BOOK)
    key = {"symbol": b"AAPL", "venue": "XNAS"}
    assert c.write_key(key) == h("04 41 41 50 4c 01")
    assert c.read_key(h("04 41 41 50 4c 01")) == key
    assert to_string(c.key.to_sexp(key)) == b"((symbol AAPL)(venue XNAS))"
    assert c.key.of_sexp(parse_one(b"((venue XNAS)(symbol AAPL))"), "key") == key  # any order
    with pytest.raises(DecodeError) as e:
        c.read_key(h("04 41 41 50 4c 05"))
    assert str(e.value) == "bad enum tag 5 at byte 5"
    with pytest.raises(DecodeError) as e:
        c.read_key(h("04 41 41 50 4c 01 00"))
    assert str(e.value) == "key: 1 byte left over at byte 6"


@pytest.mark.parametrize(
    ("key_t", "key", "hex_", "text"),
    [
        (INT64, -(2**63), "fc 00 00 00 00 00 00 00 80", b"-9223372036854775808"),
        (INT64, 300, "fe 2c 01", b"300"),
        (INT, 2**62 - 1, "fc ff ff ff ff ff ff ff 3f", b"4611686018427387903"),
        (INT, -1, "ff ff", b"-1"),
    ],
)
def test_int_keys(key_t: FieldType, key: int, hex_: str, text: bytes) -> None:
    c = CompiledSchema(Schema(b"k", 1, key_t, (Field(b"v", BOOL),)))
    assert c.write_key(key) == h(hex_)
    assert c.read_key(h(hex_)) == key
    assert to_string(c.key.to_sexp(key)) == text
    assert c.key.of_sexp(parse_one(text), "key") == key


def test_int_key_out_of_range() -> None:
    c = CompiledSchema(Schema(b"k", 1, INT, (Field(b"v", BOOL),)))
    with pytest.raises(DecodeError) as e:
        c.read_key(h("fc 00 00 00 00 00 00 00 40"))
    assert str(e.value) == "int 4611686018427387904 out of range at byte 0"
    with pytest.raises(EncodeError):
        c.write_key(2**62)
    with pytest.raises(SexpShapeError) as e2:
        c.key.of_sexp(b"4611686018427387904", "key")
    assert str(e2.value) == "key: int 4611686018427387904 out of range"


def test_delta_read_errors() -> None:
    c = CompiledSchema(BOOK)
    key = c.write_key({"symbol": b"AAPL", "venue": "XNAS"})
    for data, msg in [
        (h("03"), "bad delta tag 3 at byte 0"),
        (h("02 00"), "delta: 1 byte left over at byte 1"),
        (h("01 01 09 00"), "bad update tag 9 at byte 2"),
        (h("01 03 01 02"), "list of 3 elements cannot fit in 2 bytes at byte 1"),
        (h("01 02 01 02"), "truncated: need the update tag at byte 4"),
        (h("01 01 01 03"), "bad enum tag 3 at byte 3"),
        (h("00"), "truncated: need an integer at byte 1"),
        (b"", "truncated: need the delta tag at byte 0"),
    ]:
        with pytest.raises(DecodeError) as e:
            c.read_delta(data)
        assert str(e.value) == msg
        with pytest.raises(DecodeError) as e:
            c.validate(key, data)
        assert str(e.value) == msg


# ---------------------------------------------------------------- text errors


@pytest.mark.parametrize(
    ("typ", "text", "message"),
    [
        (SIDE, b"Hold", "v: Hold is not one of Buy Sell Short_sell"),
        (INT32, b"2147483648", "v: int32 2147483648 out of range"),
        (INT, b"1.5", "v: expected an integer, found '1.5'"),
        (FLOAT, b"abc", "v: expected a float, found 'abc'"),
        (BOOL, b"yes", "v: expected true or false, found 'yes'"),
        (STRING, b"(a)", "v: expected a string, found a list"),
        (OptionOf(INT), b"(1 2)", "v: expected an option: () or (value)"),
        (ListOf(INT), b"(1 x)", "v[1]: expected an integer, found 'x'"),
        (NESTED, b"((a 1))", "v: missing field b"),
        (NESTED, b"((a 1)(a 2)(b((c 1)(d()))))", "v: duplicate field a"),
        (NESTED, b"((a 1)(z 2)(b((c 1)(d()))))", "v: unknown field z"),
        (NESTED, b"((a 1)(b((c x)(d()))))", "v.b.c: expected a float, found 'x'"),
    ],
)
def test_of_sexp_errors(typ: FieldType, text: bytes, message: str) -> None:
    with pytest.raises(SexpShapeError) as e:
        compile_type(typ).of_sexp(parse_one(text), "v")
    assert str(e.value) == message


def test_of_sexp_accepts_sexplib_alternatives() -> None:
    # ppx_sexp_conv reads a constructor with its first letter lowercased too
    assert compile_type(SIDE).of_sexp(b"short_sell", "v") == "Short_sell"
    assert compile_type(SIDE).of_sexp(b"buy", "v") == "Buy"
    for bad in (b"BUY", b"sHORT_SELL", b"(Buy)"):
        with pytest.raises(SexpShapeError):
            compile_type(SIDE).of_sexp(parse_one(bad), "v")
    c = compile_type(OptionOf(INT))
    assert c.of_sexp(parse_one(b"(some 5)"), "v") == (5,)
    assert c.of_sexp(parse_one(b"none"), "v") is None
    assert compile_type(BOOL).of_sexp(b"True", "v") is True
    assert compile_type(INT).of_sexp(b"0x10", "v") == 16
    assert compile_type(FLOAT).of_sexp(b"-NAN", "v") != 0  # a NaN
    assert math.copysign(1, compile_type(FLOAT).of_sexp(b"-NAN", "v")) == -1


def test_patch_of_sexp_errors() -> None:
    c = CompiledSchema(BOOK)
    with pytest.raises(SexpShapeError) as e:
        c.delta_of_sexp(parse_one(b"(Patch((Nope 1)))"), "delta")
    assert str(e.value) == "delta.Patch[0]: Nope is not a field of book/v4 (N Side Oo Lo Ll S Flag I32 I64)"
    with pytest.raises(SexpShapeError) as e:
        c.delta_of_sexp(parse_one(b"(Patch((Side Buy Sell)))"), "delta")
    assert str(e.value) == "delta.Patch[0]: Side takes one value"
    with pytest.raises(SexpShapeError) as e:
        c.delta_of_sexp(parse_one(b"(Replace x)"), "delta")
    assert str(e.value) == "delta: expected (Set row), (Patch (updates...)) or Remove"


# ---------------------------------------------------------------- wide enums


def test_enum_of_256_constructors_uses_one_byte_257_uses_two() -> None:
    names256 = tuple(b"C%d" % i for i in range(256))
    c = compile_type(EnumOf(names256))
    out = bytearray()
    c.write(out, "C255")
    assert bytes(out) == h("ff")
    assert c.read(h("ff"), 0) == ("C255", 1)
    c = compile_type(EnumOf((*names256, b"C256")))
    for name, hex_ in (("C0", "00 00"), ("C1", "01 00"), ("C256", "00 01")):
        out = bytearray()
        c.write(out, name)
        assert bytes(out) == h(hex_)
        assert c.read(h(hex_), 0) == (name, 2)
    with pytest.raises(DecodeError) as e:
        c.read(h("01 01"), 0)
    assert str(e.value) == "bad enum tag 257 at byte 0"
    with pytest.raises(EncodeError):
        c.write(bytearray(), "C999")


def test_delta_view_json() -> None:
    c = CompiledSchema(BOOK)
    view = DeltaView(b"book", {"symbol": b"AAPL", "venue": "XNAS"}, Patch(((6, False),)), 7, None, c)
    assert body_to_json(view) == {
        "source_output": "book",
        "key": {"symbol": "AAPL", "venue": "XNAS"},
        "delta": {"op": "patch", "updates": [{"field": "flag", "value": False}]},
        "sequence_no": 7,
        "watermark_ns": None,
    }


def _plain(obj: object) -> object:
    """`obj` with every JsonArray a list: what dumps must write as if it were."""
    if isinstance(obj, JsonArray):
        return [_plain(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    return obj


@pytest.mark.parametrize("count", [0, 1, ARRAY_BATCH, ARRAY_BATCH + 1, 3 * ARRAY_BATCH + 5])
def test_a_json_array_written_in_pieces_is_the_whole_text(count: int) -> None:
    def item(i: int) -> object:
        return {"i": i, "s": "é\udcff" if i == 7 else "x", "f": [1.5, None]}

    def make() -> dict[str, object]:
        return {
            "v": 1,
            "msg": {"w": "\udcfe", "a": JsonArray(range(count), item), "n": [JsonArray((), item), {}]},
            "z": [],
        }

    pieces = list(dump_chunks(make()))
    assert count == 0 or len(pieces) > 2  # written as it comes
    assert b"".join(pieces) == dumps(make()) == dumps(_plain(make()))
    json.loads(b"".join(pieces))
