"""export's rows on the fast lane (LaneKind.ROWS: codec/fast/rowsout.h and
batch/arrow.py's run_batch) against the rows batch/rows.py builds in
Python, value for value, on streams of every message type, odd names
(bytes that are not UTF-8, quoting), any int64 time, any float, damaged
streams, any chunking and holes, and raw streams split into ranges."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ripple_strategies import prop
from test_prop_fast import corrupted, odd_table_streams, rule_stream_captures, rule_streams

from ripple_cli.batch.inputs import discover
from ripple_cli.batch.local import plan_local, plan_rows
from ripple_cli.batch.rows import COLUMN_NAMES, Row
from ripple_cli.batch.tasks import RowSink, Settings, demux_rows, lanes, ripple_demux, rows_of
from ripple_cli.capture.events import CaptureEvent
from ripple_cli.codec.fast import speedups
from ripple_cli.codec.messages import DeltaMode
from ripple_cli.protocols.base import LaneKind

pytestmark = pytest.mark.skipif(speedups() is None, reason="the C fast lane is not built (or RIPPLE_PURE is set)")


@contextmanager
def pure() -> Iterator[None]:
    """The pure-Python lane for a while (speedups() reads RIPPLE_PURE at each call)."""
    before = os.environ.get("RIPPLE_PURE")
    os.environ["RIPPLE_PURE"] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ["RIPPLE_PURE"]
        else:
            os.environ["RIPPLE_PURE"] = before


def file_rows(stream: bytes, split_size: int) -> tuple[list[Row], list[Row], int]:
    """The rows of a raw stream file both ways, and how many came in lane batches."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "s.ripple"
        path.write_bytes(stream)

        def rows() -> tuple[list[Row], int]:
            items = list(plan_rows(plan_local(discover([str(path)]), Settings(), split_size)))
            return list(rows_of(items)), sum(0 if isinstance(i, tuple) else i.num_rows for i in items)

        fast, batched = rows()
        with pure():
            slow, none = rows()
        assert none == 0
        return fast, slow, batched


def demux_rows_of(events: list[CaptureEvent]) -> tuple[list[Row], int]:
    sink = RowSink("s.pcap", lanes=lanes() is not None)
    lane = LaneKind.ROWS if sink.takes_runs else None
    demux = ripple_demux("s.pcap", Settings(), DeltaMode.DECODE, lane=lane)
    items = list(demux_rows(events, demux, sink.attach(demux)))
    return list(rows_of(items)), sum(0 if isinstance(i, tuple) else i.num_rows for i in items)


def assert_same_rows(fast: list[Row], slow: list[Row]) -> None:
    """Equal; else the first row that differs, by column."""
    for i, (a, b) in enumerate(zip(fast, slow, strict=False)):
        diff = [(c, x, y) for c, x, y in zip(COLUMN_NAMES, a, b, strict=True) if x != y]
        assert not diff, f"row {i}: (column, lane, python): {diff}"
    assert len(fast) == len(slow)


split_sizes = st.sampled_from([1 << 20, 1 << 20, 64, 200, 1000])


@prop(100)
@given(st.data())
def test_rows_of_raw_streams_as_python(data: st.DataObject) -> None:
    """Every message type, the stream rules' cases (undeclared schemas,
    warnings, a Handshake anywhere), damage, and split ranges."""
    envs = data.draw(rule_streams())
    stream = data.draw(st.one_of(st.just(b"".join(e.to_bytes() for e in envs)), corrupted(envs)))
    fast, slow, _ = file_rows(stream, data.draw(split_sizes))
    assert_same_rows(fast, slow)


@prop(100)
@given(st.data())
def test_rows_of_odd_names_and_values_as_python(data: st.DataObject) -> None:
    """Names, outputs, workers and strings of any bytes (\\xNN where they
    are not UTF-8), times of any int64, loads of any float."""
    stream = data.draw(odd_table_streams())
    fast, slow, _ = file_rows(stream, data.draw(split_sizes))
    assert_same_rows(fast, slow)


@prop(100)
@given(st.data())
def test_rows_of_chunked_streams_with_holes_as_python(data: st.DataObject) -> None:
    """A capture's stream: the lane's runs between packets, holes, damage."""
    events = data.draw(rule_stream_captures())
    fast, _ = demux_rows_of(events)
    with pure():
        slow, none = demux_rows_of(events)
    assert none == 0
    assert_same_rows(fast, slow)


def test_the_demo_is_made_of_lane_batches() -> None:
    """The lane takes every envelope of the demo but its first two (the
    Handshake, and the envelope after it: the lane sits out a step after one
    it could not take, lane.py's back-off): 298 of its 300 rows come in
    batches, not one by one (unknown schemas and every other type included)."""
    demo = Path(__file__).resolve().parents[2] / "examples" / "demo.ripple"
    fast, slow, batched = file_rows(demo.read_bytes(), 1 << 20)
    assert_same_rows(fast, slow)
    assert (len(fast), batched) == (300, 298)
