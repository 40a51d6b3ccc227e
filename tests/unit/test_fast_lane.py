"""The pieces of the fast lane (ripple_cli/codec/fast) and the stepping it
relies on, with and without the C extension."""

from __future__ import annotations

from array import array

import pytest

from ripple_cli.analysis.report import Report
from ripple_cli.capture.events import CaptureEvent, StreamData, StreamEnd, StreamStart
from ripple_cli.codec.delta import CompiledSchema, SetRow
from ripple_cli.codec.envelope import build_envelope
from ripple_cli.codec.fast import _load, speedups
from ripple_cli.codec.fast.program import compile_program
from ripple_cli.codec.framing import FrameDecoder
from ripple_cli.codec.messages import (
    DELTA,
    FIXED_FINGERPRINTS,
    HANDSHAKE,
    DeltaMode,
    DeltaView,
    Handshake,
    write_payload,
)
from ripple_cli.codec.problems import Problem
from ripple_cli.codec.schema import FLOAT, INT, STRING, Field, OptionOf, Schema
from ripple_cli.flow.demux import Demux
from ripple_cli.flow.protocol_choice import ProtocolChoice
from ripple_cli.protocols.base import DissectOptions, LaneKind
from ripple_cli.protocols.ripple.lane import LaneRun
from ripple_cli.protocols.ripple.message import Message
from ripple_cli.protocols.ripple.rules import before_schema_problem
from tests.conftest import EXAMPLES

FAST = speedups() is not None
needs_fast = pytest.mark.skipif(not FAST, reason="the C fast lane is off (not built here, or RIPPLE_PURE)")
VWAP = Schema(b"vwap", 2, STRING, (Field(b"price", FLOAT), Field(b"volume", INT)))


def delta(seq: int, schema: Schema = VWAP, sequence_no: int = 1) -> bytes:
    body = DeltaView(b"vwap", b"AAPL", SetRow({"price": 1.5, "volume": 3}), sequence_no, None, CompiledSchema(schema))
    return build_envelope(DELTA, seq, 0, schema.fingerprint, write_payload(body))


def handshake(seq: int, schema: Schema = VWAP) -> bytes:
    body = Handshake(b"w", ((schema.name, schema),), 1)
    return build_envelope(HANDSHAKE, seq, 0, FIXED_FINGERPRINTS[HANDSHAKE], write_payload(body))


def demux_run(chunks: list[bytes], lane: LaneKind | None, rules: bool = True) -> list[Problem | Message | LaneRun]:
    mode = DeltaMode.VALIDATE if rules else DeltaMode.DECODE
    demux = Demux("s", ProtocolChoice("ripple", options=DissectOptions(deltas=mode, rules=rules, lane=lane)))
    events: list[CaptureEvent] = [StreamStart(None, None, True), *(StreamData(None, c, None) for c in chunks)]
    events.append(StreamEnd(None, None, "end"))
    out = []
    for ev in events:
        out += demux.feed(ev)
    out += demux.finish()
    return [item for _o, item in out]


def kinds(items: list[Problem | Message | LaneRun]) -> list[str]:
    out = []
    for item in items:
        if isinstance(item, Problem):
            out.append(item.kind)
        elif isinstance(item, LaneRun):
            out += [p.kind for p in item.problems()]
    return out


def test_ripple_pure_is_read_at_each_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIPPLE_PURE", "1")
    assert speedups() is None
    monkeypatch.setenv("RIPPLE_PURE", "0")
    assert speedups() is _load()
    monkeypatch.delenv("RIPPLE_PURE")
    assert speedups() is _load()


@pytest.mark.parametrize("lane", [None, LaneKind.COUNT])
def test_a_delta_before_its_handshake_is_judged_where_it_is(lane: LaneKind | None) -> None:
    """The rules see the registry as it was at the Delta, whether the
    Handshake after it came in the same chunk or a later one."""
    data = delta(1) + handshake(2) + delta(3)  # the worker is "?" before the Handshake, "w" after
    whole = kinds(demux_run([data], lane))
    split = kinds(demux_run([data[:50], data[50:]], lane))
    assert whole == split == ["delta_before_schema"]


def test_steps_give_what_feed_gives() -> None:
    data = handshake(1) + b"garbage" + delta(2) + delta(3)[:-5]
    whole = FrameDecoder()
    expected = whole.feed(data) + whole.finish()
    stepped = FrameDecoder()
    stepped.append(data)
    got = []
    while items := stepped.step(final=False):
        assert len(items) == 1
        got += items
    stepped.compact()
    while items := stepped.step(final=True):
        got += items
    stepped.drop_all()
    assert got == expected
    assert stepped.offset == whole.offset == len(data)


def test_report_counts_a_run_like_its_messages_and_problems() -> None:
    problems = [before_schema_problem(i * 100, i, b"x/v1") for i in range(5)]
    recs = array("q")
    for i in range(5):
        recs.extend([2, i * 100, i, 0, 0, 0])
    batch = LaneRun(0, 500, 7, 700, (0, 5, 1, 0, 1, 0), b"", 0, recs, [b"x/v1"])
    assert list(batch.problems()) == problems
    one, bulk = Report(keep_problems=3), Report(keep_problems=3)
    a, b = one.source("s"), bulk.source("s")
    for p in problems:
        one.problem(a, p)
    bulk.run(b, batch)
    assert b.problems == a.problems == problems[:3]
    assert (b.unlisted_errors, b.unlisted_warnings) == (a.unlisted_errors, a.unlisted_warnings) == (2, 0)
    assert (b.messages, b.bytes, dict(b.by_type)) == (7, 700, {"Delta": 5, "Checkpoint_request": 1, "Heartbeat": 1})


def test_first_lines() -> None:
    batch = LaneRun(0, 0, 3, 0, (0,) * 6, b"(a)\n(b)\n(c)\n", 3, array("q"), [])
    assert batch.first_lines(0) == b""
    assert batch.first_lines(2) == b"(a)\n(b)\n"
    assert batch.first_lines(3) == batch.text


@needs_fast
def test_a_schema_too_deep_for_c_is_left_to_python() -> None:
    deep: OptionOf | Schema = OptionOf(INT)
    for _ in range(300):
        deep = OptionOf(deep)
    schema = Schema(b"deep", 1, STRING, (Field(b"x", deep),))
    assert compile_program(schema) is None
    data = handshake(1, schema) + delta(2, VWAP) + build_envelope(DELTA, 3, 0, b"deep/v1", b"")
    pure = demux_run([data], None, rules=False)
    fast = demux_run([data], LaneKind.SEXP, rules=False)
    assert [m.line for m in fast if isinstance(m, Message)] == [m.line for m in pure if isinstance(m, Message)]
    assert kinds(fast) == kinds(pure)


@needs_fast
def test_the_lane_stops_at_the_first_delta_of_an_output() -> None:
    """Python makes the first entry of (worker, output); the lane takes the rest."""
    data = handshake(1) + b"".join(delta(i + 2, sequence_no=i + 1) for i in range(10))
    items = demux_run([data], LaneKind.COUNT)
    assert [type(i).__name__ for i in items] == ["Message", "Message", "LaneRun"]
    assert isinstance(items[2], LaneRun) and items[2].messages == 9 and items[2].problem_count == 0


@pytest.mark.skipif(not FAST, reason="the C fast lane is off (not built here, or RIPPLE_PURE)")
def test_a_finished_streams_lane_is_freed() -> None:
    """The C scanner takes no part in garbage collection: a cycle through it
    (lane -> scanner -> the lane's bound method) would keep every stream's
    lane alive for the life of the process (a tap sees millions of them)."""
    import gc
    import weakref

    from ripple_cli.protocols.ripple.stream import RippleStream

    refs = []
    for _ in range(50):
        stream = RippleStream(DissectOptions(lane=LaneKind.SEXP, rules=True))
        stream.feed((EXAMPLES / "demo.ripple").read_bytes()[:4096])
        stream.finish()
        assert stream.lane is not None
        refs.append(weakref.ref(stream.lane))
        del stream
    gc.collect()
    assert [r for r in refs if r() is not None] == []


def test_problems_past_the_kept_ones_are_counted_by_severity() -> None:
    """A stream's summary line counts every problem, listed or not, and a
    warning past the kept ones stays a warning (no exit 1 without --strict)."""
    from ripple_cli.codec.problems import Problem, Severity
    from ripple_cli.render.verdict import text_report

    def warn(i: int) -> Problem:
        return Problem(i, "midstream", "w", severity=Severity.WARNING)

    report = Report(keep_problems=2)
    src = report.source("s")
    for i in range(5):
        report.problem(src, warn(i))
    assert (report.problem_count, report.warning_count, report.exit_code) == (0, 5, 0)
    lines = text_report(report, []).splitlines()
    assert lines[0] == "s: 0 messages, 0 bytes: 5 warnings"
    assert lines[-2:] == [
        "  ... and 3 more problems not listed",
        "verify: 1 stream, 0 messages, 0 problems, 5 warnings",
    ]

    strict = Report(strict=True, keep_problems=2)
    src = strict.source("s")
    for i in range(3):
        strict.problem(src, warn(i))
    batch = LaneRun(0, 500, 7, 700, (0, 5, 1, 0, 1, 0), b"", 0, array("q", [2, 0, 0, 0, 0, 0] * 4), [b"x/v1"])
    strict.run(src, batch)
    assert (strict.problem_count, strict.warning_count, strict.exit_code) == (7, 0, 1)
    assert text_report(strict, []).splitlines()[0].endswith("700 bytes: 7 problems")
