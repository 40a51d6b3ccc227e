"""The reassembler on its own, with segments made up for each rule: any
segmentation, order, duplication and loss; connection life and numbering;
which side is the client."""

from __future__ import annotations

import dataclasses
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from ripple_cli.capture.events import CaptureEvent, CaptureNote, StreamData, StreamEnd, StreamGap, StreamStart
from ripple_cli.capture.packets import ACK, FIN, RST, SYN, Segment
from ripple_cli.capture.reassembly import REORDER_PACKETS, Reassembler

A = bytes([10, 0, 0, 1])
B = bytes([10, 0, 0, 2])
MASK = 0xFFFFFFFF


Damaged = tuple[bytes, int, list[tuple[int, bytes]], set[int]]


def seg(
    seq: int,
    payload: bytes = b"",
    flags: int = ACK,
    ack: int = 0,
    src: bytes = A,
    sport: int = 50000,
    dport: int = 9000,
) -> Segment:
    """From the client (A:sport, unless `src` is B) to the server."""
    dst = B if src == A else A
    return (src, dst, sport, dport, seq & MASK, ack & MASK, flags, payload)


def back(
    seq: int, payload: bytes = b"", flags: int = ACK, ack: int = 0, sport: int = 50000, dport: int = 9000
) -> Segment:
    """From the server (B:dport) to the client (A:sport)."""
    return seg(seq, payload, flags, ack, src=B, sport=dport, dport=sport)


def run(segments: list[Segment], **kw: object) -> list[CaptureEvent]:
    r = Reassembler(**kw)  # type: ignore[arg-type]
    out: list[CaptureEvent] = []
    for t, s in enumerate(segments):
        out += r.feed(t, s)
    out += r.finish()
    return out


def pieces(events: list[CaptureEvent], key: str) -> list[bytes | int]:
    out: list[bytes | int] = []
    for e in events:
        if isinstance(e, StreamData | StreamGap) and e.stream is not None and e.stream.key == key:
            item: bytes | int = e.data if isinstance(e, StreamData) else e.size
            if out and type(out[-1]) is type(item):
                out[-1] += item  # type: ignore[operator]
            else:
                out.append(item)
    return out


@st.composite
def damaged(draw: st.DrawFn) -> Damaged:
    """A stream, its ISN, its segments in a damaged order (with duplicates
    and identical overlapping retransmissions), and which byte offsets no
    segment carries."""
    data = draw(st.binary(min_size=1, max_size=3000))
    isn = draw(st.one_of(st.integers(0, MASK), st.integers(MASK - 3000, MASK)))
    cuts = sorted(set(draw(st.lists(st.integers(1, len(data) - 1), max_size=40)) if len(data) > 1 else []))
    bounds = [0, *cuts, len(data)]
    segs = [(a, data[a:b]) for a, b in itertools.pairwise(bounds)]
    extra = draw(st.lists(st.tuples(st.integers(0, len(data) - 1), st.integers(1, 500)), max_size=10))
    segs += [(a, data[a : a + n]) for a, n in extra]
    lost = draw(st.sets(st.integers(0, len(segs) - 1), max_size=len(segs) // 3))
    kept = [s for k, s in enumerate(segs) if k not in lost]
    order = draw(st.permutations(kept))
    covered = set()
    for a, payload in order:
        covered.update(range(a, a + len(payload)))
    return data, isn, list(order), set(range(len(data))) - covered


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(damaged())
def test_any_damage_gives_exact_bytes_and_holes(case: Damaged) -> None:
    """With a SYN and a FIN, and no acknowledgment: every byte any segment
    carried, at its place; every byte none carried, in a gap of exactly the
    hole's size (declared when both sides have closed)."""
    data, isn, order, missing = case
    segs = [seg(isn, flags=SYN)] + [seg(isn + 1 + a, p) for a, p in order]
    segs += [seg(isn + 1 + len(data), flags=FIN | ACK), back(77, flags=FIN | ACK)]
    events = run(segs)
    expected: list[bytes | int] = []
    for k in range(len(data)):
        if k in missing:
            if expected and isinstance(expected[-1], int):
                expected[-1] += 1
            else:
                expected.append(1)
        elif expected and isinstance(expected[-1], bytes):
            expected[-1] += data[k : k + 1]
        else:
            expected.append(data[k : k + 1])
    assert pieces(events, "1:c2s") == expected
    assert [e for e in events if isinstance(e, CaptureNote)] == []
    ends = [e.reason for e in events if isinstance(e, StreamEnd)]
    assert ends == ["fin", "fin"]


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(damaged(), st.integers(1, 2000))
def test_a_small_window_keeps_every_byte_in_place(case: Damaged, window: int) -> None:
    """A hole declared early (the window full) may swallow bytes that come
    later; what is delivered is still at its right offset, and bytes plus
    gaps add up to the stream."""
    data, isn, order, _missing = case
    segs = [seg(isn + 1 + a, p) for a, p in order]  # no SYN: starts at the lowest of the first packets
    events = run(segs, window=window)
    first = min(a for a, _p in order[:REORDER_PACKETS])
    at = first
    for piece in pieces(events, "1:c2s"):
        if isinstance(piece, int):
            at += piece
        else:
            assert piece == data[at : at + len(piece)]
            at += len(piece)
    assert at <= len(data)


def test_window_declares_the_hole_as_soon_as_it_is_exceeded() -> None:
    segs = [seg(1000, flags=SYN), seg(1001, b"a" * 10)]
    segs += [seg(1021 + 10 * k, b"b" * 10) for k in range(10)]  # ten bytes missing at offset 10
    events = run(segs, window=50)
    gap = next(e for e in events if isinstance(e, StreamGap))
    assert gap.size == 10 and gap.time_ns == 7  # the sixth waiting segment (packet 7) made 60 > 50 bytes wait
    assert pieces(events, "1:c2s") == [b"a" * 10, 10, b"b" * 100]


def test_acknowledged_hole_waits_for_its_late_segment() -> None:
    """The server acknowledges bytes the capture has not shown yet: counted
    (acked unseen), nothing declared; the segment comes three packets later."""
    segs = [seg(0, flags=SYN), back(500, flags=SYN | ACK, ack=1), seg(1, b"x" * 10), seg(21, b"z" * 10)]
    segs += [back(501, ack=31), back(501, ack=31), seg(31, b"w" * 5), seg(11, b"y" * 10)]
    events = run(segs)
    assert pieces(events, "1:c2s") == [b"x" * 10 + b"y" * 10 + b"z" * 10 + b"w" * 5]
    ends = {e.stream.key: e.tcp for e in events if isinstance(e, StreamEnd) and e.stream is not None}
    assert dataclasses.asdict(ends["1:c2s"]) == {"out_of_order": 2, "retransmitted": 0, "acked_unseen": 1, "held": 2}


def test_acknowledged_hole_never_filled_is_declared_at_the_end() -> None:
    segs = [seg(0, flags=SYN), back(500, flags=SYN | ACK, ack=1), seg(1, b"x" * 10), seg(21, b"z" * 10)]
    segs += [back(501, ack=31), seg(31, flags=FIN | ACK), back(501, ack=32, flags=FIN | ACK)]
    events = run(segs)
    assert pieces(events, "1:c2s") == [b"x" * 10, 10, b"z" * 10]
    assert [e.reason for e in events if isinstance(e, StreamEnd)] == ["fin", "fin"]


def test_syn_ack_before_syn_and_syn_again_are_one_connection() -> None:
    segs = [back(700, flags=SYN | ACK, ack=101), seg(100, flags=SYN), seg(100, flags=SYN), seg(101, b"hi")]
    segs += [seg(103, flags=FIN | ACK), back(701, flags=FIN | ACK, ack=104), seg(100, flags=SYN)]
    events = run(segs)
    assert {e.stream.connection for e in events if not isinstance(e, CaptureNote) and e.stream} == {1}
    assert not [e for e in events if isinstance(e, CaptureNote)]
    assert pieces(events, "1:c2s") == [b"hi"]


def test_data_before_its_syn_waits_for_it() -> None:
    """Reordering puts the second data segment, then the first, before the
    SYN: the SYN still says who the client is and where the stream starts."""
    segs = [seg(6, b"world", sport=40000, dport=50000), back(900, b"!", sport=40000, dport=50000)]
    segs += [seg(1, b"hello", sport=40000, dport=50000), seg(0, flags=SYN, sport=40000, dport=50000)]
    segs += [back(899, flags=SYN | ACK, ack=1, sport=40000, dport=50000)]
    events = run(segs)
    starts = [e for e in events if isinstance(e, StreamStart)]
    assert starts[0].syn_seen and starts[0].stream is not None and starts[0].stream.client.port == 40000
    assert pieces(events, "1:c2s") == [b"helloworld"] and pieces(events, "1:s2c") == [b"!"]


def test_window_bound_is_noted_once() -> None:
    segs = [seg(0, flags=SYN), seg(1, b"a")] + [seg(3 + k, b"b") for k in range(8)]
    events = run(segs, window=4)
    notes = [e for e in events if isinstance(e, CaptureNote)]
    assert [n.kind for n in notes] == ["reassembly_window"]
    assert notes[0].detail == (
        "more than 4 bytes (--reassembly-window) held after a hole at stream offset 1: the hole is declared missing"
    )
    assert pieces(events, "1:c2s") == [b"a", 1, b"b" * 8]


def test_fin_waits_for_late_data() -> None:
    """The FIN comes before a reordered segment: no gap, the end after it."""
    segs = [seg(0, flags=SYN), seg(1, b"a" * 5), seg(11, b"c" * 5, flags=FIN | ACK), seg(6, b"b" * 5)]
    events = run(segs)
    assert pieces(events, "1:c2s") == [b"aaaaabbbbbccccc"]
    end = next(e for e in events if isinstance(e, StreamEnd) and e.stream is not None and e.stream.from_client)
    assert end.reason == "fin" and end.time_ns == 3


def test_conflicting_retransmission_of_delivered_bytes() -> None:
    events = run([seg(0, flags=SYN), seg(1, b"hello world"), seg(7, b"WORLD"), seg(1, b"hello")])
    notes = [e for e in events if isinstance(e, CaptureNote)]
    assert [(n.kind, n.error) for n in notes] == [("conflicting_overlap", True)]
    assert "offsets 6..11" in notes[0].detail
    assert pieces(events, "1:c2s") == [b"hello world"]


def test_in_order_bytes_win_over_bytes_held_ahead_of_a_hole() -> None:
    """An out-of-order segment held past a hole, then the in-order segment
    that fills the hole and overlaps it with other bytes: a receiver's
    application reads the in-order copy (Linux trims what it held), checked
    with a real receiver in a network namespace; the held bytes past the
    overlap still count."""
    events = run([seg(0, flags=SYN), seg(11, b"KLMNOP"), seg(1, b"abcdefghijklm")])
    notes = [e for e in events if isinstance(e, CaptureNote)]
    assert [(n.kind, n.error) for n in notes] == [("conflicting_overlap", True)]
    assert notes[0].detail.endswith("within stream offsets 10..13; the in-order copy is kept")
    assert b"".join(pieces(events, "1:c2s")) == b"abcdefghijklmNOP"


def test_a_held_segment_inside_the_in_order_one_gives_way_whole() -> None:
    """XY held inside what comes in order gives way; z, held just past it,
    follows on, and a later copy of its byte is a retransmission of
    delivered bytes: the first copy kept."""
    events = run([seg(0, flags=SYN), seg(4, b"XY"), seg(9, b"z"), seg(1, b"abcdefgh"), seg(9, b"ij")])
    assert b"".join(pieces(events, "1:c2s")) == b"abcdefghzj"
    details = [e.detail for e in events if isinstance(e, CaptureNote)]
    assert [d.rsplit("; ", 1)[1] for d in details] == ["the in-order copy is kept", "the first copy is kept"]


def test_keepalive_probe_is_not_a_conflict() -> None:
    events = run([seg(0, flags=SYN), seg(1, b"abc"), seg(3, b"\x00")])
    assert not [e for e in events if isinstance(e, CaptureNote)]


def test_wraparound_in_the_middle_of_a_segment() -> None:
    isn = MASK - 4
    events = run([seg(isn, flags=SYN), seg(isn + 6, b"56789"), seg(isn + 1, b"01234567")])
    assert pieces(events, "1:c2s") == [b"0123456789"]


def test_syn_ack_first_sets_both_directions() -> None:
    events = run([back(700, flags=SYN | ACK, ack=101), seg(101, b"hi"), back(701, b"yo")])
    starts = [e for e in events if isinstance(e, StreamStart)]
    assert all(s.syn_seen for s in starts)
    assert starts[0].stream is not None and starts[0].stream.client.port == 50000
    assert pieces(events, "1:c2s") == [b"hi"] and pieces(events, "1:s2c") == [b"yo"]


def test_new_syn_after_fin_or_rst_is_a_new_connection() -> None:
    first = [seg(0, flags=SYN), seg(1, b"one"), seg(4, flags=FIN | ACK), back(9, flags=FIN | ACK), seg(5, flags=ACK)]
    second = [seg(5000, flags=SYN), seg(5000, flags=SYN), seg(5001, b"two"), seg(5004, flags=RST)]
    third = [seg(9000, flags=SYN), seg(9001, b"three")]
    events = run(first + second + third)
    assert pieces(events, "1:c2s") == [b"one"]
    assert pieces(events, "2:c2s") == [b"two"]
    assert pieces(events, "3:c2s") == [b"three"]
    ends = [(e.stream.key, e.reason) for e in events if isinstance(e, StreamEnd) and e.stream is not None]
    assert ends == [
        ("1:c2s", "fin"),
        ("1:s2c", "fin"),
        ("2:c2s", "rst"),
        ("2:s2c", "rst"),
        ("3:c2s", "end of capture"),
        ("3:s2c", "end of capture"),
    ]


def test_stragglers_of_a_closed_connection_are_not_a_new_one() -> None:
    events = run([seg(0, flags=SYN), seg(1, b"x"), seg(2, flags=RST), seg(1, b"x"), back(50, b"late")])
    assert {e.stream.connection for e in events if not isinstance(e, CaptureNote) and e.stream} == {1}


def test_a_new_syn_on_an_open_connection_ends_it() -> None:
    events = run([seg(0, flags=SYN), seg(1, b"old"), seg(777, flags=SYN), seg(778, b"new")])
    notes = [e for e in events if isinstance(e, CaptureNote)]
    assert [n.kind for n in notes] == ["port_reused"]
    assert pieces(events, "1:c2s") == [b"old"] and pieces(events, "2:c2s") == [b"new"]


def test_least_recently_active_is_evicted() -> None:
    segs = [
        seg(0, flags=SYN, sport=1),
        seg(0, flags=SYN, sport=2),
        seg(1, b"a", sport=1),  # 1 is now more recent than 2
        seg(0, flags=SYN, sport=3),  # three open, room for two: 2 goes
        seg(1, b"b", sport=2),  # 2 again: a new connection, mid-stream
    ]
    events = run(segs, max_flows=2)
    notes = [e for e in events if isinstance(e, CaptureNote)]
    assert [n.kind for n in notes] == ["evicted", "evicted"]
    assert notes[0].stream is not None and notes[0].stream.connection == 2
    assert notes[1].stream is not None and notes[1].stream.connection == 1
    assert pieces(events, "4:c2s") == [b"b"]
    starts = [e for e in events if isinstance(e, StreamStart) and e.stream is not None and e.stream.connection == 4]
    assert starts and not starts[0].syn_seen


def test_lone_acks_and_resets_start_nothing() -> None:
    assert run([seg(5, flags=ACK), seg(5, flags=RST), seg(5, flags=FIN | ACK)]) == []


def test_client_rules_without_a_handshake() -> None:
    def client_port(segs: list[Segment], **kw: object) -> int:
        start = next(e for e in run(segs, **kw) if isinstance(e, StreamStart))
        assert start.stream is not None
        return start.stream.client.port

    # The server's segment is seen first; its port is 9000, the client's ephemeral.
    assert client_port([back(1, b"hi"), seg(1, b"yo")]) == 50000
    # Both ephemeral: the first sender, unless --port names the server.
    assert client_port([back(1, b"hi", sport=40000, dport=50000)]) == 50000
    assert client_port([back(1, b"hi", sport=40000, dport=50000)], server_ports=frozenset({40000})) == 50000
    assert client_port([seg(1, b"hi", sport=40000, dport=50000)], server_ports=frozenset({40000})) == 50000
    assert client_port([seg(1, b"hi", sport=40000, dport=50000)]) == 40000
    # Both service ports: the first sender.
    assert client_port([seg(1, b"hi", sport=22, dport=9000)]) == 22
