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
from ripple_cli.codec.envelope import DEFAULT_MAX_PAYLOAD, HEADER_SIZE, MAGIC, OVERHEAD
from ripple_cli.codec.framing import find_envelope
from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.codec.registry import SchemaRegistry
from ripple_cli.codec.stream import DeltaMode, Event, Message, StreamDecoder
from ripple_cli.flow.origin import Origin

Output = tuple[Origin, Event]
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
    ) -> None:
        self.source = source
        self.registry = registry
        self.delta_mode = delta_mode
        self.max_payload = max_payload
        self.check_rules = check_rules
        self.want = want or (lambda _s: True)
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
        if self.detect and stream is not None:
            verdict = self._verdict.get(stream.connection)
            if verdict is None:
                return self._hold(stream, event)
            if not verdict:
                return []
        return self._process(event)

    def _process(self, event: CaptureEvent) -> list[Output]:
        stream = event.stream
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

    def _hold(self, stream: StreamId, event: CaptureEvent) -> list[Output]:
        self._pending.setdefault(stream, []).append(event)
        buf = self._pending_bytes.setdefault(stream, bytearray())
        if isinstance(event, StreamData):
            buf += event.data
            if find_envelope(buf, self.max_payload) is not None:
                return self._decide(stream.connection, True)
            if len(buf) > max(DETECT_LIMIT, _wanted(buf, self.max_payload)):
                return self._decide(stream.connection, False, f"no envelope in {len(buf)} bytes")
        elif isinstance(event, StreamEnd):
            ends = [s for s in self._pending if s.connection == stream.connection]
            if all(any(isinstance(e, StreamEnd) for e in self._pending[s]) for s in ends):
                return self._decide(stream.connection, False, "no envelope")
        return []

    def _decide(self, connection: int, ripple: bool, why: str = "") -> list[Output]:
        self._verdict[connection] = ripple
        held = [s for s in self._pending if s.connection == connection]
        out: list[Output] = []
        for s in held:
            events = self._pending.pop(s)
            self._pending_bytes.pop(s, None)
            if ripple:
                for e in events:
                    out.extend(self._process(e))
            else:
                self.not_ripple[s] = why
        return out

    def finish(self, time_ns: int | None = None) -> list[Output]:
        """The input is over: streams still open end here."""
        out: list[Output] = []
        for conn in sorted({s.connection for s in self._pending}):
            out.extend(self._decide(conn, False, "no envelope"))
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
