"""The source of a replay, read whole before anything is sent.

A raw stream is one recording; a capture gives one recording per selected
connection direction (by default every client-to-server direction: the
side that connects is the producer, whose Handshake opens the connection).
Only whole envelopes with a valid CRC whose payload decodes are kept, in
order; every problem is handed to `on_problem` and its bytes are skipped.

Reading first (as tcpreplay's --preload-pcap does) keeps decoding out of the
send loop, so the schedule is never late because of it, and makes --loop a
matter of iterating again.  Memory: the envelopes' bytes plus about 100
bytes per message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import BinaryIO

from ripple_cli.capture.events import CaptureEvent, StreamId, StreamStart
from ripple_cli.codec.envelope import frame_bytes
from ripple_cli.codec.messages import HANDSHAKE, TYPE_NAMES, DeltaMode
from ripple_cli.codec.problems import Problem
from ripple_cli.errors import InvalidInput, UsageProblem
from ripple_cli.flow.demux import Demux
from ripple_cli.flow.pipeline import BaseSink, pump
from ripple_cli.flow.protocol_choice import RIPPLE, ProtocolChoice
from ripple_cli.protocols.base import DissectOptions
from ripple_cli.protocols.item import Decoded
from ripple_cli.protocols.origin import Origin
from ripple_cli.protocols.ripple.message import Message
from ripple_cli.sources.files import display_name
from ripple_cli.sources.inputs import input_events


class Clock(Enum):
    ENVELOPE = "envelope"  # the envelope's timestamp (event time)
    CAPTURE = "capture"  # when the capture saw the packet that completed the envelope


@dataclass(frozen=True, slots=True)
class Recorded:
    data: bytes  # the whole envelope, exactly as recorded
    time_ns: int  # by the chosen clock


@dataclass
class Recording:
    """One connection direction to replay: its Handshake, then the rest."""

    label: str  # for messages: the source, and the connection in a capture
    stream: StreamId | None  # None: a raw stream
    messages: list[Recorded] = field(default_factory=list)

    @property
    def handshake(self) -> Recorded:
        return self.messages[0]

    @property
    def body(self) -> list[Recorded]:
        """What follows the Handshake: the messages that are paced and looped."""
        return self.messages[1:]

    def span_ns(self) -> int:
        """How far apart, by its clock, two passes of `body` are laid under
        --loop: the body's time span plus one mean gap, so that a steady
        stream stays steady across the seam."""
        times = [m.time_ns for m in self.body]
        if len(times) < 2:
            return 0
        span = max(times) - times[0]
        return span + span // (len(times) - 1)


ProblemSink = Callable[[Origin, Problem], None]


def stream_filter(stream: tuple[int, str | None] | None) -> Callable[[StreamId | None], bool]:
    """Which directions are replayed.  `N` alone means N:c2s: the server's
    side of a Ripple connection is the consumer's answer, not a stream to
    produce."""
    if stream is None:
        return lambda s: s is None or s.from_client
    number, direction = stream
    direction = direction or "c2s"
    return lambda s: s is not None and s.connection == number and s.direction == direction


def load_recordings(
    path: str,
    stdin: BinaryIO,
    *,
    ports: frozenset[int],
    max_flows: int,
    window: int,
    stream: tuple[int, str | None] | None,
    max_payload: int,
    clock: Clock,
    on_problem: ProblemSink,
) -> list[Recording]:
    name = display_name(path)
    # RAW: no schema is needed to replay; a payload that does not decode as
    # its type is still a problem (the decoder drops it) and is not sent.
    # Without --port, a capture's other connections are told apart by
    # content and left out, as decode does.
    options = DissectOptions(max_payload=max_payload, deltas=DeltaMode.RAW)
    choice = ProtocolChoice(RIPPLE, ports=frozenset(ports), options=options)  # replay sends Ripple envelopes only
    demux = Demux(name, choice, want=stream_filter(stream))
    sink = _Recorder(name, clock, on_problem)
    pump(_checked(input_events(path, stdin, ports, max_flows, window=window), name, clock, stream), demux, sink)
    recordings = sink.recordings
    ordered = sorted(recordings.values(), key=lambda r: r.stream.connection if r.stream else 0)
    for rec in ordered:
        _check_opening(rec)
    return ordered


def _checked(
    events: Iterator[CaptureEvent], name: str, clock: Clock, stream: tuple[int, str | None] | None
) -> Iterator[CaptureEvent]:
    """The events, once the input's first says it suits the options."""
    first = next(events, None)
    if isinstance(first, StreamStart) and first.stream is None:
        if clock is Clock.CAPTURE:
            raise UsageProblem(f"--clock capture: {name} is a raw stream, it has no capture times")
        if stream is not None:
            raise UsageProblem(f"--stream: {name} is a raw stream, it has one stream and no connections")
    if first is not None:
        yield first
    yield from events


class _Recorder(BaseSink):
    """A pipeline sink: each direction's whole envelopes, in order."""

    def __init__(self, name: str, clock: Clock, on_problem: ProblemSink) -> None:
        self.name = name
        self.clock = clock
        self.on_problem = on_problem
        self.recordings: dict[StreamId | None, Recording] = {}

    def message(self, origin: Origin, msg: Decoded) -> None:
        assert isinstance(msg, Message)  # the Demux decodes Ripple only
        rec = self.recordings.get(origin.stream)
        if rec is None:
            label = self.name if origin.stream is None else f"{self.name}: {origin.stream.label}"
            rec = self.recordings[origin.stream] = Recording(label, origin.stream)
        rec.messages.append(Recorded(frame_bytes(msg.frame), _time(msg, origin, self.clock)))

    def problem(self, origin: Origin, problem: Problem) -> None:
        self.on_problem(origin, problem)


def _time(msg: Message, origin: Origin, clock: Clock) -> int:
    if clock is Clock.ENVELOPE:
        return msg.frame.time_ns
    # Capture events always carry a time; a raw stream was refused above.
    return origin.time_ns if origin.time_ns is not None else 0


def _check_opening(rec: Recording) -> None:
    head = rec.handshake.data
    tag = head[5]
    if tag != HANDSHAKE:
        seq = int.from_bytes(head[7:15], "little", signed=True)
        kind = TYPE_NAMES.get(tag, f"message of type {tag}")
        raise InvalidInput(
            f"{rec.label}: starts with a {kind} (seq {seq}), not a Handshake: "
            "a consumer accepts messages only after one"
        )
