"""Text -> bytes (`ripple encode`): the draft's defaults, derived fields,
and a one-line error naming what is wrong."""

from __future__ import annotations

import pytest
from rs_bytes import DISSECTOR, int32, last_part, on_next, on_next_packed, on_subscribe, subscribe

from ripple_cli.protocols.base import EncodeError
from ripple_cli.sexp.parse import parse_one


def enc(text: str) -> bytes:
    return DISSECTOR.encode(parse_one(text.encode()))


def test_defaults_of_the_draft() -> None:
    # initialDemand: Long = 0, elementSize: varint = 0; a hello with no extensions.
    assert enc("(reactive-streams(Subscribe((publisher p)(subscriber 1))))") == subscribe(b"p", 1, 0)
    assert enc("(reactive-streams(OnSubscribe((subscriber 1))))") == on_subscribe(1, 0)
    assert enc("(reactive-streams(OnNext((subscriber 1)(element hi))))") == on_next(1, b"hi")
    assert enc("(reactive-streams(ClientHello((version 0))))") == b"\x01\x00\x00"


def test_field_order_is_free() -> None:
    assert enc("(reactive-streams(Subscribe((subscriber 1)(initial_demand 2)(publisher p))))") == subscribe(b"p", 1, 2)


def test_fixed_size_elements() -> None:
    assert enc("(reactive-streams(OnNext((subscriber 1)(element_size 4)(element abcd))))") == on_next(
        1, b"abcd", fixed=True
    )
    packed = (
        "(reactive-streams(OnNextPacked((subscriber 9)(element_size 4)(count 2)"
        '(elements("\\000\\000\\000\\001" abcd)))))'
    )
    assert enc(packed) == on_next_packed(9, [int32(1), b"abcd"])
    # count may be left out: it is the number of elements.
    assert enc("(reactive-streams(OnNextPacked((subscriber 9)(element_size 1)(elements(a b)))))") == on_next_packed(
        9, [b"a", b"b"]
    )


def test_derived_fields_are_not_encoded() -> None:
    text = "(reactive-streams(OnNextLastPart((subscriber 1)(element_id 7)(data world)(parts 3)(element whatever))))"
    assert enc(text) == last_part(1, 7, b"world")


def test_raw_is_its_bytes() -> None:
    assert enc('(reactive-streams(Raw((data"\\000\\001xyz"))))') == b"\x00\x01xyz"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("(lumberjack(Window((version 2)(count 3))))", "expected (reactive-streams(Type((field value)...)))"),
        ("(reactive-streams Request)", "expected one message constructor with its record: (Type((field value)...))"),
        (
            "(reactive-streams(Reqest((subscriber 1))))",
            "unknown message type 'Reqest' (known: ClientHello, ServerHello, Subscribe, Request, Cancel, OnSubscribe, "
            "OnNext, OnComplete, OnError, OnNextPacked, OnNextPart, OnNextLastPart, Goodbye, GoodbyeAck, Raw)",
        ),
        ("(reactive-streams(Request((subscriber 1))))", "Request: missing field demand"),
        ("(reactive-streams(Request((subscriber 1)(demand 1)(demand 2))))", "Request: field demand given twice"),
        (
            "(reactive-streams(Request((subscriber 1)(demand 1)(extra 2))))",
            "Request: unknown field extra (fields: subscriber, demand)",
        ),
        ("(reactive-streams(Request((subscriber -1)(demand 1))))", "field subscriber: '-1' is not a decimal integer"),
        (
            "(reactive-streams(Request((subscriber 1)(demand 9223372036854775808))))",
            "field demand: 9223372036854775808 is above 9223372036854775807",
        ),
        (
            "(reactive-streams(Cancel((subscriber 18446744073709551616))))",
            "field subscriber: 18446744073709551616 is above 18446744073709551615",
        ),
        (  # more digits than Python's int() reads (4,300): a ValueError (exit 70) before
            "(reactive-streams(Request((subscriber 1)(demand " + "0" * 5000 + "1" * 4301 + "))))",
            "field demand: a number of 4301 digits is above 9223372036854775807",
        ),
        ("(reactive-streams(ClientHello((version 256))))", "field version: 256 is above 255"),
        (
            "(reactive-streams(ClientHello((version 0)(extensions 1))))",
            "field extensions: expected a list, got an atom",
        ),
        ("(reactive-streams(OnError((subscriber 1)(error(a b)))))", "field error: expected an atom, got a list"),
        (
            "(reactive-streams(OnNext((subscriber 1)(element_size 4)(element abc))))",
            "OnNext element of 3 bytes in a subscription of element_size 4",
        ),
        (
            "(reactive-streams(OnNextPacked((subscriber 1)(element_size 2)(count 3)(elements(ab cd)))))",
            "OnNextPacked: count 3 but 2 elements",
        ),
        (
            "(reactive-streams(OnNextPacked((subscriber 1)(element_size 2)(elements(ab c)))))",
            "OnNextPacked element 1 has 1 bytes, not element_size 2",
        ),
        (
            "(reactive-streams(OnNextPacked((subscriber 1)(elements(ab)))))",
            "OnNextPacked of 1 elements needs an element_size above 0",
        ),
        ("(reactive-streams(Goodbye(reason)))", "Goodbye: expected record fields (name value)"),
    ],
)
def test_errors(text: str, error: str) -> None:
    with pytest.raises(EncodeError) as e:
        enc(text)
    assert str(e.value) == error
