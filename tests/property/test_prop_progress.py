"""The tap's live view on the fast lane (LaneKind.TABLE, with the stream's
Progress) against the same view fed by the Python decoder, on streams of
the stream rules' cases, damage, odd names and values, cut anywhere and
with holes: the same counters (last seq, last Delta, watermark, load,
gaps, duplicates, seq errors) and the same latest messages."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ripple_strategies import prop
from test_prop_fast import _cuts, _events, chunk_plans, odd_table_streams, rule_stream_captures

from ripple_cli.capture.events import CaptureEvent
from ripple_cli.codec.fast import speedups
from ripple_cli.flow.demux import Demux
from ripple_cli.flow.pipeline import pump
from ripple_cli.flow.protocol_choice import ProtocolChoice
from ripple_cli.protocols.base import DissectOptions, LaneKind
from ripple_cli.tap.live import LATEST, LiveView
from ripple_cli.tap.stats import TapStats
from ripple_cli.terminal.environment import Environment
from tests.liveview import ViewFeed

pytestmark = pytest.mark.skipif(speedups() is None, reason="the C fast lane is not built (or RIPPLE_PURE is set)")


def seen(events: list[CaptureEvent], lane: LaneKind | None) -> tuple[object, ...]:
    """What the view would draw: the Progress (its counters of arrivals
    aside: a run counts its heartbeats and watermarks once), the totals,
    and the latest rows' text and styles."""
    env = Environment(
        stdin=io.BytesIO(), stdout=io.BytesIO(), stderr=io.StringIO(), stdout_isatty=True, stderr_isatty=False
    )
    stats = TapStats()
    view = LiveView(env, stats)
    demux = Demux("t", ProtocolChoice(protocol="ripple", options=DissectOptions(lane=lane, progress=True)))
    pump(events, demux, ViewFeed(stats, view))
    pr = demux.streams[None].progress
    assert pr is not None
    _streams, totals = stats.snapshot()
    latest = [tuple((t.plain, str(t.style)) for t in row) for row in view._latest]
    counters = (pr.seq, pr.position, pr.watermark_ns, repr(pr.load), pr.missing, pr.duplicates, pr.out_of_order)
    return counters, (totals.messages, totals.problems, dict(totals.by_type)), latest


def assert_same_view(events: list[CaptureEvent]) -> None:
    fast, slow = seen(events, LaneKind.TABLE), seen(events, None)
    assert fast[0] == slow[0], "counters (lane, python)"
    assert fast[1] == slow[1], "totals (lane, python)"
    assert len(fast[2]) <= LATEST
    assert fast[2] == slow[2], "latest messages (lane, python)"


@prop(100)
@given(st.data())
def test_the_live_view_of_a_stream_in_chunks_with_holes_as_python(data: st.DataObject) -> None:
    assert_same_view(data.draw(rule_stream_captures()))


@prop(100)
@given(st.data())
def test_the_live_view_of_odd_names_and_values_as_python(data: st.DataObject) -> None:
    stream = data.draw(odd_table_streams())
    cuts = _cuts(data.draw(chunk_plans), len(stream))
    assert_same_view(_events(stream, cuts, {}))
