"""Golden fixtures: bytes built by hand (pv_bytes, pv_fixtures) -> the exact
text, JSON and problems -> the same bytes again, in every chunking.

The files live in tests/golden/protocols/pravega/: NAME.bin (the stream,
what the CLI tests read), NAME.sexp (one canonical line per command),
NAME.jsonl (the JSON view of each), NAME.problems (the decoder's
problems).  Regenerate with RIPPLE_UPDATE_GOLDEN=1 after an intended
change, and review the diff.
"""

from __future__ import annotations

import pytest
from pv_bytes import DISSECTOR, W1, decode, lines
from pv_fixtures import BIG, CUT, E3, GOLDEN, JAVA_BATCHING, READS, RUST, STRINGS

from ripple_cli.protocols.base import DissectOptions
from ripple_cli.sexp.parse import parse_many
from tests.conftest import GOLDEN as GOLDEN_DIR
from tests.protocols.dissector_kit import (
    assert_encodes_back,
    assert_every_chunking_alike,
    assert_golden_split,
    golden_stream,
    messages,
)

DIR = "protocols/pravega"
WID = str(W1)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_fixture_bytes(name: str) -> None:
    golden_stream(DIR, name, GOLDEN[name])


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_fixture_text(name: str) -> None:
    assert_golden_split(DIR, name, decode([GOLDEN[name]]))


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_text_encodes_to_the_same_bytes(name: str) -> None:
    # bytes -> text -> bytes, through the golden text itself: every command
    # the decoder shows, odd ones included (only the framing damage of
    # "damaged" is not a command and is not written back).
    data = GOLDEN[name]
    assert_encodes_back(DISSECTOR, decode([data]), data)
    items = messages(decode([data]))
    text = (GOLDEN_DIR / DIR / f"{name}.sexp").read_bytes()
    encoded = [DISSECTOR.encode(tree) for tree in parse_many(text)]
    assert encoded == [data[m.offset : m.offset + m.size] for m in items]
    if name != "damaged":
        assert b"".join(encoded) == data


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_every_chunking_decodes_alike(name: str) -> None:
    assert_every_chunking_alike(lambda: DISSECTOR.stream(DissectOptions(), None), GOLDEN[name], seed=name)


def test_java_batching_text() -> None:
    # The block's tail is a PartialEvent holding the first CUT bytes of E3
    # (its header and the start of its payload); the AppendBlockEnd's data
    # is the rest, and the joined event is shown on it.
    assert CUT == 26 and len(E3) == 30
    assert lines(JAVA_BATCHING)[4:] == [
        f"(pravega(AppendBlock((writer_id {WID})(data((Event trade:AAPL:100)(Event trade:MSFT:250)"
        '(PartialEvent"\\000\\000\\000\\000\\000\\000\\000\\022{\\"sym\\":\\"NVDA\\",\\"qty"))))))'.encode(),
        f"(pravega(AppendBlockEnd((writer_id {WID})(size_of_whole_events 44)"
        '(data((Continuation"\\":7}")))(num_events 3)(last_event_number 3)(request_id 1)'
        '(completes_partial_event((Event"{\\"sym\\":\\"NVDA\\",\\"qty\\":7}"))))))'.encode(),
        f"(pravega(DataAppended((writer_id {WID})(event_number 3)(previous_event_number -9223372036854775808)"
        "(request_id 1)(current_segment_write_offset 74))))".encode(),
        f'(pravega(AppendBlock((writer_id {WID})(data((Event"\\000\\001binary\\255")(Padding 53))))))'.encode(),
        f"(pravega(AppendBlockEnd((writer_id {WID})(size_of_whole_events 17)(data())(num_events 1)"
        "(last_event_number 4)(request_id 1))))".encode(),
        f"(pravega(DataAppended((writer_id {WID})(event_number 4)(previous_event_number 3)(request_id 1)"
        "(current_segment_write_offset 91))))".encode(),
    ]
    block = messages(decode([JAVA_BATCHING]))[4]
    assert block.size == 8 + 16 + 70 + 8  # the length announced blockSize + 8 ahead
    assert block.fields["data"]["records"][-1] == {
        "kind": "PartialEvent",
        "offset": 44,
        "size": 34,
        "data": '\x00\x00\x00\x00\x00\x00\x00\x16{"sym":"NVDA","qty',
    }
    end = messages(decode([JAVA_BATCHING]))[5]
    assert end.fields["completes_partial_event"] == [
        {"kind": "Event", "offset": 0, "size": 30, "data": '{"sym":"NVDA","qty":7}'}
    ]
    assert end.summary == "writer 6f1c2b3a: 3 events up to #3, whole 44 bytes; 0 events in 4 bytes, Continuation 4"


def test_rust_client_text() -> None:
    ms = messages(decode([RUST]))
    assert [m.type for m in ms] == ["Hello", "Hello", "SetupAppend", "AppendSetup", "AppendBlockEnd", "DataAppended"]
    assert ms[4].line == (
        b"(pravega(AppendBlockEnd((writer_id 6f1c2b3a-0000-4000-8000-00000000b002)(size_of_whole_events 74)"
        b'(data((Event trade:AAPL:100)(Event trade:MSFT:250)(Event"{\\"sym\\":\\"NVDA\\",\\"qty\\":7}")))'
        b"(num_events 3)(last_event_number 44)(request_id 7))))"
    )
    assert ms[4].fields["data"]["event_count"] == 3
    assert ms[2].fields["delegation_token"] == "token-abc"
    assert ms[2].direction == "request" and ms[3].direction == "reply" and ms[0].direction is None


def test_reads_split_and_joined() -> None:
    ms = messages(decode([READS]))
    reads = [m for m in ms if m.type == "SegmentRead"]
    assert [r.fields["data"]["event_count"] for r in reads] == [3, 1, 0, 0, 0]
    assert [[rec["kind"] for rec in r.fields["data"]["records"]] for r in reads] == [
        ["Event", "Event", "Event"],
        ["Event", "Fragment"],
        ["Continuation", "Fragment"],
        ["Continuation"],
        ["Continuation"],
    ]
    assert [r.fields.get("completes_event") for r in reads] == [
        None,
        None,
        [{"kind": "Event", "offset": 0, "size": 22, "data": "trade:AAPL:100"}],
        None,
        [{"kind": "Event", "offset": 0, "size": len(BIG), "data": "x" * 40}],
    ]
    assert reads[4].fields["at_tail"] is True and reads[4].fields["end_of_segment"] is True
    assert reads[0].summary == "examples/trades/0.#epoch.0 at 0: 3 events in 74 bytes"


def test_strings_text() -> None:
    segs = [m.fields["segment"] for m in messages(decode([STRINGS]))]
    assert segs == [
        "nul\x00inside",
        "café €5",
        "emoji \U0001f600 pair",
        {"base64": "bG9uZSDtoIAgaGFsZg=="},  # a lone surrogate is no valid UTF-8: base64 of its 3 bytes
        "rust \U0001f600",
        "raw\x00nul",
        "overAlong",
        {"base64": "Y3V0IOKC"},
    ]
    assert (
        lines(STRINGS)[0]
        == (
            f'(pravega(SetupAppend((request_id 1)(writer_id {WID})(segment"nul\\000inside")(delegation_token""))))'
        ).encode()
    )
    assert b'(segment(raw"rust \\240\\159\\152\\128"))' in lines(STRINGS)[4]
