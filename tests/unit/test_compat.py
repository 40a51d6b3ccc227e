"""check_backward ~reader ~writer: every rule of reference section 6, with
the exact error texts."""

from __future__ import annotations

import pytest

from ripple_cli.codec.compat import check_backward, compatible
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
)


def schema(*fields: Field, key: FieldType = STRING, version: int = 1) -> Schema:
    return Schema(b"s", version, key, tuple(fields))


def one(reader_t: FieldType, writer_t: FieldType) -> list[str]:
    """check_backward on two one-field schemas whose field `f` has these types."""
    return check_backward(schema(Field(b"f", reader_t)), schema(Field(b"f", writer_t)))


VWAP_V2 = schema(Field(b"price", FLOAT), Field(b"volume", INT), Field(b"venue", OptionOf(STRING), b"()"), version=2)


def test_identical_schemas_are_compatible() -> None:
    assert check_backward(VWAP_V2, VWAP_V2) == []


# ---------------------------------------------------------------- keys


def test_key_types_must_be_equal() -> None:
    assert check_backward(schema(key=INT), schema(key=INT)) == []
    assert check_backward(schema(key=STRING), schema(key=INT)) == ["key: type mismatch (reader String, writer Int)"]
    # no widening for keys: they are looked up, not read into a wider field
    assert check_backward(schema(key=INT64), schema(key=INT32)) == ["key: type mismatch (reader Int64, writer Int32)"]
    assert check_backward(schema(key=OptionOf(STRING)), schema(key=STRING)) == [
        "key: type mismatch (reader (Option String), writer String)"
    ]
    rec = RecordOf((Field(b"symbol", STRING), Field(b"venue", EnumOf((b"XNYS", b"XNAS")))))
    assert check_backward(schema(key=rec), schema(key=rec)) == []


# ---------------------------------------------------------------- fields present or missing


def test_missing_field_without_default() -> None:
    reader = schema(Field(b"price", FLOAT), Field(b"volume", INT), Field(b"venue", OptionOf(STRING)))
    writer = schema(Field(b"price", FLOAT))
    assert check_backward(reader, writer) == ["missing field volume", "missing field venue"]


def test_missing_field_with_default_is_fine() -> None:
    writer = schema(Field(b"price", FLOAT), Field(b"volume", INT))
    assert check_backward(VWAP_V2, writer) == []


def test_fields_only_the_writer_has_are_ignored() -> None:
    writer = schema(
        Field(b"extra", ListOf(BOOL)), Field(b"price", FLOAT), Field(b"volume", INT), Field(b"venue", STRING)
    )
    assert check_backward(VWAP_V2, writer) == []


def test_fields_are_matched_by_name_not_position() -> None:
    reader = schema(Field(b"a", INT), Field(b"b", STRING))
    writer = schema(Field(b"b", STRING), Field(b"a", INT))
    assert check_backward(reader, writer) == []


def test_a_present_field_with_a_default_must_still_be_compatible() -> None:
    reader = schema(Field(b"venue", OptionOf(STRING), b"()"))
    writer = schema(Field(b"venue", INT))
    assert check_backward(reader, writer) == ["field venue: type mismatch (reader (Option String), writer Int)"]


# ---------------------------------------------------------------- primitive widening


@pytest.mark.parametrize(
    ("reader_t", "writer_t"),
    [(INT, INT32), (INT64, INT32), (INT64, INT), (INT, INT), (INT32, INT32), (FLOAT, FLOAT), (BOOL, BOOL)],
)
def test_compatible_primitives(reader_t: FieldType, writer_t: FieldType) -> None:
    assert one(reader_t, writer_t) == []
    assert compatible(reader_t, writer_t)


@pytest.mark.parametrize(
    ("reader_t", "writer_t", "text"),
    [
        (INT32, INT, "(reader Int32, writer Int)"),
        (INT32, INT64, "(reader Int32, writer Int64)"),
        (INT, INT64, "(reader Int, writer Int64)"),
        (FLOAT, INT, "(reader Float, writer Int)"),
        (INT, FLOAT, "(reader Int, writer Float)"),
        (STRING, BOOL, "(reader String, writer Bool)"),
        (BOOL, INT, "(reader Bool, writer Int)"),
    ],
)
def test_incompatible_primitives(reader_t: FieldType, writer_t: FieldType, text: str) -> None:
    assert one(reader_t, writer_t) == [f"field f: type mismatch {text}"]


# ---------------------------------------------------------------- options


def test_option_read_from_plain_value() -> None:
    assert one(OptionOf(STRING), STRING) == []
    assert one(OptionOf(INT64), INT32) == []
    assert one(OptionOf(OptionOf(INT)), INT) == []


def test_option_read_from_compatible_option() -> None:
    assert one(OptionOf(INT64), OptionOf(INT32)) == []
    assert one(OptionOf(OptionOf(INT64)), OptionOf(OptionOf(INT))) == []
    assert one(OptionOf(OptionOf(INT)), OptionOf(INT)) == []


def test_option_incompatible() -> None:
    assert one(OptionOf(INT), OptionOf(STRING)) == [
        "field f: type mismatch (reader (Option Int), writer (Option String))"
    ]
    assert one(OptionOf(INT32), OptionOf(INT)) == [
        "field f: type mismatch (reader (Option Int32), writer (Option Int))"
    ]
    # a plain reader cannot take the writer's None
    assert one(STRING, OptionOf(STRING)) == ["field f: type mismatch (reader String, writer (Option String))"]
    assert one(OptionOf(INT), OptionOf(OptionOf(INT))) == [
        "field f: type mismatch (reader (Option Int), writer (Option(Option Int)))"
    ]


# ---------------------------------------------------------------- lists


def test_lists_element_wise() -> None:
    assert one(ListOf(INT64), ListOf(INT32)) == []
    assert one(ListOf(OptionOf(INT)), ListOf(INT)) == []
    assert one(ListOf(ListOf(INT64)), ListOf(ListOf(INT))) == []
    assert one(ListOf(INT), ListOf(STRING)) == ["field f: type mismatch (reader (List Int), writer (List String))"]
    assert one(ListOf(INT), INT) == ["field f: type mismatch (reader (List Int), writer Int)"]
    assert one(INT, ListOf(INT)) == ["field f: type mismatch (reader Int, writer (List Int))"]


# ---------------------------------------------------------------- records


def test_records_field_by_field() -> None:
    writer = RecordOf((Field(b"px", FLOAT), Field(b"size", INT32), Field(b"extra", STRING)))
    assert one(RecordOf((Field(b"size", INT64), Field(b"px", FLOAT))), writer) == []
    assert one(RecordOf((Field(b"px", FLOAT), Field(b"venue", STRING, b'""'))), writer) == []


def test_records_missing_nested_field() -> None:
    reader = RecordOf((Field(b"a", INT), Field(b"c", FLOAT)))
    writer = RecordOf((Field(b"a", INT),))
    assert one(reader, writer) == [
        "field f: type mismatch (reader (Record(((name a)(typ Int)(default()))((name c)(typ Float)(default())))), "
        "writer (Record(((name a)(typ Int)(default())))))"
    ]


def test_records_nested_type_mismatch() -> None:
    reader = RecordOf((Field(b"a", INT32),))
    writer = RecordOf((Field(b"a", INT64),))
    assert one(reader, writer) == [
        "field f: type mismatch (reader (Record(((name a)(typ Int32)(default())))), "
        "writer (Record(((name a)(typ Int64)(default())))))"
    ]
    deep_r = RecordOf((Field(b"inner", RecordOf((Field(b"x", INT64),))),))
    deep_w = RecordOf((Field(b"inner", RecordOf((Field(b"x", INT32), Field(b"y", BOOL)))),))
    assert one(deep_r, deep_w) == []
    assert one(deep_w, deep_r) != []


def test_record_default_text_with_quotes_prints_as_sexp() -> None:
    reader = RecordOf((Field(b"v", OptionOf(STRING), b"()"), Field(b"n", INT)))
    writer = STRING
    assert one(reader, writer) == [
        'field f: type mismatch (reader (Record(((name v)(typ(Option String))(default("()")))'
        "((name n)(typ Int)(default())))), writer String)"
    ]


# ---------------------------------------------------------------- enums


def test_enums_every_writer_constructor_in_reader() -> None:
    abc = EnumOf((b"A", b"B", b"C"))
    assert one(abc, EnumOf((b"A", b"B"))) == []
    assert one(abc, EnumOf((b"C", b"A"))) == []  # by name
    assert one(abc, abc) == []
    assert one(EnumOf((b"A", b"B")), abc) == ["field f: type mismatch (reader (Enum(A B)), writer (Enum(A B C)))"]
    assert one(abc, EnumOf((b"A", b"D"))) == ["field f: type mismatch (reader (Enum(A B C)), writer (Enum(A D)))"]
    assert one(abc, STRING) == ["field f: type mismatch (reader (Enum(A B C)), writer String)"]
    assert one(OptionOf(abc), EnumOf((b"B",))) == []


# ---------------------------------------------------------------- several errors, in order


def test_all_errors_in_order_key_first() -> None:
    reader = Schema(
        b"vwap",
        3,
        INT,
        (
            Field(b"price", FLOAT),
            Field(b"volume", INT32),
            Field(b"venue", OptionOf(STRING), b"()"),
            Field(b"side", EnumOf((b"Buy", b"Sell"))),
            Field(b"note", STRING, b'""'),
        ),
    )
    writer = Schema(b"vwap", 2, STRING, (Field(b"volume", INT), Field(b"venue", STRING), Field(b"x", INT)))
    assert check_backward(reader, writer) == [
        "key: type mismatch (reader Int, writer String)",
        "missing field price",
        "field volume: type mismatch (reader Int32, writer Int)",
        "missing field side",
    ]


def test_names_with_odd_bytes_are_shown_as_text() -> None:
    reader = schema(Field("prix\u00e9".encode(), FLOAT))
    assert check_backward(reader, schema()) == ["missing field prix\u00e9"]
