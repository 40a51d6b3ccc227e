"""Ripple's stream dissector: one direction of a connection, or a raw file.

It wraps the decoder (decoder.py), checks the stream rules as it goes when
asked (rules.py), and hands the boring envelopes to the fast lane (lane.py)
when one was asked for and the C extension is built.
"""

from __future__ import annotations

import mmap
from types import ModuleType

from ripple_cli.codec.fast import speedups
from ripple_cli.protocols.base import DissectOptions, LaneKind, StreamDissector
from ripple_cli.protocols.item import Item
from ripple_cli.protocols.ripple.decoder import Event, Message, StreamDecoder
from ripple_cli.protocols.ripple.lane import Lane
from ripple_cli.protocols.ripple.rules import ProgressTracker, SequenceChecker


class RippleStream(StreamDissector):
    takes_buffers = True  # the framer borrows a file's mmap windows (codec/framing.py)

    def __init__(self, options: DissectOptions, accel: ModuleType | None = None) -> None:
        """`accel`: the C extension for a fast lane, if `options.lane` asks
        for one (the dissector looks it up once per options); None looks it
        up here."""
        self.decoder = StreamDecoder(options.registry, options.deltas, options.max_payload)
        registry = self.decoder.messages.registry
        self.checker = SequenceChecker(registry) if options.rules or options.progress else None
        # Without --rules the checker only feeds the progress: its problems
        # are not the stream's (the tap reports what decode does).
        self._rules = options.rules
        self.tracker = ProgressTracker() if options.progress else None
        self.progress = None if self.tracker is None else self.tracker.progress
        self.lane: Lane | None = None
        if options.lane is not None and accel is None:
            accel = speedups()
        # The lane (a C scanner) is made with the stream's first bytes: the
        # many directions of a capture that never carry any cost nothing.
        self._lane_for = (accel, options, options.lane) if options.lane is not None and accel is not None else None
        # Step by step when the rules are checked (each message is observed
        # before the next is decoded, so a Delta is judged with the schemas
        # known at its place in the stream) or with a fast lane.
        self._steps = self._lane_for is not None or self.checker is not None

    def _make_lane(self, accel: ModuleType, options: DissectOptions, kind: LaneKind) -> None:
        self._lane_for = None
        d = self.decoder
        self.lane = Lane(
            accel,
            d.frames,
            d.messages.registry,
            options.deltas,
            self.checker,
            kind,
            options.prefilter,
            tracker=self.tracker,
            rules=self._rules,
        )

    def midstream(self) -> None:
        self.decoder.frames.join_midstream()

    def feed(self, data: bytes | mmap.mmap) -> list[Item]:
        if not self._steps:
            return self._events(self.decoder.feed(data))
        if self._lane_for is not None:
            self._make_lane(*self._lane_for)
        frames = self.decoder.frames
        frames.append(data)
        out = self._take(final=False)
        frames.compact()
        return out

    # The lazy form is `feed` itself (as the base class's, which calls it):
    # one call fewer a packet.
    feed_lazily = feed

    def gap(self, size: int) -> list[Item]:
        if not self._steps:
            return self._events(self.decoder.gap(size))
        out = self._take(final=False)
        self.decoder.frames.hole(size)
        return out

    def finish(self) -> list[Item]:
        if not self._steps:
            return self._events(self.decoder.finish())
        out = self._take(final=True)
        self.decoder.frames.drop_all()
        return out

    def _take(self, final: bool) -> list[Item]:
        """The lane's run of the ordinary envelopes at the head of the
        buffer, then the decoder's next step (the envelope the lane stopped
        at, or a damaged region), and again, in stream order; each is
        handled (rules included) before the next is taken, as both read
        the state the other leaves (the checker's last seq, the registry).
        One loop, no generator between: a capture calls it once a packet."""
        lane, decoder, checker, tracker, rules = self.lane, self.decoder, self.checker, self.tracker, self._rules
        out: list[Item] = []
        while True:
            if lane is not None and (run := lane.run()) is not None:
                out.append(run)
            events = decoder.step(final)
            if events is None:
                return out
            for ev in events:
                out.append(ev)
                if checker is not None and type(ev) is Message:
                    found = checker.observe(ev)
                    if rules:
                        out.extend(found)
                    if tracker is not None:
                        tracker.message(ev, found)

    @staticmethod
    def _events(events: list[Event]) -> list[Item]:
        return events  # type: ignore[return-value]
