"""`Demux`: capture events in, (origin, item) out.

Each connection is given a protocol (`ProtocolChoice`: from the options, or
from its first bytes, asking every candidate dissector).  Each stream
direction then gets its own `StreamDissector` (so a Ripple Handshake
applies to its own connection) and, when rules are checked
(`DissectOptions.rules`), each connection its protocol's
`ConnectionAnalyzer`.  A raw stream file is one stream whose id is None.

Items are messages, problems and, when the options ask for a fast lane,
`Run`s of messages a lane decoded at once, counted here like the messages
they stand for.  The pipeline (pipeline.py) hands them to a sink.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ripple_cli.capture.events import (
    CaptureEvent,
    CaptureNote,
    StreamData,
    StreamEnd,
    StreamGap,
    StreamId,
    StreamStart,
    TcpCounts,
)
from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.flow.protocol_choice import RIPPLE, ProtocolChoice
from ripple_cli.protocols import registry as protocols
from ripple_cli.protocols.base import ConnectionAnalyzer, Detection, StreamDissector
from ripple_cli.protocols.item import Item, Progress, Run
from ripple_cli.protocols.origin import Origin
from ripple_cli.terminal.words import plural

Output = tuple[Origin, Item]
DETECT_LIMIT = 1 << 20  # bytes a direction may show before every detector's "no" is final
UNDECIDED_LIMIT = 16 << 20  # bytes held per direction while some detector still asks for more
_LIMITS = (64 << 10, DETECT_LIMIT, UNDECIDED_LIMIT)  # head lengths where a decision may change
_ALWAYS_ASK = 4096  # a head this short is looked at after every segment


class _Ended(StreamDissector):
    """Stands for a stream's dissector once the stream has ended, so a
    capture of many short flows keeps their counts, not their decoders."""

    def feed(self, data: bytes) -> list[Item]:
        return []

    def gap(self, size: int) -> list[Item]:
        return []

    def finish(self) -> list[Item]:
        return []


_ENDED = _Ended()


@dataclass
class StreamState:
    stream: StreamId | None
    protocol: str
    dissector: StreamDissector
    messages: int = 0
    bytes: int = 0
    problems: int = 0
    first_ns: int | None = None
    last_ns: int | None = None
    ended: str | None = None  # why the stream ended, once it has
    by_type: dict[str, int] = field(default_factory=dict)  # messages of each type name
    # The dissector's progress (DissectOptions.progress), kept past its end.
    progress: Progress | None = None


class Demux:
    def __init__(
        self,
        source: str,
        choice: ProtocolChoice | None = None,
        want: Callable[[StreamId | None], bool] | None = None,
        seed: int = 0,
    ) -> None:
        self.source = source
        self.seed = seed  # the Community ID's seed, on every origin
        self.want = want or (lambda _s: True)
        # Whether `want` chose any stream of the input, and whether it turned
        # down a raw stream's (--stream's hint).
        self.wanted_any = False
        self.unwanted_raw = False
        self.choice = choice or ProtocolChoice(protocol=RIPPLE)
        self.options = self.choice.options
        self.streams: dict[StreamId | None, StreamState] = {}
        # A connection's directions, so a stream's end looks at its own
        # connection's states, not at every stream seen.
        self._sides: dict[int | None, dict[bool | None, StreamState]] = {}
        # Detection: a connection (or raw file) whose protocol the options do
        # not fix is decoded once a candidate dissector recognises the first
        # bytes of either direction; until then its events wait here.
        self._verdict: dict[int | None, str | None] = {}  # connection -> protocol (None: undecodable)
        self._pending: dict[StreamId | None, list[CaptureEvent]] = {}
        self._pending_bytes: dict[StreamId | None, bytearray] = {}
        self._held_events: dict[int | None, list[CaptureEvent]] = {}  # the same, in capture order
        self._held_streams: dict[int | None, list[StreamId | None]] = {}  # each held connection's directions
        # A held head's length when the detectors last saw it, and what they said.
        self._asked: dict[StreamId | None, tuple[int, str | Detection]] = {}
        self._held_ended: set[StreamId | None] = set()  # held directions whose end has come
        # Held directions whose head stopped at a hole: the detectors see the
        # bytes before it (across it, a message would read as garbage and
        # every detector say no), and the bytes held after it count here.
        self._cut: dict[StreamId | None, int] = {}
        self.undecoded: dict[StreamId, str] = {}  # streams left undecoded, and why
        self._analyzers: dict[int | None, ConnectionAnalyzer | None] = {}
        # Each analyzed connection's summary (ConnectionAnalyzer.report), with
        # the stream it is reported on (the client's side) and the protocol.
        self.analyses: list[tuple[StreamId | None, str, dict[str, Any]]] = []
        self._syn: dict[StreamId | None, bool] = {}
        # Each reassembled stream's TCP counts (out of order, retransmitted,
        # acked unseen, held), from its end: decoded or not.
        self.tcp: dict[StreamId, TcpCounts] = {}

    def forget(self, connection: int) -> None:
        """A connection is over for good (a tap may see millions): its
        streams' states go, their counts with them."""
        for st in self._sides.pop(connection, {}).values():
            self.streams.pop(st.stream, None)
            self._syn.pop(st.stream, None)
        self._verdict.pop(connection, None)

    def protocol_of(self, stream: StreamId | None) -> str | None:
        """The protocol decided for a stream's connection, if any yet."""
        return self._verdict.get(None if stream is None else stream.connection)

    def _state(self, stream: StreamId | None) -> StreamState:
        st = self.streams.get(stream)
        if st is None:
            protocol = self.protocol_of(stream) or RIPPLE
            dissector = protocols.get(protocol)
            from_client = None if stream is None else stream.from_client
            dis = dissector.stream(self.options, from_client)
            st = StreamState(stream, protocol, dis, progress=dis.progress)
            if not self._syn.get(stream, True):
                st.dissector.midstream()
            conn = None if stream is None else stream.connection
            if self.options.rules and conn not in self._analyzers:
                self._analyzers[conn] = dissector.analyzer(self.options)
            self.streams[stream] = st
            self._sides.setdefault(conn, {})[from_client] = st
        return st

    def feed(self, event: CaptureEvent | StreamData) -> list[Output]:
        return list(self.feed_lazily(event))

    def feed_lazily(self, event: CaptureEvent | StreamData) -> Iterator[Output]:
        """As `feed`, item by item as the dissector decodes them: what one
        event gives (a chunk of compressed frames may give millions of
        messages) need not all be held at once."""
        if type(event) is StreamData and (st := self.streams.get(event.stream)) is not None:
            # The usual event, a packet's bytes on a stream being decoded (its
            # state exists once it is wanted and its protocol decided): straight
            # to its dissector, one generator fewer a packet.
            data = event.data
            if type(data) is not bytes and not st.dissector.takes_buffers:
                data = bytes(data)
            yield from self._emit(st, st.dissector.feed_lazily(data), event.time_ns)  # type: ignore[arg-type]
            return
        if isinstance(event, CaptureNote):
            if event.stream is not None and not self.want(event.stream):
                return
            sev = Severity.ERROR if event.error else Severity.WARNING
            problem = Problem(-1, event.kind, event.detail, skipped=event.skipped, severity=sev)
            yield (Origin(self.source, event.stream, event.time_ns, self.seed), problem)
            return
        stream = event.stream
        if not self.want(stream):
            self.unwanted_raw = self.unwanted_raw or stream is None
            return
        self.wanted_any = True
        if isinstance(event, StreamEnd) and event.tcp is not None and stream is not None:
            self.tcp[stream] = event.tcp
        conn = None if stream is None else stream.connection
        if conn not in self._verdict:
            fixed = self.choice.fixed(stream)
            if fixed is None:
                yield from self._hold(stream, event)
                return
            self._verdict[conn] = fixed
        if self._verdict[conn] is None:
            return
        yield from self._process(event)

    def _process(self, event: CaptureEvent) -> Iterator[Output]:
        stream = event.stream
        if isinstance(event, StreamStart):
            self._syn[stream] = event.syn_seen
            self._state(stream)
            return
        st = self._state(stream)
        dis = st.dissector
        if isinstance(event, StreamData):
            data = event.data
            if type(data) is not bytes and not dis.takes_buffers:
                data = bytes(data)  # a file's mmap window (StreamData.data)
            yield from self._emit(st, dis.feed_lazily(data), event.time_ns)  # type: ignore[arg-type]
            return
        if isinstance(event, StreamGap):
            yield from self._emit(st, dis.gap(event.size), event.time_ns)
            return
        if isinstance(event, StreamEnd):
            if st.ended is not None:
                return
            st.ended = event.reason
            yield from self._emit(st, dis.finish_lazily(), event.time_ns)
            if st.stream is not None:  # one of many flows: what decoded it is done, let it go
                st.dissector = _ENDED
            # The connection's rules are closed once both directions have
            # ended (a half-closed client may still be answered), or at finish.
            conn = None if st.stream is None else st.stream.connection
            if conn not in self._analyzers:
                return
            ended_sides = {side for side, s in self._sides.get(conn, {}).items() if s.ended is not None}
            if st.stream is None or ended_sides == {True, False}:
                yield from self._close_analyzer(st, conn, event.time_ns)
            return
        raise TypeError(f"not a capture event: {event!r}")

    def _close_analyzer(self, st: StreamState, conn: int | None, time_ns: int | None) -> Iterator[Output]:
        analyzer = self._analyzers.pop(conn, None)
        if analyzer is None:
            return
        sides = {side: s for side, s in self._sides.get(conn, {}).items() if side is not None}
        for p in analyzer.close():
            side = p.extra.get("from_client")
            target = sides.get(side, st) if isinstance(side, bool) else st
            target.problems += 1
            yield (Origin(self.source, target.stream, time_ns, self.seed), p)
        summary = analyzer.report()
        if summary is not None:
            where = sides.get(True, st).stream
            self.analyses.append((where, st.protocol, summary))

    def _emit(self, st: StreamState, items: Iterable[Item], time_ns: int | None) -> Iterator[Output]:
        origin = Origin(self.source, st.stream, time_ns, self.seed)
        timed = time_ns is None  # a stream's times are those of events that gave items
        analyzer = self._analyzers.get(None if st.stream is None else st.stream.connection)
        from_client = None if st.stream is None else st.stream.from_client
        by_type = st.by_type
        for item in items:
            if not timed:
                timed = True
                st.last_ns = time_ns
                if st.first_ns is None:
                    st.first_ns = time_ns
            if isinstance(item, Problem):
                st.problems += 1
                yield (origin, item)
                continue
            if isinstance(item, Run):
                st.messages += item.messages
                st.bytes += item.size
                for name, n in item.counts():
                    by_type[name] = by_type.get(name, 0) + n
                st.problems += item.problem_count
                yield (origin, item)
                continue
            st.messages += 1
            st.bytes += item.size
            name = item.type
            by_type[name] = by_type.get(name, 0) + 1
            if analyzer is None:
                yield (origin, item)
                continue
            analyzer.time_ns = time_ns
            found = analyzer.observe(from_client, item)  # type: ignore[arg-type]  # its protocol's messages
            st.problems += len(found)
            yield (origin, item)
            for p in found:
                yield (origin, p)

    def _hold(self, stream: StreamId | None, event: CaptureEvent) -> Iterator[Output]:
        conn = None if stream is None else stream.connection
        self._pending.setdefault(stream, []).append(event)
        self._held_events.setdefault(conn, []).append(event)
        held = self._held_streams.setdefault(conn, [])
        if stream not in held:
            held.append(stream)
        buf = self._pending_bytes.setdefault(stream, bytearray())
        cut = False
        if isinstance(event, StreamData):
            if stream in self._cut:
                self._cut[stream] += len(event.data)
            else:
                buf += event.data
        elif isinstance(event, StreamGap) and stream not in self._cut:
            self._cut[stream] = 0
            cut = True  # the head is whole now: the detectors look at it once more
        if isinstance(event, StreamEnd):
            self._held_ended.add(stream)
        ended = all(s in self._held_ended for s in held)
        if not ended and not cut and not self._worth_asking(held):
            return  # not enough new bytes since the detectors last looked
        yield from self._judge(stream, held, ended)

    def _worth_asking(self, held: list[StreamId | None]) -> bool:
        """Each look copies and scans a whole head, so the detectors look
        again only once a head has grown by an eighth since they last did
        (or crossed a limit): what detection costs stays within a constant
        of the bytes held (a geometric sum), not their square."""
        for s in held:
            # What is held after a hole counts too (the limits are on all
            # that is held); the detectors' verdict on the head is kept.
            n = len(self._pending_bytes.get(s, b"")) + self._cut.get(s, 0)
            last = self._asked.get(s, (0, Detection.MORE))[0]
            if n > last and (n <= _ALWAYS_ASK or 8 * (n - last) >= last or any(last <= x < n for x in _LIMITS)):
                return True
        return False

    def _judge(self, stream: StreamId | None, held: list[StreamId | None], ended: bool) -> Iterator[Output]:
        heads = {s: len(self._pending_bytes[s]) for s in held if self._pending_bytes.get(s)}
        if not heads and not ended and not any(self._cut.get(s) for s in held):
            return  # nothing to look at yet
        said = {s: self._said(s, n) for s, n in heads.items()}
        client = next((v for s, v in said.items() if s is None or s.from_client), None)
        server = next((v for s, v in said.items() if s is not None and not s.from_client), None)
        longest = max((len(self._pending_bytes.get(s, b"")) + self._cut.get(s, 0) for s in held), default=0)
        # The client's first bytes decide (they are the surer sign: a server's
        # answer may be a few bytes that several protocols could start with);
        # the server's only once the client's are no protocol's, or when the
        # client has sent nothing by the end or within the bounds.
        if isinstance(client, str):
            yield from self._decide(stream, client)
            return
        if isinstance(server, str) and (
            client is Detection.NO or ended or longest > DETECT_LIMIT or (client is None and longest > 64 << 10)
        ):
            yield from self._decide(stream, server)
            return
        # Every direction seen must have said no (or the input is over, or it
        # is too long to hold) before a connection is given up on; a raw
        # file is never given up on (see ProtocolChoice.fallback).
        undecided = Detection.MORE in said.values()
        both = stream is None or len(heads) >= 2
        refused = not undecided and (both or longest > DETECT_LIMIT) and not isinstance(server, str)
        if ended or refused or longest > UNDECIDED_LIMIT:
            why = "no protocol recognised" + (f" in {longest} bytes" if longest else "")
            cut = [len(self._pending_bytes.get(s, b"")) for s in held if s in self._cut]
            if cut:  # the detectors saw only what came before the hole: say so (a short snap length, often)
                why = f"no protocol recognised in the {plural(max(cut), 'byte')} before a hole"
            yield from self._decide(stream, self.choice.fallback(stream), why)
            return

    def _said(self, stream: StreamId | None, n: int) -> str | Detection:
        """What the detectors say of a held head of `n` bytes, asked once per length."""
        last = self._asked.get(stream)
        if last is not None and last[0] == n:
            return last[1]
        verdict = self._detect(bytes(self._pending_bytes[stream]))
        self._asked[stream] = (n, verdict)
        return verdict

    def _detect(self, head: bytes) -> str | Detection:
        """The first candidate (in detection order) that recognises `head`;
        else MORE when one may with more bytes, else NO."""
        more = False
        for dissector in self.choice.candidates():
            verdict = dissector.detect(head)
            if verdict is Detection.YES:
                return dissector.name
            more = more or verdict is Detection.MORE
        return Detection.MORE if more else Detection.NO

    def _decide(self, stream: StreamId | None, protocol: str | None, why: str = "") -> Iterator[Output]:
        conn = None if stream is None else stream.connection
        self._verdict[conn] = protocol
        for s in self._held_streams.pop(conn, []):
            del self._pending[s]
            self._pending_bytes.pop(s, None)
            self._cut.pop(s, None)
            self._asked.pop(s, None)
            self._held_ended.discard(s)
            if protocol is None and s is not None:
                self.undecoded[s] = why
        # In capture order across both directions, as if never held (one
        # direction's end must not come before the other's messages).
        for e in self._held_events.pop(conn, []):
            if protocol is not None:
                yield from self._process(e)

    def finish(self, time_ns: int | None = None) -> list[Output]:
        """The input is over: streams still open end here."""
        return list(self.finish_lazily(time_ns))

    def finish_lazily(self, time_ns: int | None = None) -> Iterator[Output]:
        """As `finish`, item by item (see `feed_lazily`)."""
        for stream in sorted(self._pending, key=lambda s: -1 if s is None else s.connection):
            if stream in self._pending:
                why = "no protocol recognised"
                yield from (self._decide(stream, self.choice.fallback(stream), why))
        for st in list(self.streams.values()):
            if st.ended is None:
                yield from (self._process(StreamEnd(st.stream, time_ns, "end of input")))
        for conn in list(self._analyzers):  # connections with one direction only
            state = next(iter(self._sides.get(conn, {}).values()), None)
            if state is not None:
                yield from (self._close_analyzer(state, conn, time_ns))
