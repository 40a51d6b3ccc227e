"""`Demux`: capture events in, (origin, message or problem) out.

Each stream direction gets its own `StreamDecoder` (so a Handshake applies
to its own connection) and, when asked, its own `SequenceChecker`.  A raw
stream file is one stream whose id is None.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ripple_cli.analysis.sequence import SequenceChecker
from ripple_cli.capture.events import (
    CaptureEvent,
    CaptureNote,
    StreamData,
    StreamEnd,
    StreamGap,
    StreamId,
    StreamStart,
)
from ripple_cli.codec.envelope import DEFAULT_MAX_PAYLOAD
from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.codec.registry import SchemaRegistry
from ripple_cli.codec.stream import DeltaMode, Event, Message, StreamDecoder
from ripple_cli.flow.origin import Origin

Output = tuple[Origin, Event]


@dataclass
class StreamState:
    stream: StreamId | None
    decoder: StreamDecoder
    checker: SequenceChecker | None
    messages: int = 0
    bytes: int = 0
    problems: int = 0
    first_ns: int | None = None
    last_ns: int | None = None
    ended: str | None = None  # why the stream ended, once it has
    by_type: dict[int, int] = field(default_factory=dict)


class Demux:
    def __init__(
        self,
        source: str,
        registry: SchemaRegistry | None = None,
        delta_mode: DeltaMode = DeltaMode.DECODE,
        max_payload: int = DEFAULT_MAX_PAYLOAD,
        check_rules: bool = False,
        want: Callable[[StreamId | None], bool] | None = None,
    ) -> None:
        self.source = source
        self.registry = registry
        self.delta_mode = delta_mode
        self.max_payload = max_payload
        self.check_rules = check_rules
        self.want = want or (lambda _s: True)
        self.streams: dict[StreamId | None, StreamState] = {}

    def _state(self, stream: StreamId | None, syn_seen: bool = True) -> StreamState:
        st = self.streams.get(stream)
        if st is None:
            decoder = StreamDecoder(self.registry, self.delta_mode, self.max_payload)
            if not syn_seen:
                decoder.frames.join_midstream()
            checker = SequenceChecker(decoder.messages.registry) if self.check_rules else None
            st = StreamState(stream, decoder, checker)
            self.streams[stream] = st
        return st

    def feed(self, event: CaptureEvent | StreamData) -> list[Output]:
        if isinstance(event, CaptureNote):
            if event.stream is not None and not self.want(event.stream):
                return []
            sev = Severity.ERROR if event.error else Severity.WARNING
            return [
                (Origin(self.source, event.stream, event.time_ns), Problem(-1, event.kind, event.detail, severity=sev))
            ]
        stream = event.stream
        if not self.want(stream):
            return []
        if isinstance(event, StreamStart):
            self._state(stream, event.syn_seen)
            return []
        st = self._state(stream)
        if isinstance(event, StreamData):
            return self._emit(st, st.decoder.feed(event.data), event.time_ns)
        if isinstance(event, StreamGap):
            return self._emit(st, st.decoder.gap(event.size), event.time_ns)
        if isinstance(event, StreamEnd):
            if st.ended is not None:
                return []
            st.ended = event.reason
            return self._emit(st, st.decoder.finish(), event.time_ns)
        raise TypeError(f"not a capture event: {event!r}")

    def finish(self, time_ns: int | None = None) -> list[Output]:
        """The input is over: streams still open end here."""
        out: list[Output] = []
        for st in self.streams.values():
            if st.ended is None:
                st.ended = "end of input"
                out.extend(self._emit(st, st.decoder.finish(), time_ns))
        return out

    def _emit(self, st: StreamState, events: list[Event], time_ns: int | None) -> list[Output]:
        if not events:
            return []
        origin = Origin(self.source, st.stream, time_ns)
        out: list[Output] = []
        if time_ns is not None:
            st.last_ns = time_ns
            if st.first_ns is None:
                st.first_ns = time_ns
        for ev in events:
            if isinstance(ev, Message):
                st.messages += 1
                st.bytes += ev.frame.size
                st.by_type[ev.frame.tag] = st.by_type.get(ev.frame.tag, 0) + 1
                out.append((origin, ev))
                if st.checker is not None:
                    for p in st.checker.observe(ev):
                        st.problems += 1
                        out.append((origin, p))
            else:
                st.problems += 1
                out.append((origin, ev))
        return out
