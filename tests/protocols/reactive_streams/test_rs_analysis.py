"""The connection rules (`verify`): exact problem lists for hand-built
conversations, as one transcript (a raw file) and with each message's side."""

from __future__ import annotations

import pytest
from rs_bytes import (
    CLEAN,
    CLEAN_WARNINGS,
    UNBOUNDED,
    VIOLATIONS,
    analyze,
    cancel,
    client_hello,
    decode,
    goodbye,
    goodbye_ack,
    last_part,
    on_complete,
    on_error,
    on_next,
    on_next_packed,
    on_subscribe,
    part,
    request,
    server_hello,
    subscribe,
)

from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.protocols.reactive_streams import PROBLEM_KINDS, WARNING_KINDS
from tests.protocols.dissector_kit import kinds, problems

C, S = True, False  # from_client


def conversation(*steps: tuple[bool, bytes]) -> list[Problem]:
    """Each side's messages decoded on its own direction, then analysed in
    the order given (capture order)."""
    offsets = {C: 0, S: 0}
    items = []
    sides: list[bool | None] = []
    streams = {C: b"", S: b""}
    for side, data in steps:
        streams[side] += data
    decoded = {side: [m for m in decode([data]) if not isinstance(m, Problem)] for side, data in streams.items()}
    taken = {C: 0, S: 0}
    for side, data in steps:
        # The messages of this step: those of its side starting within its bytes.
        start = offsets[side]
        offsets[side] += len(data)
        while taken[side] < len(decoded[side]) and decoded[side][taken[side]].offset < offsets[side]:
            assert decoded[side][taken[side]].offset >= start
            items.append(decoded[side][taken[side]])
            sides.append(side)
            taken[side] += 1
    return analyze(items, sides)


@pytest.mark.parametrize("name", sorted(VIOLATIONS))
def test_each_rule_broken(name: str) -> None:
    data, expected = VIOLATIONS[name]
    items = decode([data])
    assert problems(items) == []
    assert kinds(analyze(items)) == expected


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_clean_conversations(name: str) -> None:
    items = decode([CLEAN[name]])
    assert problems(items) == []
    found = analyze(items)
    assert kinds(found) == CLEAN_WARNINGS.get(name, [])
    assert all(p.severity is Severity.WARNING for p in found)


def test_every_violation_fixture_fails_with_an_error() -> None:
    # verify exits 1 on each: at least one problem of error severity.
    for name, (data, _expected) in VIOLATIONS.items():
        found = analyze(decode([data]))
        assert any(p.severity is Severity.ERROR for p in found), name


def test_severities_match_the_documented_kinds() -> None:
    everything = [p for data, _e in VIOLATIONS.values() for p in analyze(decode([data]))]
    everything += [p for data in CLEAN.values() for p in analyze(decode([data]))]
    for p in everything:
        assert p.kind in PROBLEM_KINDS
        assert (p.severity is Severity.WARNING) == (p.kind in WARNING_KINDS), p


def test_demand_details() -> None:
    data, _ = VIOLATIONS["demand_exceeded_packed"]
    (p,) = analyze(decode([data]))
    assert p.detail == (
        "OnNextPacked of 3 elements for subscriber 1 beyond its demand: 2 outstanding (2 granted, 0 delivered)"
    )
    assert p.extra == {"subscriber": 1}
    data, _ = VIOLATIONS["demand_exceeded"]
    (p,) = analyze(decode([data]))
    assert p.detail == "OnNext of an element for subscriber 1 beyond its demand: 0 outstanding (1 granted, 1 delivered)"


def test_demand_adds_up_and_parts_count_once() -> None:
    steps = [
        (C, client_hello()),
        (S, server_hello()),
        (C, subscribe(b"p", 5, 1)),
        (S, on_subscribe(5, 2)),
        (C, request(5, 2)),
        (S, on_next(5, b"ab", fixed=True)),  # 2 left
        (S, part(5, 1, b"x")),  # parts are not elements
        (S, part(5, 1, b"y")),
        (S, last_part(5, 1, b"z")),  # 1 left
        (S, on_next_packed(5, [b"cd"])),  # 0 left
        (S, on_next_packed(5, [])),  # nothing delivered
        (S, on_next(5, b"ef", fixed=True)),  # one too many
    ]
    found = conversation(*steps)
    assert [(p.kind, p.offset) for p in found] == [("demand_exceeded", 3 + 3 + 4 + 5 + 5 + 5 + 5 + 3)]
    assert found[0].detail.endswith("0 outstanding (3 granted, 3 delivered)")


def test_unbounded_demand_is_sticky() -> None:
    found = conversation(
        (C, client_hello()),
        (S, server_hello()),
        (C, subscribe(b"p", 1, 3)),
        (C, request(1, UNBOUNDED - 1)),  # 3 + (MAX-1): at or above Long.MAX_VALUE
        (S, on_subscribe(1)),
        *[(S, on_next(1, b"x")) for _ in range(10)],
    )
    assert found == []


def test_both_sides_subscribe_with_the_same_id() -> None:
    # Ids are the subscriber's: the client's 1 and the server's 1 are two
    # subscriptions, each published by the other side.
    found = conversation(
        (C, client_hello()),
        (S, server_hello()),
        (C, subscribe(b"from-server", 1, 1)),
        (S, subscribe(b"from-client", 1, 2)),
        (C, on_subscribe(1)),  # the client publishes the server's 1
        (S, on_subscribe(1)),
        (C, on_next(1, b"a")),
        (C, on_next(1, b"b")),  # server's subscription: demand 2, fine
        (S, on_next(1, b"c")),  # client's subscription: demand 1, fine
        (S, on_complete(1)),
        (C, cancel(1)),  # the client's own Id 1 after it completed: crossing
        (C, on_next(1, b"d")),  # the server's 1: beyond its demand of 2
    )
    assert [(p.kind, p.severity.value) for p in found] == [
        ("in_flight_after_terminal", "warning"),
        ("demand_exceeded", "error"),
    ]


def test_wrong_hello_and_before_hello_per_side() -> None:
    found = conversation(
        (S, client_hello()),  # the server sends a ClientHello
        (C, subscribe(b"p", 1)),  # the client before its hello
        (C, request(1, 1)),  # reported once per side
        (C, client_hello()),
    )
    assert kinds(found) == [(0, "wrong_hello"), (0, "before_hello")]
    assert found[1].detail == "Subscribe before any hello from the client"


def test_pipelining_after_own_hello_is_fine() -> None:
    # The loose handshake: the client subscribes before the serverHello.
    found = conversation(
        (C, client_hello() + subscribe(b"p", 1, 1)),
        (S, server_hello() + on_subscribe(1) + on_next(1, b"x")),
    )
    assert found == []


def test_in_flight_signals_after_cancel_are_warnings() -> None:
    found = conversation(
        (C, client_hello()),
        (S, server_hello()),
        (C, subscribe(b"p", 1, 5)),
        (S, on_subscribe(1)),
        (C, cancel(1)),
        (S, on_next(1, b"a")),  # sent before the cancel arrived
        (C, subscribe(b"p", 1, 1)),  # Id reused after its cancel: allowed
        (S, on_next(1, b"b")),  # still the cancelled one's, in flight
        (S, on_complete(1)),
        (S, on_subscribe(1)),  # the new subscription starts
        (S, on_next(1, b"c")),
    )
    assert [(p.kind, p.severity.value) for p in found] == [
        ("in_flight_after_cancel", "warning"),
        ("in_flight_after_cancel", "warning"),
        ("in_flight_after_cancel", "warning"),
    ]


def test_publisher_after_its_own_terminal_is_an_error() -> None:
    found = conversation(
        (C, client_hello()),
        (S, server_hello()),
        (C, subscribe(b"p", 1, 5)),
        (S, on_subscribe(1)),
        (S, on_error(1, b"boom")),
        (S, on_next(1, b"a")),
        (S, on_complete(1)),
    )
    assert [p.kind for p in found] == ["after_terminal", "after_terminal"]
    assert found[0].detail == "OnNext for subscriber 1 after its OnError at offset 6"


def test_cancel_twice_is_after_cancel() -> None:
    found = conversation(
        (C, client_hello()),
        (S, server_hello()),
        (C, subscribe(b"p", 1)),
        (S, on_subscribe(1)),
        (C, cancel(1)),
        (C, cancel(1)),
    )
    assert [p.kind for p in found] == ["after_cancel"]


def test_unfinished_element_after_cancel_is_not_reported() -> None:
    # The publisher stops on cancel: a half-sent element is expected then.
    found = conversation(
        (C, client_hello()),
        (S, server_hello()),
        (C, subscribe(b"p", 1, 1)),
        (S, on_subscribe(1)),
        (S, part(1, 3, b"half")),
        (C, cancel(1)),
    )
    assert found == []


def test_unfinished_element_detail() -> None:
    data, _ = VIOLATIONS["unfinished_element"]
    (p,) = analyze(decode([data]))
    assert p.detail == (
        "element 9 of subscriber 1 was split (1 part from offset 14) and its OnComplete came before its OnNextLastPart"
    )


def test_version_mismatch_answered_by_the_server() -> None:
    found = conversation(
        (C, client_hello(3)),
        (S, server_hello(0)),
        (S, goodbye(b"unsupported version 3")),
    )
    assert [(p.kind, p.offset) for p in found] == [("unsupported_version", 0)]


def test_version_mismatch_unanswered() -> None:
    found = conversation(
        (C, client_hello(0)),
        (S, server_hello(2)),
        (C, subscribe(b"p", 1)),
    )
    assert [(p.kind, p.offset) for p in found] == [("unsupported_version", 0), ("goodbye_missing", 0)]
    assert found[1].detail == "the hellos disagree on the version (client 0, server 2) and no Goodbye followed"


def test_goodbye_rules() -> None:
    found = conversation(
        (C, client_hello()),
        (S, server_hello()),
        (C, goodbye(b"done")),
        (C, subscribe(b"p", 1)),  # after its own goodbye
        (S, subscribe(b"q", 1)),  # the peer's: in flight, not reported
        (S, goodbye_ack(b"ok")),
        (C, goodbye_ack(b"stray")),  # nothing to answer
    )
    assert [(p.kind, p.severity.value) for p in found] == [
        ("after_goodbye", "error"),
        ("unexpected_goodbye_ack", "warning"),
    ]


def test_crossing_goodbyes_answer_each_other() -> None:
    found = conversation(
        (C, client_hello()),
        (S, server_hello()),
        (C, goodbye(b"bye")),
        (S, goodbye(b"bye too")),
    )
    assert found == []


def test_goodbye_closes_subscriptions() -> None:
    # After a goodbye the Ids are free and half-sent elements are not reported.
    found = conversation(
        (C, client_hello()),
        (S, server_hello()),
        (C, subscribe(b"p", 1, 1)),
        (S, on_subscribe(1)),
        (S, part(1, 1, b"half")),
        (S, goodbye(b"shutting down")),
        (C, goodbye_ack(b"ok")),
    )
    assert found == []


def test_raw_messages_are_not_analysed() -> None:
    data = client_hello() + server_hello() + b"\x63garbage"
    items = decode([data])
    assert [p.kind for p in problems(items)] == ["unknown_type"]
    assert analyze(items) == []
