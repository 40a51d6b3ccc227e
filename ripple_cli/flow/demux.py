"""`Demux`: capture events in, (origin, message or problem) out.

Each stream direction gets its own `StreamDecoder` (so a Handshake applies
to its own connection) and, when asked, its own `SequenceChecker`.  A raw
stream file is one stream whose id is None.

With `lane=`, each stream also gets a fast lane (codec/fast) when the C
extension is there, and `feed_batches`/`finish_batches` give `Batch`es
among the messages and problems: runs of envelopes the lane handled,
counted here like the messages they stand for.  `feed`/`finish` never do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import cast

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
from ripple_cli.codec.envelope import DEFAULT_MAX_PAYLOAD, HEADER_SIZE, MAGIC, OVERHEAD
from ripple_cli.codec.fast import speedups
from ripple_cli.codec.fast.lane import Batch, Lane, LaneKind
from ripple_cli.codec.framing import find_envelope
from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.codec.registry import SchemaRegistry
from ripple_cli.codec.stream import DeltaMode, Event, Message, StreamDecoder
from ripple_cli.flow.origin import Origin

Output = tuple[Origin, Event]
BatchOutput = tuple[Origin, Event | Batch]
DETECT_LIMIT = 1 << 20  # bytes a connection may show before it is judged not Ripple


def _wanted(buf: bytearray, max_payload: int) -> int:
    """How many bytes the last plausible envelope header in `buf` needs, so
    that a large first envelope is waited for rather than missed."""
    p = buf.rfind(MAGIC)
    if p < 0 or len(buf) - p < HEADER_SIZE:
        return 0
    length = int.from_bytes(buf[p + HEADER_SIZE - 4 : p + HEADER_SIZE], "little", signed=True)
    return p + OVERHEAD + length if 0 <= length <= max_payload else 0


@dataclass
class StreamState:
    stream: StreamId | None
    decoder: StreamDecoder
    checker: SequenceChecker | None
    lane: Lane | None = None
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
        detect: bool = False,
        lane: LaneKind | None = None,
    ) -> None:
        self.source = source
        self.registry = registry
        self.delta_mode = delta_mode
        self.max_payload = max_payload
        self.check_rules = check_rules
        self.want = want or (lambda _s: True)
        self.lane = lane
        self.streams: dict[StreamId | None, StreamState] = {}
        # Content detection (captures read without --port): a connection is
        # decoded once either direction shows a whole envelope with a valid
        # CRC; until then its events wait here, bounded by DETECT_LIMIT.
        self.detect = detect
        self._verdict: dict[int, bool] = {}  # connection -> carries Ripple
        self._pending: dict[StreamId, list[CaptureEvent]] = {}
        self._pending_bytes: dict[StreamId, bytearray] = {}
        self.not_ripple: dict[StreamId, str] = {}  # streams left undecoded, and why

    def _state(self, stream: StreamId | None, syn_seen: bool = True) -> StreamState:
        st = self.streams.get(stream)
        if st is None:
            decoder = StreamDecoder(self.registry, self.delta_mode, self.max_payload)
            if not syn_seen:
                decoder.frames.join_midstream()
            checker = SequenceChecker(decoder.messages.registry) if self.check_rules else None
            st = StreamState(stream, decoder, checker)
            if self.lane is not None and (accel := speedups()) is not None:
                st.lane = Lane(accel, decoder, checker, self.lane)
            self.streams[stream] = st
        return st

    def feed(self, event: CaptureEvent | StreamData) -> list[Output]:
        return cast(list[Output], self._feed(event, batches=False))

    def feed_batches(self, event: CaptureEvent | StreamData) -> list[BatchOutput]:
        """As `feed`, but streams with a fast lane give Batches too."""
        return self._feed(event, batches=True)

    def _feed(self, event: CaptureEvent | StreamData, batches: bool) -> list[BatchOutput]:
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
        if self.detect and stream is not None:
            verdict = self._verdict.get(stream.connection)
            if verdict is None:
                return self._hold(stream, event, batches)
            if not verdict:
                return []
        return self._process(event, batches)

    def _process(self, event: CaptureEvent, batches: bool) -> list[BatchOutput]:
        stream = event.stream
        if isinstance(event, StreamStart):
            self._state(stream, event.syn_seen)
            return []
        st = self._state(stream)
        lane = st.lane if batches else None
        # Step by step when the stream rules are checked (each message is
        # observed before the next is decoded, so a Delta is judged with the
        # schemas known at its place in the stream) or with a fast lane.
        steps = lane is not None or st.checker is not None
        dec = st.decoder
        if isinstance(event, StreamData):
            if steps:
                return self._emit_steps(st, dec.feed_steps(event.data, lane), event.time_ns)
            return self._emit(st, dec.feed(event.data), event.time_ns)
        if isinstance(event, StreamGap):
            if steps:
                return self._emit_steps(st, dec.gap_steps(event.size, lane), event.time_ns)
            return self._emit(st, dec.gap(event.size), event.time_ns)
        if isinstance(event, StreamEnd):
            if st.ended is not None:
                return []
            st.ended = event.reason
            if steps:
                return self._emit_steps(st, dec.finish_steps(lane), event.time_ns)
            return self._emit(st, dec.finish(), event.time_ns)
        raise TypeError(f"not a capture event: {event!r}")

    def _hold(self, stream: StreamId, event: CaptureEvent, batches: bool) -> list[BatchOutput]:
        self._pending.setdefault(stream, []).append(event)
        buf = self._pending_bytes.setdefault(stream, bytearray())
        if isinstance(event, StreamData):
            buf += event.data
            if find_envelope(buf, self.max_payload) is not None:
                return self._decide(stream.connection, True, batches=batches)
            if len(buf) > max(DETECT_LIMIT, _wanted(buf, self.max_payload)):
                return self._decide(stream.connection, False, f"no envelope in {len(buf)} bytes", batches)
        elif isinstance(event, StreamEnd):
            ends = [s for s in self._pending if s.connection == stream.connection]
            if all(any(isinstance(e, StreamEnd) for e in self._pending[s]) for s in ends):
                return self._decide(stream.connection, False, "no envelope", batches)
        return []

    def _decide(self, connection: int, ripple: bool, why: str = "", batches: bool = False) -> list[BatchOutput]:
        self._verdict[connection] = ripple
        held = [s for s in self._pending if s.connection == connection]
        out: list[BatchOutput] = []
        for s in held:
            events = self._pending.pop(s)
            self._pending_bytes.pop(s, None)
            if ripple:
                for e in events:
                    out.extend(self._process(e, batches))
            else:
                self.not_ripple[s] = why
        return out

    def finish(self, time_ns: int | None = None) -> list[Output]:
        """The input is over: streams still open end here."""
        return cast(list[Output], self._finish(time_ns, batches=False))

    def finish_batches(self, time_ns: int | None = None) -> list[BatchOutput]:
        return self._finish(time_ns, batches=True)

    def _finish(self, time_ns: int | None, batches: bool) -> list[BatchOutput]:
        out: list[BatchOutput] = []
        for conn in sorted({s.connection for s in self._pending}):
            out.extend(self._decide(conn, False, "no envelope"))
        for st in self.streams.values():
            if st.ended is None:
                st.ended = "end of input"
                lane = st.lane if batches else None
                if lane is not None or st.checker is not None:
                    out.extend(self._emit_steps(st, st.decoder.finish_steps(lane), time_ns))
                else:
                    out.extend(self._emit(st, st.decoder.finish(), time_ns))
        return out

    def _emit_steps(
        self, st: StreamState, steps: Iterator[Batch | list[Event]], time_ns: int | None
    ) -> list[BatchOutput]:
        """Each step is handled (stream rules included) before the next is
        taken: see StreamDecoder.feed_steps."""
        out: list[BatchOutput] = []
        for step in steps:
            if isinstance(step, Batch):
                self._seen(st, time_ns)
                st.messages += step.messages
                st.bytes += step.size
                for tag, n in enumerate(step.by_tag):
                    if n:
                        st.by_type[tag] = st.by_type.get(tag, 0) + n
                st.problems += step.problem_count
                out.append((Origin(self.source, st.stream, time_ns), step))
            else:
                out.extend(self._emit(st, step, time_ns))
        return out

    def _seen(self, st: StreamState, time_ns: int | None) -> None:
        if time_ns is not None:
            st.last_ns = time_ns
            if st.first_ns is None:
                st.first_ns = time_ns

    def _emit(self, st: StreamState, events: list[Event], time_ns: int | None) -> list[BatchOutput]:
        if not events:
            return []
        origin = Origin(self.source, st.stream, time_ns)
        out: list[BatchOutput] = []
        self._seen(st, time_ns)
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
