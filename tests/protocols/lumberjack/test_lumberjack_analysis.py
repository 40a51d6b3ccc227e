"""The Lumberjack connection rules on hand-built conversations: exact
problem lists (offset, kind, severity) for both ack styles, partial acks,
keepalives, v1 and v2 numbering, batches, and what is left at close."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import pytest
from ljkit import A, C, D, J, W

from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.base import DissectOptions, ProtoMessage
from ripple_cli.protocols.lumberjack.analysis import ANALYSIS_KINDS, LumberjackAnalyzer
from ripple_cli.protocols.lumberjack.stream import LumberjackStream

WRITER, READER = True, False
Step = tuple[bool | None, bytes]


def run(steps: Sequence[Step], close: bool = True) -> list[tuple[int, str, str]]:
    """Each step's bytes go to its direction's decoder; every message goes
    to one analyzer, in order.  The analyzer's problems as (offset, kind,
    severity)."""
    streams: dict[bool | None, LumberjackStream] = {}
    analyzer = LumberjackAnalyzer()
    found: list[Problem] = []
    for side, data in steps:
        stream = streams.setdefault(side, LumberjackStream(DissectOptions(), side))
        for item in stream.feed(data):
            if isinstance(item, ProtoMessage):
                found += analyzer.observe(side, item)
    if close:
        found += analyzer.close()
    assert {p.kind for p in found} <= set(ANALYSIS_KINDS)
    return [(p.offset, p.kind, str(p.severity)) for p in found]


def details(steps: Sequence[Step]) -> list[str]:
    streams: dict[bool | None, LumberjackStream] = {}
    analyzer = LumberjackAnalyzer()
    out: list[str] = []
    for side, data in steps:
        stream = streams.setdefault(side, LumberjackStream(DissectOptions(), side))
        for item in stream.feed(data):
            if isinstance(item, ProtoMessage):
                out += [p.detail for p in analyzer.observe(side, item)]
    return out + [p.detail for p in analyzer.close()]


def Cz(*frames: bytes, v: bytes = b"2") -> bytes:
    return C(zlib.compress(b"".join(frames)), v)


# ---------------------------------------------------------------- v2


def test_v2_batches_acked_by_count_or_highest_seq_alike() -> None:
    batch = W(3) + Cz(J(1, b"{}"), J(2, b"{}"), J(3, b"{}"))
    assert run([(WRITER, batch), (READER, A(0)), (READER, A(3)), (WRITER, W(1) + J(1, b"{}")), (READER, A(1))]) == []


def test_v2_partial_acks_then_the_rest() -> None:
    batch = W(3) + J(1, b"{}") + J(2, b"{}")
    assert run([(WRITER, batch), (READER, A(1)), (READER, A(2)), (WRITER, J(3, b"{}")), (READER, A(3))]) == []


def test_v2_ack_errors() -> None:
    two = W(2) + J(1, b"{}") + J(2, b"{}")  # W at 0, J at 6 and 15
    assert run([(WRITER, two), (READER, A(3))]) == [(0, "ack_above_batch", "error"), (0, "unacked_at_close", "warning")]
    assert details([(WRITER, two), (READER, A(3))])[0] == "ack 3 is above the batch at offset 0 (W 2)"
    assert run([(WRITER, W(3) + J(1, b"{}")), (READER, A(2))]) == [
        (0, "ack_unseen", "error"),
        (0, "batch_incomplete", "warning"),
    ]
    three = W(3) + J(1, b"{}") + J(2, b"{}") + J(3, b"{}")
    assert run([(WRITER, three), (READER, A(2) + A(1) + A(3))]) == [(6, "ack_backwards", "error")]
    assert details([(WRITER, three), (READER, A(2) + A(1) + A(3))]) == [
        "ack 1 acknowledges 1 events of the batch at offset 0 (W 3), 2 were already"
    ]
    assert run([(WRITER, two), (READER, A(2) + A(2))]) == [(6, "unexpected_ack", "error")]
    assert details([(WRITER, two), (READER, A(2) + A(2))]) == ["ack 2 while no batch waits for one"]


def test_v2_seq_restarts_at_1_in_every_batch() -> None:
    good = W(2) + J(1, b"{}") + J(2, b"{}") + W(1) + J(1, b"{}")
    assert run([(WRITER, good), (READER, A(2) + A(1))]) == []
    bad = W(2) + J(1, b"{}") + J(2, b"{}") + W(1) + J(3, b"{}")  # the second batch's J at 36
    assert run([(WRITER, bad), (READER, A(2) + A(1))]) == [(36, "seq_order", "error")]
    assert details([(WRITER, bad)])[0] == "J frame seq 3, expected 1 (v2 counts each batch's events from 1)"


def test_keepalives_and_empty_batches() -> None:
    # logstash-input-beats acks W 0 with A 0; go-lumber skips it silently.
    assert run([(WRITER, W(0)), (READER, A(0)), (WRITER, W(1) + J(1, b"{}")), (READER, A(0) + A(0) + A(1))]) == []
    assert run([(WRITER, W(0) + W(1) + J(1, b"{}")), (READER, A(1))]) == []


def test_frames_that_break_the_v2_rules() -> None:
    cz = Cz(W(1), J(3, b"{}"))
    last = 36 + len(cz)
    steps: list[Step] = [
        (WRITER, W(3)),  # 0
        (WRITER, D(1, [(b"k", b"v")], b"2")),  # 6: D in a v2 batch
        (WRITER, J(2, b"")),  # 26: empty J
        (WRITER, cz),  # 36: W inside C (it opens a batch, as in logstash-input-beats), J seq 3 in it
        (WRITER, J(1, b"{}", b"1")),  # a version 1 J, past the batch of the W in the C frame
    ]
    assert run(steps, close=False) == [
        (6, "data_in_v2_batch", "error"),
        (26, "empty_event", "error"),
        (36, "window_in_compressed", "error"),
        (36, "batch_incomplete", "warning"),
        (36, "seq_order", "error"),
        (last, "version_mismatch", "error"),
        (last, "event_outside_batch", "warning"),
        (last, "json_in_v1_batch", "error"),
    ]


def test_v2_events_with_no_room_are_errors_once_per_run() -> None:
    steps: list[Step] = [(WRITER, J(1, b"{}") + J(2, b"{}") + W(1) + J(1, b"{}") + J(2, b"{}") + J(3, b"{}"))]
    assert run([*steps, (READER, A(2) + A(1) + A(3))]) == [
        (0, "event_outside_batch", "error"),
        (42, "event_outside_batch", "error"),
    ]
    assert details(steps)[:2] == [
        "J frame seq 1 before any W",
        "J frame seq 2 after the batch at offset 24 (W 1) was complete",
    ]


def test_a_new_window_before_the_batch_is_complete() -> None:
    steps: list[Step] = [(WRITER, W(3) + J(1, b"{}") + W(1) + J(1, b"{}")), (READER, A(1) + A(1))]
    assert run(steps) == [(18, "batch_incomplete", "warning")]
    assert details(steps) == ["a new W came before the batch at offset 0 (W 3) had its events (1 came)"]


# ---------------------------------------------------------------- v1


def lsf_batch(first_seq: int, n: int) -> bytes:
    """logstash-forwarder: W n, then a C frame of n D frames, seq running on."""
    frames = [D(first_seq + i, [(b"line", b"x%d" % i)]) for i in range(n)]
    return W(n, b"1") + Cz(*frames, v=b"1")


def test_v1_seq_runs_on_across_batches_acked_by_seq() -> None:
    steps: list[Step] = [
        (WRITER, lsf_batch(1, 2)),
        (READER, A(2, b"1")),
        (WRITER, lsf_batch(3, 2)),
        (READER, A(4, b"1")),
    ]
    assert run(steps) == []


def test_v1_acked_by_count_go_lumber_style() -> None:
    steps: list[Step] = [
        (WRITER, lsf_batch(1, 2)),
        (READER, A(2, b"1")),
        (WRITER, lsf_batch(3, 2)),
        (READER, A(2, b"1")),
    ]
    assert run(steps) == []


def test_v1_bulk_ack_covers_earlier_batches() -> None:
    steps: list[Step] = [(WRITER, lsf_batch(1, 2) + lsf_batch(3, 2)), (READER, A(3, b"1") + A(4, b"1"))]
    assert run(steps) == []


def test_v1_seq_wraps_to_0() -> None:
    frames = D(0xFFFFFFFE, [(b"a", b"1")]) + D(0xFFFFFFFF, [(b"a", b"2")]) + D(0, [(b"a", b"3")])
    assert run([(WRITER, W(3, b"1") + frames), (READER, A(0, b"1"))]) == []  # 0 is the last event's seq
    steps: list[Step] = [(WRITER, W(3, b"1") + frames + D(5, [(b"a", b"4")]))]
    assert run(steps, close=False) == [(66, "seq_order", "error")]
    assert details(steps)[0] == "D frame seq 5, expected 1 (v1 counts the connection's events, wrapping to 0)"


def test_v1_streaming_past_the_window_like_lumberjack_protocol() -> None:
    # One W 3, then events on and on; acks of the highest seq, partial ones too.
    events = b"".join(D(i, [(b"line", b"%d" % i), (b"host", b"vm1")]) for i in range(1, 8))
    steps: list[Step] = [(WRITER, W(3, b"1") + events), (READER, A(2, b"1") + A(5, b"1") + A(7, b"1"))]
    assert run(steps) == []
    # Events 4..6 are the second batch (at 120), 7 the third.
    assert run([(WRITER, W(3, b"1") + events), (READER, A(5, b"1"))]) == [(120, "unacked_at_close", "warning")]
    assert details([(WRITER, W(3, b"1") + events), (READER, A(5, b"1"))]) == [
        "2 events never acknowledged at the end of the connection: 2 batches, from the batch at offset 120 (W 3)"
    ]


def test_v1_keepalive_with_version_2_is_accepted_other_v2_acks_are_not() -> None:
    steps: list[Step] = [(WRITER, lsf_batch(1, 2)), (READER, A(0, b"2") + A(2, b"1"))]
    assert run(steps) == []
    assert run([(WRITER, lsf_batch(1, 2)), (READER, A(2, b"2"))]) == [(0, "version_mismatch", "error")]


def test_v1_rules() -> None:
    steps: list[Step] = [
        (WRITER, W(2, b"1")),  # 0
        (WRITER, J(1, b"{}", b"1")),  # 6: J in a v1 batch
        (WRITER, D(2, [], b"1")),  # 18: no pairs
    ]
    assert run(steps) == [
        (6, "json_in_v1_batch", "error"),
        (18, "empty_event", "error"),
        (0, "unacked_at_close", "warning"),
    ]
    # Events before any W: the old Ruby reader took a window of 1 (a warning).
    assert run([(WRITER, D(1, [(b"a", b"b")])), (READER, A(1, b"1"))]) == [(0, "event_outside_batch", "warning")]


# ---------------------------------------------------------------- sides and ends


def test_each_side_keeps_its_role() -> None:
    steps: list[Step] = [(WRITER, W(1) + J(1, b"{}")), (READER, A(1) + W(1)), (WRITER, A(1))]
    assert run(steps) == [(6, "wrong_direction", "error"), (18, "wrong_direction", "error")]
    assert details(steps)[:2] == [
        "a Window frame from the server, the side that sends acks",
        "a Ack frame from the client, the side that sends the writer's frames",
    ]


def test_a_raw_file_shows_one_side_and_needs_no_acks() -> None:
    assert run([(None, W(2) + J(1, b"{}") + J(2, b"{}"))]) == []
    assert run([(None, W(2) + J(1, b"{}"))]) == [(0, "batch_incomplete", "warning")]
    # Both sides in one file: taken by frame type.
    assert run([(None, W(2) + J(1, b"{}") + J(2, b"{}") + A(2))]) == []


def test_events_never_acked_at_close() -> None:
    steps: list[Step] = [(WRITER, W(2) + J(1, b"{}") + J(2, b"{}") + W(1) + J(1, b"{}")), (READER, A(1))]
    assert run(steps) == [(0, "unacked_at_close", "warning")]
    assert details(steps) == [
        "2 events never acknowledged at the end of the connection: 2 batches, from the batch at offset 0 (W 2)"
    ]


def test_a_c_frame_that_does_not_inflate_hides_its_events() -> None:
    # The events are in bytes that could not be read: the ack is taken at its word.
    steps: list[Step] = [(WRITER, W(2) + C(b"x\x9c\xff\xff\xff\xff\xff\xff")), (READER, A(2))]
    assert run(steps) == []


def test_damage_hides_what_it_took() -> None:
    stream = LumberjackStream(DissectOptions(), WRITER)
    reader = LumberjackStream(DissectOptions(), READER)
    analyzer = LumberjackAnalyzer()
    found: list[Problem] = []
    items = stream.feed(W(3) + J(1, b"{}")) + stream.gap(12) + stream.feed(J(3, b"{}"))
    items += reader.feed(A(3))
    for item in items:
        if isinstance(item, ProtoMessage):
            found += analyzer.observe(item.direction == "writer", item)
    assert found + analyzer.close() == []


def test_the_window_over_time() -> None:
    analyzer = LumberjackAnalyzer()
    stream = LumberjackStream(DissectOptions(), WRITER)
    for item in stream.feed(W(10) + W(15) + W(22) + W(11)):
        if isinstance(item, ProtoMessage):
            analyzer.observe(WRITER, item)
    assert analyzer.windows == [(0, 10), (6, 15), (12, 22), (18, 11)]


def test_a_batch_of_scrambled_seqs_still_matches_acks() -> None:
    # v1, seqs not running on by one (an error each), acked by seq then by count.
    frames = D(5, [(b"a", b"1")]) + D(9, [(b"a", b"2")]) + D(7, [(b"a", b"3")])
    assert run([(WRITER, W(3, b"1") + frames), (READER, A(9, b"1") + A(7, b"1"))]) == [
        (26, "seq_order", "error"),
        (46, "seq_order", "error"),
    ]


def test_memory_stays_bounded_when_acks_never_come(monkeypatch: pytest.MonkeyPatch) -> None:
    from ripple_cli.protocols.lumberjack import analysis

    monkeypatch.setattr(analysis, "MAX_BATCHES", 4)
    batches = b"".join(W(1) + J(1, b"{}") for _ in range(10))
    analyzer = LumberjackAnalyzer()
    stream = LumberjackStream(DissectOptions(), WRITER)
    for item in stream.feed(batches):
        assert isinstance(item, ProtoMessage)
        assert analyzer.observe(WRITER, item) == []
    assert len(analyzer.batches) == 4
    (p,) = analyzer.close()
    assert (p.kind, p.detail) == (
        "unacked_at_close",
        "10 events never acknowledged at the end of the connection: 4 batches, from the batch at offset 108 (W 1)",
    )


def test_the_report_sums_up_the_connection() -> None:
    # W 3 and its events at t=100, a keepalive, a partial ack, the rest at
    # t=250; a second batch acked 40 ns after its event; then one never acked.
    steps: list[tuple[int, bool, bytes]] = [
        (100, WRITER, W(3) + J(1, b"{}") + J(2, b"{}") + J(3, b"{}")),
        (150, READER, A(0) + A(2)),
        (250, READER, A(3)),
        (300, WRITER, W(1) + J(1, b"{}")),
        (340, READER, A(1)),
        (400, WRITER, W(2) + J(1, b"{}")),
    ]
    streams = {side: LumberjackStream(DissectOptions(), side) for side in (WRITER, READER)}
    analyzer = LumberjackAnalyzer()
    for t, side, data in steps:
        analyzer.time_ns = t
        for item in streams[side].feed(data):
            assert isinstance(item, ProtoMessage)
            analyzer.observe(side, item)
    problems = analyzer.close()
    assert [(p.kind, p.extra) for p in problems] == [
        ("batch_incomplete", {"from_client": True}),
        ("unacked_at_close", {"events": 1, "from_client": True}),
    ]
    assert analyzer.report() == {
        "version": 2,
        "batches": {"count": 3, "events": 5, "acked": 4, "unacked": 1},
        "acks": {"total": 4, "keepalives": 1, "partial": 1, "style": "either"},
        "window": {"first": 3, "last": 2, "min": 1, "max": 3, "changes": 2, "counts": [3, 1, 2]},
        "ack_latency_ns": {"batches": 2, "min": 40, "mean": 95, "max": 150},
    }


def test_a_raw_file_reports_no_acks() -> None:
    analyzer = LumberjackAnalyzer()
    for item in LumberjackStream(DissectOptions(), None).feed(W(1, b"1") + D(1, [(b"a", b"b")])):
        assert isinstance(item, ProtoMessage)
        analyzer.observe(None, item)
    assert analyzer.close() == []
    assert analyzer.report() == {
        "version": 1,
        "batches": {"count": 1, "events": 1},
        "window": {"first": 1, "last": 1, "min": 1, "max": 1, "changes": 0, "counts": [1]},
    }
