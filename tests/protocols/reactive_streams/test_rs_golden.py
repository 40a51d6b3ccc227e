"""Golden fixtures: bytes built by hand (rs_bytes) -> the exact text and JSON
-> the same bytes again, in every chunking.

The fixture files live in tests/golden/protocols/reactive_streams/: NAME.bin
(the stream), NAME.sexp (one canonical line per message), NAME.jsonl (the
JSON view of each), NAME.problems (the decoder's problems).  Regenerate with
RIPPLE_UPDATE_GOLDEN=1 after an intended change, and review the diff.
"""

from __future__ import annotations

import pytest
from rs_bytes import CLEAN, CONVERSATION, DISSECTOR, ODD, VIOLATIONS, decode

from ripple_cli.protocols.base import DissectOptions
from ripple_cli.sexp.parse import parse_many
from tests.conftest import GOLDEN
from tests.protocols.dissector_kit import (
    assert_encodes_back,
    assert_every_chunking_alike,
    assert_golden_split,
    golden_stream,
    messages,
    problems,
)

DIR = "protocols/reactive_streams"
FIXTURES: dict[str, bytes] = {
    "conversation": CONVERSATION,
    "odd": ODD,
    **{f"clean-{k}": v for k, v in CLEAN.items() if k != "conversation"},
    **{f"verify-{k}": v for k, (v, _p) in VIOLATIONS.items()},
}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fixture_bytes(name: str) -> None:
    # The .bin files are what the hand-written builders give (and what the
    # CLI tests read).
    golden_stream(DIR, name, FIXTURES[name])


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fixture_text(name: str) -> None:
    assert_golden_split(DIR, name, decode([FIXTURES[name]]))


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_text_encodes_to_the_same_bytes(name: str) -> None:
    # bytes -> text -> bytes, through the golden text itself.
    assert_encodes_back(DISSECTOR, decode([FIXTURES[name]]), FIXTURES[name])
    lines = (GOLDEN / DIR / f"{name}.sexp").read_bytes()
    assert b"".join(DISSECTOR.encode(tree) for tree in parse_many(lines)) == FIXTURES[name]


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_every_chunking_decodes_alike(name: str) -> None:
    assert_every_chunking_alike(lambda: DISSECTOR.stream(DissectOptions(), None), FIXTURES[name], seed=name)


def test_conversation_text() -> None:
    # The golden file, spelled out: every message type of the draft.
    expected = [
        b"(reactive-streams(ClientHello((version 0)(extensions(1 300)))))",
        b"(reactive-streams(ServerHello((version 0)(extensions(1)))))",
        b"(reactive-streams(Subscribe((publisher trades)(subscriber 1)(initial_demand 0))))",
        b"(reactive-streams(OnSubscribe((subscriber 1)(element_size 0))))",
        b"(reactive-streams(Request((subscriber 1)(demand 3))))",
        b'(reactive-streams(OnNext((subscriber 1)(element_size 0)(element"{\\"px\\":101.5}"))))',
        b'(reactive-streams(OnNext((subscriber 1)(element_size 0)(element""))))',
        b'(reactive-streams(OnNextPart((subscriber 1)(element_id 7)(data"hello, "))))',
        b'(reactive-streams(OnNextPart((subscriber 1)(element_id 7)(data"split "))))',
        b"(reactive-streams(OnNextLastPart((subscriber 1)(element_id 7)(data world)(parts 3)"
        b'(element"hello, split world"))))',
        b"(reactive-streams(Subscribe((publisher ticks)(subscriber 2)(initial_demand 8))))",
        b"(reactive-streams(OnSubscribe((subscriber 2)(element_size 4))))",
        b'(reactive-streams(OnNext((subscriber 2)(element_size 4)(element"\\000\\000\\000*"))))',
        b"(reactive-streams(OnNextPacked((subscriber 2)(element_size 4)(count 3)"
        b'(elements("\\000\\000\\000\\001""\\000\\000\\000\\002""\\000\\000\\000\\003")))))',
        b"(reactive-streams(Cancel((subscriber 2))))",
        b"(reactive-streams(Request((subscriber 1)(demand 9223372036854775807))))",
        b"(reactive-streams(OnNext((subscriber 1)(element_size 0)(element last))))",
        b"(reactive-streams(OnComplete((subscriber 1))))",
        b"(reactive-streams(Subscribe((publisher trades?from=2)(subscriber 1)(initial_demand 5))))",
        b"(reactive-streams(OnSubscribe((subscriber 1)(element_size 0))))",
        b'(reactive-streams(OnError((subscriber 1)(error"publisher gone \\226\\128\\148 restart"))))',
        b"(reactive-streams(Goodbye((reason done))))",
        b"(reactive-streams(GoodbyeAck((message bye))))",
    ]
    items = decode([CONVERSATION])
    assert problems(items) == []
    assert [m.line for m in messages(items)] == expected


def test_conversation_json() -> None:
    ms = messages(decode([CONVERSATION]))
    assert [m.type for m in ms][:3] == ["ClientHello", "ServerHello", "Subscribe"]
    assert ms[0].to_json({"connection": 1}) == {
        "v": 1,
        "connection": 1,
        "protocol": "reactive-streams",
        "offset": 0,
        "size": 6,
        "type": "ClientHello",
        "version": 0,
        "extensions": [1, 300],
    }
    last = ms[9]
    assert last.fields == {
        "subscriber": 1,
        "element_id": 7,
        "data": "world",
        "parts": 3,
        "element": "hello, split world",
    }
    assert ms[13].fields == {
        "subscriber": 2,
        "element_size": 4,
        "count": 3,
        "elements": ["\x00\x00\x00\x01", "\x00\x00\x00\x02", "\x00\x00\x00\x03"],
    }
    assert ms[20].fields["error"] == "publisher gone \u2014 restart"
    assert [m.direction for m in ms[:6]] == [None, None, "subscriber", "publisher", "subscriber", "publisher"]


def test_odd_bytes() -> None:
    items = decode([ODD])
    assert [(p.offset, p.kind, p.severity.value) for p in problems(items)] == [
        (3, "bad_utf8", "warning"),
        (9, "bad_varint", "error"),
        (13, "bad_long", "error"),
        (32, "unknown_type", "error"),
    ]
    assert [m.line for m in messages(items)] == [
        b"(reactive-streams(ClientHello((version 0)(extensions()))))",
        b'(reactive-streams(Subscribe((publisher"\\255\\254")(subscriber 3)(initial_demand 0))))',
        b'(reactive-streams(Raw((data"\\004\\131\\000\\005"))))',
        b'(reactive-streams(Raw((data"\\004\\003\\128\\128\\128\\128\\128\\128\\128\\128\\128\\001"))))',
        b"(reactive-streams(OnSubscribe((subscriber 3)(element_size 2))))",
        b"(reactive-streams(OnNext((subscriber 3)(element_size 2)(element ab))))",
        b'(reactive-streams(Raw((data"\\000\\007\\003cd"))))',
    ]
    assert problems(items)[1].detail == "Request subscriber is a non-minimal varint (2 bytes for 3)"
    assert problems(items)[2].detail == "Request demand 9223372036854775808 does not fit a Long"
    assert problems(items)[3].detail == "unknown message type code 0; the rest of this direction is shown raw"
