"""The replay's pure parts: the schedule's arithmetic, renumbering, addresses."""

from __future__ import annotations

import pytest

from ripple_cli.codec.envelope import frame_bytes
from ripple_cli.codec.messages import DELTA, DeltaMode, DeltaMsg
from ripple_cli.protocols.ripple.decoder import StreamDecoder
from ripple_cli.protocols.ripple.message import Message
from ripple_cli.replay.address import split_address
from ripple_cli.replay.renumber import Renumberer
from ripple_cli.replay.schedule import Mode, Pacing, Schedule, sleep_until
from ripple_cli.replay.source import Recorded, Recording
from tests.conftest import EXAMPLES

MS = 1_000_000


def messages(data: bytes) -> list[Message]:
    events = StreamDecoder(None, DeltaMode.RAW).feed(data)
    out = [e for e in events if isinstance(e, Message)]
    assert len(out) == len(events)
    return out


def test_multiplier_targets_are_absolute_and_scaled() -> None:
    s = Schedule(Pacing(Mode.MULTIPLIER, multiplier=2.0), start_ns=1000)
    times = [50 * MS, 60 * MS, 60 * MS, 90 * MS]
    assert [s.target(t) for t in times] == [1000, 1000 + 5 * MS, 1000 + 5 * MS, 1000 + 20 * MS]


def test_times_going_backwards_are_due_at_once() -> None:
    s = Schedule(Pacing(Mode.MULTIPLIER), start_ns=0)
    assert [s.target(t) for t in (10 * MS, 30 * MS, 20 * MS, 40 * MS)] == [0, 20 * MS, 20 * MS, 30 * MS]


def test_pps_targets() -> None:
    s = Schedule(Pacing(Mode.PPS, pps=250), start_ns=7)
    assert [s.target(0) for _ in range(4)] == [7, 7 + 4 * MS, 7 + 8 * MS, 7 + 12 * MS]


def test_topspeed_everything_due_at_start() -> None:
    s = Schedule(Pacing(Mode.TOPSPEED), start_ns=42)
    assert {s.target(t) for t in (0, 10**12, 5)} == {42}


def test_maxsleep_cuts_long_gaps_for_good() -> None:
    # Gaps of 1 ms, 1 s, 1 ms: the 1 s gap becomes 10 ms, and the message
    # after it keeps its 1 ms distance (no catching up in a burst).
    s = Schedule(Pacing(Mode.MULTIPLIER, maxsleep_ns=10 * MS), start_ns=0)
    targets = [s.target(t) for t in (0, 1 * MS, 1001 * MS, 1002 * MS)]
    assert targets == [0, 1 * MS, 11 * MS, 12 * MS]


def test_sleep_until_uses_idle_then_returns_on_time() -> None:
    now = [0]
    idles: list[float] = []

    def clock() -> int:
        now[0] += 1000  # each reading takes 1 µs: the final spin ends
        return now[0]

    def idle(seconds: float) -> None:
        idles.append(seconds)
        now[0] += int(seconds * 1e9) + 1

    assert sleep_until(5 * MS, idle, clock) >= 5 * MS
    assert idles and all(s > 0 for s in idles)


def test_span_of_a_recording_adds_one_mean_gap() -> None:
    rec = Recording("x", None, [Recorded(b"h", 0)] + [Recorded(b"m", t) for t in (100, 200, 300)])
    assert rec.span_ns() == 200 + 100


def test_renumberer_rewrites_seq_and_sequence_no_only() -> None:
    source = messages((EXAMPLES / "demo.ripple").read_bytes())
    renumber = Renumberer()
    counters: dict[bytes, int] = {}
    for i, msg in enumerate(source[:40] + source[1:40], start=1):
        out = messages(renumber(frame_bytes(msg.frame)))[0]
        f, g = msg.frame, out.frame
        assert g.seq == i
        assert (g.tag, g.flags, g.time_ns, g.fingerprint) == (f.tag, f.flags, f.time_ns, f.fingerprint)
        if f.tag != DELTA:
            assert g.payload == f.payload
            continue
        a, b = msg.body, out.body
        assert isinstance(a, DeltaMsg) and isinstance(b, DeltaMsg)
        counters[a.source_output] = counters.get(a.source_output, 0) + 1
        assert b.sequence_no == counters[a.source_output]
        assert (b.source_output, b.key, b.delta_bytes, b.watermark_ns) == (
            a.source_output,
            a.key,
            a.delta_bytes,
            a.watermark_ns,
        )


@pytest.mark.parametrize(
    ("text", "expected"),
    [("127.0.0.1:9000", ("127.0.0.1", 9000)), ("[::1]:80", ("::1", 80)), (":0", ("", 0)), ("h:1", ("h", 1))],
)
def test_addresses(text: str, expected: tuple[str, int]) -> None:
    assert split_address(text) == expected


@pytest.mark.parametrize("text", ["9000", "::1:80", "host:http", "host:70000"])
def test_bad_addresses(text: str) -> None:
    with pytest.raises(ValueError):
        split_address(text)


def test_renumber_from_a_start() -> None:
    from ripple_cli.codec.messages import DeltaMsg
    from ripple_cli.protocols.ripple.decoder import StreamDecoder
    from ripple_cli.protocols.ripple.message import Message
    from ripple_cli.replay.renumber import Renumberer
    from tests.conftest import EXAMPLES

    data = (EXAMPLES / "demo.ripple").read_bytes()
    msgs = [e for e in StreamDecoder().feed(data) if isinstance(e, Message)][:20]
    r = Renumberer(1_000_000)
    out = b"".join(r(data[m.frame.offset : m.frame.offset + m.frame.size]) for m in msgs)
    again = [e for e in StreamDecoder(delta_mode=DeltaMode.RAW).feed(out) if isinstance(e, Message)]
    assert [m.frame.seq for m in again] == list(range(1_000_000, 1_000_020))
    vwap = [m.body.sequence_no for m in again if isinstance(m.body, DeltaMsg) and m.body.source_output == b"vwap"]
    assert vwap == list(range(1_000_000, 1_000_000 + len(vwap))) and vwap


def _demo_recording() -> Recording:
    data = (EXAMPLES / "demo.ripple").read_bytes()
    msgs = messages(data)
    return Recording("demo", None, [Recorded(frame_bytes(m.frame), m.frame.time_ns) for m in msgs])


def test_the_room_renumbering_needs_is_checked_before_anything_is_sent() -> None:
    """The demo: a Handshake and 299 messages, of which 90 vwap Deltas
    (the most of one output), the first at body index 1."""
    from ripple_cli.codec.binprot import INT_MAX
    from ripple_cli.errors import UsageProblem
    from ripple_cli.replay.renumber import check_room

    rec = _demo_recording()
    assert len(rec.body) == 299
    bodies = [messages(m.data)[0].body for m in rec.body]
    vwap = [i for i, b in enumerate(bodies) if isinstance(b, DeltaMsg) and b.source_output == b"vwap"]
    assert len(vwap) == 90
    start = INT_MAX - 89  # room for 90
    check_room(start, [rec], loops=1, limit=None)
    check_room(start, [rec, rec], loops=1, limit=None)  # each connection numbers from the start
    with pytest.raises(UsageProblem, match=r"would pass 4611686018427387903, .* after 90 Deltas of one output"):
        check_room(start, [rec], loops=2, limit=None)
    # --limit counts the Handshake and stops the second pass before its first vwap Delta
    check_room(start, [rec], loops=2, limit=1 + 299 + vwap[0])
    with pytest.raises(UsageProblem):
        check_room(start, [rec], loops=2, limit=1 + 299 + vwap[0] + 1)
    # the limit spent on the first connection: the second sends nothing
    check_room(start, [rec, rec], loops=2, limit=1 + 299 + vwap[0])
    # room for 89: the first pass stopped before its 90th vwap Delta
    check_room(start + 1, [rec], loops=1, limit=1 + vwap[89])
    with pytest.raises(UsageProblem, match="after 89 Deltas"):
        check_room(start + 1, [rec], loops=1, limit=1 + vwap[89] + 1)
