"""The one road: a source's events -> Demux -> dissectors -> a sink.

Every command that decodes (decode, verify, tap, replay, the batch tasks)
runs its input through `pump` (or `steps`, to act between events) into a
`Sink`.  This is the one place that tells the three kinds of item apart
(protocols/item.py): a message, a problem, a fast lane's run.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Protocol

from ripple_cli.capture.events import CaptureEvent
from ripple_cli.codec.problems import Problem
from ripple_cli.flow.demux import Demux, Output
from ripple_cli.protocols.item import Decoded, Run
from ripple_cli.protocols.origin import Origin

FLUSH_EVERY = 0.1  # seconds: a live pipe shows messages within this


class Sink(Protocol):
    """Where decoded items go.  A sink that takes runs (`takes_runs`) gets
    a fast lane's runs; one that does not gets every message one by one."""

    @property
    def takes_runs(self) -> bool: ...

    def message(self, origin: Origin, msg: Decoded) -> None: ...

    def problem(self, origin: Origin, problem: Problem) -> None: ...

    def run(self, origin: Origin, run: Run) -> None: ...

    def flush(self) -> None:
        """The input paused (a chunk is done): a live pipe shows what came."""


class BaseSink:
    """A sink that ignores what it is not interested in: subclasses
    override the calls they need.  It takes no runs unless it says so."""

    takes_runs = False

    def message(self, origin: Origin, msg: Decoded) -> None:
        pass

    def problem(self, origin: Origin, problem: Problem) -> None:
        pass

    def run(self, origin: Origin, run: Run) -> None:
        raise TypeError(f"{type(self).__name__} asked for no fast lane: it takes messages one by one")

    def flush(self) -> None:
        pass


class Enough(Exception):
    """Raised by a sink that has all it wants (--count): the input stops."""


def deliver(outputs: Iterable[Output], sink: Sink) -> bool:
    """Each output to the sink as it comes; whether there was any."""
    any_output = False
    for origin, item in outputs:
        any_output = True
        if isinstance(item, Problem):
            sink.problem(origin, item)
        elif isinstance(item, Run):
            sink.run(origin, item)
        else:
            sink.message(origin, item)
    return any_output


def steps(events: Iterable[CaptureEvent], demux: Demux, sink: Sink) -> Iterator[bool]:
    """Each event's items to the sink, then the end of the input's; yields
    after each event (whether it gave any item), so the caller may act
    between them.  `Enough` from the sink ends it early."""
    for event in events:
        # Lazily: an event's items reach the sink as they are decoded.
        yield deliver(demux.feed_lazily(event), sink)
    deliver(demux.finish_lazily(), sink)


def pump(events: Iterable[CaptureEvent], demux: Demux, sink: Sink, live: bool = False) -> bool:
    """The whole input through; the sink is flushed at pauses (every
    FLUSH_EVERY seconds, or after every event that gave items when `live`:
    a pipe watched as it goes) and at the end.  False when the sink said
    `Enough`."""
    last_flush = time.monotonic()
    try:
        for produced in steps(events, demux, sink):
            now = time.monotonic()
            if (live and produced) or now - last_flush >= FLUSH_EVERY:
                sink.flush()
                last_flush = now
    except Enough:
        return False
    sink.flush()
    return True
