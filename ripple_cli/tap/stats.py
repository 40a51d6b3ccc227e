"""What the tap has seen, per stream direction and in total: counters kept
by the decoding thread and read by the printing thread (live view, summary).

Counts cover every decoded message, shown or not: the print queue may drop
messages, the statistics never miss one the decoder saw.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field, replace

from ripple_cli.capture.events import CaptureEvent, StreamData, StreamEnd, StreamGap, StreamId, StreamStart
from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.protocols.item import Decoded, Progress, Run
from ripple_cli.protocols.origin import Origin
from ripple_cli.terminal.words import plural

KEEP_CLOSED = 256  # closed connections kept for the view; older ones only count in the totals


@dataclass
class StreamStats:
    """One direction of one connection."""

    stream: StreamId
    started_ns: int | None = None
    ended: str | None = None  # why it ended, once it has
    stream_bytes: int = 0  # stream bytes the decoder got
    lost: int = 0  # stream bytes it never got (dropped copies, capture holes)
    messages: int = 0
    message_bytes: int = 0
    by_type: Counter[str] = field(default_factory=Counter)
    problems: int = 0  # errors and warnings on this stream
    crc_errors: int = 0
    last_seq: int | None = None
    last_delta: tuple[str, int] | None = None  # (output, its sequence number): Progress.position
    delta_missing: int = 0  # Delta sequence numbers skipped
    delta_duplicates: int = 0
    seq_errors: int = 0  # envelope seq not increasing
    heartbeat: tuple[int, float] | None = None  # (arrival time ns, load) of the last Heartbeat
    watermark_lag_ns: int | None = None  # arrival time minus watermark, of the last Delta that had one


@dataclass
class Totals:
    connections: int = 0
    open_connections: int = 0
    messages: int = 0
    problems: int = 0  # errors, as reported
    warnings: int = 0  # as reported: a note (an upstream not reached), an unknown type, flags
    stream_bytes: int = 0
    not_decoded: int = 0  # stream bytes the decoder never saw
    by_type: Counter[str] = field(default_factory=Counter)


class TapStats:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: dict[StreamId, StreamStats] = {}
        self._seen: dict[StreamId, tuple[int, int]] = {}  # (heartbeats, watermarks) of the last progress read
        self._open: dict[int, int] = {}  # connection -> directions not yet ended
        self._closed: list[int] = []  # closed connections, oldest first
        self._ignored: dict[int, int] = {}  # connections found not to carry Ripple -> directions ended
        self.totals = Totals()
        # Set by the session: what the queues dropped, what the source said at its end.
        self.not_shown_messages = 0
        self.not_shown_problems = 0
        self.not_recorded = 0
        self.notes: list[str] = []
        self.ended_by: str | None = None  # "interrupted", "terminated", "count reached"; None: the source ended

    # -- the decoding thread --------------------------------------------------

    def event(self, ev: CaptureEvent) -> None:
        stream = ev.stream
        if stream is None:
            return
        with self._lock:
            ignored = self._ignored.get(stream.connection)
            if ignored is not None:
                if isinstance(ev, StreamEnd):
                    if ignored:  # the second direction's end: forget the connection
                        del self._ignored[stream.connection]
                    else:
                        self._ignored[stream.connection] = 1
                return
            if isinstance(ev, StreamStart):
                if stream not in self._streams:
                    self._streams[stream] = StreamStats(stream, ev.time_ns)
                    if stream.connection not in self._open:
                        self._open[stream.connection] = 0
                        self.totals.connections += 1
                    self._open[stream.connection] += 1
                    self.totals.open_connections = len(self._open)
                return
            st = self._streams.get(stream)
            if st is None:
                return
            if isinstance(ev, StreamData):
                st.stream_bytes += len(ev.data)
                self.totals.stream_bytes += len(ev.data)
            elif isinstance(ev, StreamGap):
                st.lost += ev.size
                self.totals.not_decoded += ev.size
            elif isinstance(ev, StreamEnd) and st.ended is None:
                st.ended = ev.reason
                left = self._open.get(stream.connection, 0) - 1
                if left > 0:
                    self._open[stream.connection] = left
                else:
                    self._open.pop(stream.connection, None)
                    self._forget_old(stream.connection)
                self.totals.open_connections = len(self._open)

    def undecoded(self, connection: int) -> None:
        """Content detection found no known protocol on this connection (sniffing
        without --port): it leaves the view and the counts."""
        with self._lock:
            if connection in self._ignored or not any(s.connection == connection for s in self._streams):
                return
            gone = [s for s in self._streams if s.connection == connection]
            ended = sum(1 for s in gone if self._streams[s].ended is not None)
            if ended < 2:
                self._ignored[connection] = ended  # its later events are ignored, until both ends
            for s in gone:
                self.totals.stream_bytes -= self._streams.pop(s).stream_bytes
                self._seen.pop(s, None)
            if gone:
                self.totals.connections -= 1
            if self._open.pop(connection, None) is not None:
                self.totals.open_connections = len(self._open)

    def _forget_old(self, connection: int) -> None:
        self._closed.append(connection)
        if len(self._closed) > KEEP_CLOSED:
            old = self._closed.pop(0)
            for s in [s for s in self._streams if s.connection == old]:
                del self._streams[s]
                self._seen.pop(s, None)

    def output(self, origin: Origin, item: Decoded | Problem) -> None:
        stream = origin.stream
        with self._lock:
            st = self._streams.get(stream) if stream is not None else None
            if isinstance(item, Problem):
                if item.severity is Severity.WARNING:
                    self.totals.warnings += 1
                else:
                    self.totals.problems += 1
                if st is not None:
                    st.problems += 1
                    if item.kind == "crc_mismatch":
                        st.crc_errors += 1
                return
            name = item.type
            self.totals.messages += 1
            self.totals.by_type[name] += 1
            if st is None or stream is None:
                return
            st.messages += 1
            st.message_bytes += item.size
            st.by_type[name] += 1

    def run(self, origin: Origin, run: Run) -> None:
        """A fast lane's run: its counts, its problems among them."""
        stream = origin.stream
        with self._lock:
            t = self.totals
            t.messages += run.messages
            t.problems += run.problem_count
            st = self._streams.get(stream) if stream is not None else None
            if st is not None:
                st.messages += run.messages
                st.message_bytes += run.size
                st.problems += run.problem_count
            for name, n in run.counts():
                t.by_type[name] += n
                if st is not None:
                    st.by_type[name] += n

    def progress(self, stream: StreamId, pr: Progress, time_ns: int | None) -> None:
        """Where the stream's dissector has got to (StreamDissector.progress),
        after an event that arrived at `time_ns`: a heartbeat or watermark
        that is new since the last call arrived then."""
        with self._lock:
            st = self._streams.get(stream)
            if st is None:
                return
            st.last_seq = pr.seq
            st.last_delta = pr.position
            seen = self._seen.get(stream, (0, 0))
            if time_ns is not None:
                if pr.heartbeats != seen[0] and pr.load is not None:
                    st.heartbeat = (time_ns, pr.load)
                if pr.watermarks != seen[1] and pr.watermark_ns is not None:
                    st.watermark_lag_ns = time_ns - pr.watermark_ns
            self._seen[stream] = (pr.heartbeats, pr.watermarks)
            st.delta_missing = pr.missing
            st.delta_duplicates = pr.duplicates
            st.seq_errors = pr.out_of_order

    # -- any thread -----------------------------------------------------------

    def snapshot(self) -> tuple[list[StreamStats], Totals]:
        """Copies, consistent with each other, to render without the lock."""
        with self._lock:
            streams = [replace(s, by_type=Counter(s.by_type)) for s in self._streams.values()]
            totals = replace(self.totals, by_type=Counter(self.totals.by_type))
        return streams, totals

    def summary(self) -> str:
        """One line: what was seen, and what was not shown or decoded."""
        _streams, t = self.snapshot()
        parts = [
            plural(t.connections, "connection"),
            plural(t.messages, "message"),
            plural(t.problems, "problem"),
            *([plural(t.warnings, "warning")] if t.warnings else []),
        ]
        losses = [
            f"{plural(self.not_shown_messages, 'message')} not shown",
            f"{plural(t.not_decoded, 'byte')} not decoded",
        ]
        if self.not_shown_problems:
            losses.insert(1, f"{plural(self.not_shown_problems, 'problem')} not shown")
        if self.not_recorded:
            losses.append(f"{plural(self.not_recorded, 'byte')} not recorded")
        return ", ".join(parts) + "; " + ", ".join(losses) + "".join(f"; {n}" for n in self.notes)
