"""Item 4 (and the stream-end part of item 7) of issue 15: what a closed
connection leaves behind is its counts, not its decoders, and ending a
stream looks at its own connection only."""

from __future__ import annotations

import gc
import tracemalloc
import weakref
from typing import Any

import pytest

from ripple_cli.capture.events import Endpoint, StreamData, StreamEnd, StreamId, StreamStart
from ripple_cli.codec.fast import _load
from ripple_cli.flow.demux import Demux
from ripple_cli.flow.protocol_choice import RIPPLE, ProtocolChoice
from ripple_cli.protocols.base import DissectOptions, LaneKind
from tests.conftest import EXAMPLES

DEMO = (EXAMPLES / "demo.ripple").read_bytes()


class _Owner:
    """Holds a scanner whose resolve is the owner's own bound method: the
    cycle a lane made (lane -> scanner -> bound method -> lane)."""

    def __init__(self, accel: Any) -> None:
        self.scanner = accel.Scanner(max_payload=1 << 20, render=True, raw=False, rules=True, resolve=self.resolve)

    def resolve(self, fingerprint: bytes) -> tuple[bool, None]:
        return False, None


def test_a_cycle_through_the_c_scanner_is_collected() -> None:
    accel = _load()
    if accel is None:
        pytest.skip("the C fast lane is off (not built here, or RIPPLE_PURE)")
    refs = []
    for _ in range(100):
        owner = _Owner(accel)
        owner.scanner.run(DEMO, 0, len(DEMO), 0, None, b"", {}, True)
        refs.append(weakref.ref(owner))
    del owner
    gc.collect()
    assert [r for r in refs if r() is not None] == []


class _CountingDict(dict):  # type: ignore[type-arg]
    """The demux's streams, counting every walk over them."""

    walks = 0

    def values(self):  # type: ignore[no-untyped-def, override]
        _CountingDict.walks += 1
        return super().values()


def _connection(n: int) -> list[Any]:
    c, s = Endpoint("10.0.0.1", 40000 + n % 20000), Endpoint("10.0.0.2", 9000)
    up, down = StreamId(n, c, s, True), StreamId(n, c, s, False)
    return [
        StreamStart(up, n, True),
        StreamStart(down, n, True),
        StreamData(up, DEMO, n),
        StreamData(down, b"", n),
        StreamEnd(up, n, "fin"),
        StreamEnd(down, n, "fin"),
    ]


@pytest.mark.parametrize("lane", [None, LaneKind.COUNT, LaneKind.SEXP])
def test_closed_connections_leave_no_decoder_and_no_walk(lane: Any) -> None:
    options = DissectOptions(rules=True, lane=lane)
    demux = Demux("x", ProtocolChoice(protocol=RIPPLE, options=options))
    demux.streams = _CountingDict()
    _CountingDict.walks = 0
    dissectors = []
    for n in range(1, 301):
        events = _connection(n)
        for ev in events[:4]:
            demux.feed(ev)
        dissectors += [weakref.ref(demux.streams[ev.stream].dissector) for ev in events[:2]]
        for ev in events[4:]:
            demux.feed(ev)
    assert _CountingDict.walks == 0  # no stream end walked every stream seen
    gc.collect()
    assert [r for r in dissectors if r() is not None] == []
    assert len(demux.streams) == 600
    assert {st.messages for st in demux.streams.values() if st.stream.from_client} == {300}


def test_a_forgotten_connection_leaves_nothing() -> None:
    """The tap forgets each connection once both directions have ended:
    what a long-running tap holds does not grow with connections it saw."""
    demux = Demux("tap", ProtocolChoice(options=DissectOptions(lane=LaneKind.SEXP)))

    def connections(first: int, count: int) -> None:
        for n in range(first, first + count):
            for ev in _connection(n):
                demux.feed(ev)
            demux.forget(n)

    connections(1, 100)  # caches, interned names, the lane's first allocations
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        connections(101, 400)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert demux.streams == {}
    assert grown < 400 * 64, f"{grown / 400:.0f} bytes stay behind per connection"
