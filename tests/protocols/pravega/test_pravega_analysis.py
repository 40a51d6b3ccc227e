"""The connection analyzer (`verify`'s rules): exact problems for
conversations that break each rule, none for clean ones, and the
connection view (each side its own stream) against the raw one."""

from __future__ import annotations

import pytest
from pv_bytes import (
    DISSECTOR,
    NEW_WRITER,
    SEG,
    W1,
    W2,
    analyze,
    append_block,
    append_block_end,
    append_setup,
    conditional_append,
    conditional_check_failed,
    data_appended,
    event,
    hello,
    no_such_segment,
    setup_append,
    wrong_host,
)
from pv_fixtures import CLEAN, E1, E2, JAVA_BATCHING, PRAVEGA_STEPS, S12, VIOLATIONS

from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.base import ConnectionAnalyzer, DissectOptions
from tests.protocols.dissector_kit import messages

A, B = str(W1), str(W2)

EXPECTED: dict[str, list[tuple[int, str, str, str]]] = {
    "no_hello": [
        (0, "no_hello", "warning", "the client's first message is SetupAppend, not Hello"),
        (62, "no_hello", "warning", "the server's first message is AppendSetup, not Hello"),
    ],
    "bad_version_range": [
        (0, "bad_version_range", "warning", "high version 6 below low version 10"),
    ],
    "version_mismatch": [
        (16, "version_mismatch", "error", "client versions 2..4, server versions 5..17"),
    ],
    "not_closed": [
        (16, "version_mismatch", "error", "client versions 2..4, server versions 5..17"),
        (32, "not_closed", "error", "AppendSetup from the server after incompatible Hellos"),
    ],
    "setup_missing": [
        (32, "setup_missing", "error", f"AppendBlock for writer {A}, which no SetupAppend set up"),
    ],
    "block_interrupted": [
        (230, "block_interrupted", "error", "KeepAlive while the AppendBlock at offset 162 is open"),
    ],
    "block_writer_mismatch": [
        (360, "block_writer_mismatch", "error", f"AppendBlockEnd of writer {B} ends the block of writer {A}"),
    ],
    "block_unfinished": [
        (162, "block_unfinished", "error", f"the AppendBlock of writer {A} at offset 162 never ended"),
    ],
    "bad_num_events": [
        (208, "bad_num_events", "error", "numEvents is 0"),
    ],
    "bad_block_size": [
        (230, "bad_block_size", "error", "sizeOfWholeEvents 45 is outside the block's 44 bytes of data"),
    ],
    "bad_block_tail": [
        (
            242,
            "bad_block_tail",
            "error",
            "the block's 34 bytes past sizeOfWholeEvents 22 are Event, PartialEvent, "
            "not exactly one PartialEvent or Padding",
        ),
    ],
    "padding_with_data": [
        (236, "padding_with_data", "error", "the block ends with Padding but AppendBlockEnd has data"),
    ],
    "event_count_mismatch": [
        (230, "event_count_mismatch", "warning", "numEvents is 5 but the appended data holds 2 Event records"),
    ],
    "event_number_backwards": [
        (282, "event_number_backwards", "error", f"writer {A}: event #1 after #2"),
    ],
    "event_number_repeated": [
        (219, "event_number_repeated", "error", f"writer {A}: event #2 again"),
    ],
    "bad_event_type": [
        (162, "bad_event_type", "error", "block data: a record of type 7 (Command) at 22, not an Event"),
    ],
    "bad_event_data": [
        (162, "bad_event_data", "error", "data: 10 bytes at 22 are not a whole record"),
        (162, "event_count_mismatch", "warning", "numEvents is 2 but the appended data holds 1 Event record"),
    ],
    "misplaced_command": [
        (162, "misplaced_command", "error", "Event as a command of its own, outside any data"),
    ],
    "ack_unknown_event": [
        (338, "ack_unknown_event", "error", f"writer {A}: ack of #9, up to #2 sent"),
    ],
    "ack_backwards": [
        (338, "ack_backwards", "error", f"writer {A}: ack of #1 after #2"),
    ],
    "ack_previous_mismatch": [
        (
            282,
            "ack_previous_mismatch",
            "warning",
            f"writer {A}: previousEventNumber 0, but the previous ack was none (a new writer)",
        ),
    ],
    "unacked_events": [
        (282, "unacked_events", "error", f"writer {A}: events up to #3 sent, acked up to #2"),
    ],
}


def test_every_rule_has_a_fixture() -> None:
    assert sorted(EXPECTED) == sorted(VIOLATIONS)
    kinds = {k for probs in EXPECTED.values() for _o, k, _s, _d in probs}
    assert kinds == set(DISSECTOR.problem_kinds) - {
        # the decoder's own kinds (test_pravega_stream, STREAM_VIOLATIONS)
        "bad_header",
        "too_large",
        "truncated",
        "gap",
        "unknown_type",
        "bad_body",
        "bad_string",
        "bad_bool",
        "trailing_bytes",
        "nonzero_padding",
    }


@pytest.mark.parametrize("name", sorted(VIOLATIONS))
def test_violation(name: str) -> None:
    data, kinds = VIOLATIONS[name]
    got = [(p.offset, p.kind, p.severity.value, p.detail) for p in analyze(data)]
    assert got == EXPECTED[name]
    assert [k for _o, k, _s, _d in got] == kinds


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_clean_conversations_break_no_rule(name: str) -> None:
    assert analyze(CLEAN[name]) == []


def observe(sides: list[tuple[bool, bytes]], analyzer: ConnectionAnalyzer | None = None) -> list[Problem]:
    """A connection: each (from_client, bytes) decoded by its side's
    stream and observed in that order, one millisecond apart."""
    streams = {c: DISSECTOR.stream(DissectOptions(), c) for c in (True, False)}
    analyzer = analyzer or DISSECTOR.analyzer(DissectOptions())
    assert analyzer is not None
    out: list[Problem] = []
    for k, (from_client, data) in enumerate(sides):
        analyzer.time_ns = 1_000_000 * k
        for m in messages(streams[from_client].feed(data)):
            out += analyzer.observe(from_client, m)
    return out + analyzer.close()


def test_a_connection_where_replies_interleave_with_a_block() -> None:
    # The server's ack may arrive while the client's next block is open:
    # only the client's own commands may not interrupt it.
    setup = (True, hello() + setup_append(1, W1, SEG))
    out = observe(
        [
            setup,
            (False, hello() + append_setup(1, SEG, W1)),
            (True, append_block(W1, E1 + E2) + append_block_end(W1, S12, b"", 2, 2, 1)),
            (True, append_block(W1, E1)),
            (False, data_appended(W1, 2, NEW_WRITER, 1, S12)),
            (True, append_block_end(W1, len(E1), b"", 1, 3, 1)),
            (False, data_appended(W1, 3, 2, 1, S12 + len(E1))),
        ]
    )
    assert out == []


def test_hello_and_keepalive_take_their_side_from_the_connection() -> None:
    # Two Hellos from the client are not a client/server pair.
    out = observe([(True, hello(4, 2) + hello(4, 2)), (False, hello())])
    assert [(p.kind, p.detail) for p in out] == [("version_mismatch", "client versions 2..4, server versions 5..17")]


def test_without_the_server_side_no_ack_is_expected() -> None:
    # A raw file of the client's bytes alone: nothing was acked, and that
    # is not a problem (the other direction is simply not there).
    client_only = (
        hello() + setup_append(1, W1, SEG) + append_block(W1, E1) + append_block_end(W1, len(E1), b"", 1, 1, 1)
    )
    assert analyze(client_only) == []


def test_a_failed_writer_is_not_expected_to_be_acked() -> None:
    base = hello() + hello() + setup_append(1, W1, SEG) + append_setup(1, SEG, W1)
    sent = base + conditional_append(W1, 1, 0, b"x", 1) + conditional_append(W1, 2, 0, b"y", 1)
    assert [p.kind for p in analyze(sent)] == ["unacked_events"]
    assert analyze(sent + wrong_host(1, SEG, "elsewhere:12345")) == []
    assert analyze(sent + no_such_segment(1, SEG)) == []
    assert [p.kind for p in analyze(sent + no_such_segment(99, "other"))] == ["unacked_events"]
    # A refused conditional append is answered too.
    assert analyze(sent + data_appended(W1, 1, NEW_WRITER, 1, 9) + conditional_check_failed(W1, 2, 1)) == []


def test_an_existing_writer_resumes_after_its_last_event() -> None:
    # AppendSetup says the segment already has the writer's events up to 41.
    base = hello() + hello() + setup_append(1, W2, SEG) + append_setup(1, SEG, W2, 41)
    # (the server does not ack a repeat: nothing above its last ack)
    again = base + append_block_end(W2, 0, event(b"dup"), 1, 41, 1)
    assert [(p.kind, p.detail) for p in analyze(again)] == [
        ("event_number_repeated", f"writer {B}: event #41 again"),
    ]
    ok = base + append_block_end(W2, 0, event(b"new"), 1, 42, 1) + data_appended(W2, 42, 41, 1, 0)
    assert analyze(ok) == []


def test_acks_in_the_batching_conversation() -> None:
    # The clean Java batching fixture, acks taken away: both events are unacked.
    no_acks = JAVA_BATCHING.replace(data_appended(W1, 3, NEW_WRITER, 1, 74), b"").replace(
        data_appended(W1, 4, 3, 1, 91), b""
    )
    assert [(p.offset, p.kind, p.detail) for p in analyze(no_acks)] == [
        (264, "unacked_events", f"writer {A}: events up to #4 sent, acked up to none"),
    ]


def test_the_connection_report() -> None:
    analyzer = DISSECTOR.analyzer(DissectOptions())
    assert analyzer is not None
    out = observe([(c, data) for step in PRAVEGA_STEPS for c, data in ((True, step[0]), (False, step[1]))], analyzer)
    assert out == []
    assert analyzer.report() == {
        "hello": {"client": "5..17", "server": "5..17"},
        "writers": {
            A: {
                "segment": SEG,
                "appends": 2,
                "events": 4,
                "last_event_number": 4,
                "acked": 4,
                "max_ack_latency_ns": 1_000_000,  # each block acked in the next step
            }
        },
        "reads": {"requests": 1, "replies": 1, "bytes": 91, "events": 4},
    }
    empty = DISSECTOR.analyzer(DissectOptions())
    assert empty is not None and empty.report() is None


def test_problems_at_the_end_name_the_client_side() -> None:
    sides = [(True, hello()), (False, hello()), (True, setup_append(1, W1, SEG)), (True, append_block(W1, E1))]
    sides += [(True, conditional_append(W1, 1, 0, b"x", 1))]
    out = observe(sides)
    assert [(p.kind, p.offset, p.extra) for p in out] == [
        ("block_interrupted", 124, {}),
        ("block_unfinished", 78, {"from_client": True}),
        ("unacked_events", 124, {"from_client": True}),
    ]
    out = observe([(True, hello()), (False, hello()), (True, setup_append(1, W1, SEG)), (True, append_block(W1, E1))])
    assert [(p.kind, p.offset, p.extra) for p in out] == [("block_unfinished", 78, {"from_client": True})]
    # A raw file has no sides to name.
    assert [p.extra for p in analyze(hello() + hello() + setup_append(1, W1, SEG) + append_block(W1, E1))] == [{}]
