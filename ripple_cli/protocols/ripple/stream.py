"""Ripple's stream dissector: one direction of a connection, or a raw file.

It wraps the decoder (decoder.py), checks the stream rules as it goes when
asked (rules.py), and hands the boring envelopes to the fast lane (lane.py)
when one was asked for and the C extension is built.
"""

from __future__ import annotations

from collections.abc import Iterator

from ripple_cli.codec.fast import speedups
from ripple_cli.protocols.base import DissectOptions, LaneKind, StreamDissector
from ripple_cli.protocols.item import Item
from ripple_cli.protocols.ripple.decoder import Event, Message, StreamDecoder
from ripple_cli.protocols.ripple.lane import Lane, LaneRun
from ripple_cli.protocols.ripple.rules import SequenceChecker


class RippleStream(StreamDissector):
    def __init__(self, options: DissectOptions) -> None:
        self.decoder = StreamDecoder(options.registry, options.deltas, options.max_payload)
        self.checker = SequenceChecker(self.decoder.messages.registry) if options.rules else None
        self.lane: Lane | None = None
        if options.lane is not None and (accel := speedups()) is not None:
            self.lane = Lane(accel, self.decoder, self.checker, render=options.lane is LaneKind.SEXP)
        # Step by step when the rules are checked (each message is observed
        # before the next is decoded, so a Delta is judged with the schemas
        # known at its place in the stream) or with a fast lane.
        self._steps = self.lane is not None or self.checker is not None

    def midstream(self) -> None:
        self.decoder.frames.join_midstream()

    def feed(self, data: bytes) -> list[Item]:
        if self._steps:
            return self._take(self.decoder.feed_steps(data, self.lane))
        return self._events(self.decoder.feed(data))

    def gap(self, size: int) -> list[Item]:
        if self._steps:
            return self._take(self.decoder.gap_steps(size, self.lane))
        return self._events(self.decoder.gap(size))

    def finish(self) -> list[Item]:
        if self._steps:
            return self._take(self.decoder.finish_steps(self.lane))
        return self._events(self.decoder.finish())

    def _take(self, steps: Iterator[LaneRun | list[Event]]) -> list[Item]:
        out: list[Item] = []
        checker = self.checker
        for step in steps:
            if type(step) is LaneRun:
                out.append(step)
                continue
            for ev in step:  # type: ignore[union-attr]
                out.append(ev)
                if checker is not None and type(ev) is Message:
                    out.extend(checker.observe(ev))
        return out

    @staticmethod
    def _events(events: list[Event]) -> list[Item]:
        return events  # type: ignore[return-value]
