"""The work of one batch task, the same in a Spark executor and in-process.

Three kinds of decode task (plan.py makes them):

  RawRange     a byte range of a raw stream (split.py says where it starts
               and which rows it keeps)
  CaptureFile  a whole pcap or pcapng (captures cannot be split safely:
               a packet boundary says nothing about a TCP stream's), every
               connection reassembled and decoded in the task, except those
               continued in another file
  Rotated      one connection whose packets are spread over several files
               (rotated captures): `rotated_frames` gives each file's
               packets of such connections, keyed by connection, for a
               shuffle; `rotated_rows` reassembles one connection's packets
               in file order and decodes them

Every task decodes with the existing codec (StreamDecoder, Demux, the
capture reader and reassembler) and builds its rows with rows.RowBuilder.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib.util import find_spec
from types import ModuleType
from typing import TYPE_CHECKING, TypeAlias, TypeVar

from ripple_cli.capture.events import CaptureEvent, Endpoint, StreamId
from ripple_cli.capture.formats import sniff_format
from ripple_cli.capture.packets import address_text, decode_frame
from ripple_cli.capture.pcapfile import read_pcap, read_pcapng
from ripple_cli.capture.reader import CaptureOptions, frame_events
from ripple_cli.codec.envelope import DEFAULT_MAX_PAYLOAD
from ripple_cli.codec.fast import speedups
from ripple_cli.codec.messages import DeltaMode
from ripple_cli.codec.problems import Problem
from ripple_cli.codec.registry import SchemaRegistry
from ripple_cli.codec.schema import Schema
from ripple_cli.flow.demux import Demux
from ripple_cli.flow.pipeline import BaseSink, steps
from ripple_cli.flow.protocol_choice import RIPPLE, ProtocolChoice
from ripple_cli.protocols.base import DissectOptions, LaneKind, ProtoMessage
from ripple_cli.protocols.item import Decoded, Run
from ripple_cli.protocols.origin import Origin
from ripple_cli.protocols.registry import AUTO
from ripple_cli.protocols.ripple.decoder import Event, StreamDecoder
from ripple_cli.protocols.ripple.lane import Lane, LaneRun
from ripple_cli.protocols.ripple.message import Message
from ripple_cli.sources.inputs import input_events
from ripple_cli.sources.urls import is_url, open_input

from .rows import Row, RowBuilder, Where
from .siblingcount import Tally, count
from .split import first_envelope

if TYPE_CHECKING:
    import pyarrow as pa

    from .tablefiles import TaskTables  # pyarrow's: imported only where --tables writes

T = TypeVar("T")

# What a task yields, in stream order: a row, or the rows of a run of
# envelopes the fast lane took, as one batch (arrow.run_batch).
Item: TypeAlias = "Row | pa.RecordBatch"

CHUNK = 1 << 20
# Problems of the framer (a damaged region, not a framed envelope).
FRAMING_KINDS = frozenset({"bad_magic", "bad_version", "bad_length", "crc_mismatch", "truncated", "gap", "midstream"})

# A connection's identity across capture files: its two endpoints, sorted
# (which side is the client is a guess when a file starts mid-connection).
ConnKey = tuple[str, str]


def conn_key(stream: StreamId) -> ConnKey:
    a, b = str(stream.client), str(stream.server)
    return (a, b) if a <= b else (b, a)


def segment_key(src: bytes, sport: int, dst: bytes, dport: int) -> ConnKey:
    a, b = str(Endpoint(address_text(src), sport)), str(Endpoint(address_text(dst), dport))
    return (a, b) if a <= b else (b, a)


@dataclass(frozen=True)
class Settings:
    """What every task needs besides its own input; small and picklable."""

    schemas: tuple[Schema, ...] = ()  # --schemas files, then every Handshake's of the inputs (later wins)
    max_payload: int = DEFAULT_MAX_PAYLOAD
    ports: frozenset[int] = frozenset()  # --port: Ripple connections by port; empty: by content
    max_flows: int = 10000
    reassembly_window: int = 8 << 20  # --reassembly-window: see CaptureOptions.window
    community_id_seed: int = 0  # --community-id-seed: the seed of the community_id column
    # The driver's working directory: a task opens a relative input path
    # (kept as given: it is the capture_file column) against it, not
    # against an executor's own working directory.
    cwd: str = ""

    def file(self, path: str) -> str:
        """Where to open the input named `path` (a URL as it is)."""
        return path if is_url(path) else os.path.join(self.cwd, path)

    def registry(self) -> SchemaRegistry:
        registry = SchemaRegistry()
        for s in self.schemas:
            registry.add(s)
        return registry

    def events(self, path: str) -> Iterator[CaptureEvent]:
        """The events of the input named `path` (a capture read with these
        settings, or a raw stream)."""
        return input_events(
            self.file(path), io.BytesIO(), self.ports, self.max_flows, path, window=self.reassembly_window
        )

    def capture_options(self) -> CaptureOptions:
        return CaptureOptions(ports=self.ports, max_flows=self.max_flows, window=self.reassembly_window)


@dataclass(frozen=True)
class RawRange:
    path: str
    size: int
    start: int
    end: int
    worker: bytes | None = None  # the worker of the last Handshake before `start`


@dataclass(frozen=True)
class CaptureFile:
    path: str
    rotated: frozenset[ConnKey] = frozenset()  # connections left to Rotated tasks
    sibling: bool = False  # not a capture: a sibling protocol's raw stream, decoded whole as decode does


@dataclass(frozen=True)
class RotatedPart:
    """One file's share of the rotated connections: its packets of them."""

    path: str
    rank: int  # the file's place in capture order among the input captures
    keys: frozenset[ConnKey]


@dataclass(frozen=True)
class ConnPart:
    """Where one connection appears in one capture file."""

    path: str
    rank: int
    connection: int  # its number in that file
    first_ns: int


@dataclass(frozen=True)
class Rotated:
    key: ConnKey
    parts: tuple[ConnPart, ...] = field(default=())  # in capture order

    def where(self, stream: StreamId, time_ns: int | None) -> Where:
        """The file (and its connection number) a row is attributed to: the
        last of the connection's files that had begun by `time_ns`."""
        part = self.parts[0]
        if time_ns is not None:
            for p in self.parts:
                if p.first_ns <= time_ns:
                    part = p
        return Where(part.path, StreamId(part.connection, stream.client, stream.server, stream.from_client))


Task = RawRange | CaptureFile


def ripple_demux(
    source: str,
    settings: Settings,
    mode: DeltaMode,
    want: Callable[[StreamId | None], bool] | None = None,
    lane: LaneKind | None = None,
    registry: SchemaRegistry | None = None,
    siblings: bool = False,
) -> Demux:
    """A Demux that decodes Ripple connections (found by content, or by
    --port): the all-messages table has Ripple's columns.  With `siblings`
    (export --tables), the sibling protocols' connections too, for their
    own tables."""
    reg = settings.registry() if registry is None else registry
    options = DissectOptions(max_payload=settings.max_payload, registry=reg, deltas=mode, lane=lane)
    choice = ProtocolChoice(protocol=AUTO if siblings else RIPPLE, ports=settings.ports, options=options)
    return Demux(source, choice, want=want, seed=settings.community_id_seed)


class RowSink(BaseSink):
    """A pipeline sink: each message and problem as a row, one RowBuilder per
    stream direction; `take` hands over the rows made so far.  With `lanes`
    (and no typed tables, which need each Delta's values), it takes the
    fast lane's runs (LaneKind.ROWS) as batches."""

    def __init__(
        self,
        source: str,
        place: Callable[[StreamId, int | None], Where] | None = None,
        streams_only: bool = False,
        typed: TaskTables | None = None,
        tally: Tally | None = None,
        lanes: bool = False,
    ) -> None:
        self.source = source
        self.takes_runs = lanes and typed is None
        self.typed = typed
        self.tally = tally  # stats: the sibling protocols' messages counted
        self.place = place  # where a row of a rotated connection is attributed
        self.streams_only = streams_only  # items of no stream (notes about a file) make no row
        self.builders: dict[StreamId | None, RowBuilder] = {}
        self.rows: list[Item] = []
        # The Demux's verdict on a stream's protocol (`attach`): only Ripple's
        # streams make rows of the all-messages table.
        self.protocol_of: Callable[[StreamId | None], str | None] = lambda _stream: RIPPLE

    def attach(self, demux: Demux) -> RowSink:
        self.protocol_of = demux.protocol_of
        return self

    def builder(self, origin: Origin) -> RowBuilder:
        stream = origin.stream
        b = self.builders.get(stream)
        if b is None:
            b = self.builders[stream] = RowBuilder(Where(self.source, stream, origin.community_id), typed=self.typed)
        if self.place is not None and stream is not None:
            w = self.place(stream, origin.time_ns)
            b.place(Where(w.capture_file, w.stream, origin.community_id))
        return b

    def message(self, origin: Origin, msg: Decoded) -> None:
        if origin.stream is None and self.streams_only:
            return
        if isinstance(msg, Message):
            self.rows.append(self.builder(origin).message(msg, capture_ns(origin)))
        elif isinstance(msg, ProtoMessage):  # a sibling's: its own table, its count only
            if self.tally is not None:
                count(self.tally, msg)
            if self.typed is not None:
                self.typed.sibling(self.builder(origin).where, capture_ns(origin), msg)

    def problem(self, origin: Origin, problem: Problem) -> None:
        if origin.stream is None and self.streams_only:
            return
        if self.protocol_of(origin.stream) in (RIPPLE, None):
            self.rows.append(self.builder(origin).problem(problem, capture_ns(origin)))

    def run(self, origin: Origin, run: Run) -> None:
        from .arrow import run_batch  # pyarrow's

        # Only Ripple's lane makes runs of LaneKind.ROWS.
        assert isinstance(run, LaneRun) and run.columns is not None
        self.rows.append(run_batch(self.builder(origin), run, capture_ns(origin)))

    def take(self) -> list[Item]:
        rows, self.rows = self.rows, []
        return rows


_INT64 = range(-(1 << 63), 1 << 63)


def capture_ns(origin: Origin) -> int | None:
    """The capture time of a row, null when it does not fit the int64
    column (a pcapng's 64-bit timestamp at a coarse resolution, or moved
    by its offset, can reach past 2^63 ns)."""
    t = origin.time_ns
    return t if t is None or t in _INT64 else None


def demux_rows(events: Iterable[CaptureEvent], demux: Demux, sink: RowSink) -> Iterator[Item]:
    for _ in steps(events, demux, sink):
        yield from sink.take()
    yield from sink.take()


# ------------------------------------------------------------------ raw


def raw_range_rows(task: RawRange, settings: Settings, typed: TaskTables | None = None) -> Iterator[Item]:
    """The rows of the messages and problems that start in [start, end):
    those of the envelopes the fast lane takes, as batches (arrow.run_batch),
    unless the typed tables need each Delta's values."""
    if task.start >= task.end:
        return
    with open_input(settings.file(task.path)) as f:

        def read(offset: int, n: int) -> bytes:
            f.seek(offset)
            return f.read(n)

        # The first range starts at 0 whatever is there (garbage at the head
        # of a file is a problem of the first range); the others at their
        # first whole envelope: the bytes before it belong to the range
        # before, whose decoder went on past its end to reach it.
        first = 0 if task.start == 0 else first_envelope(read, task.start, task.end, task.size, settings.max_payload)
        if first is None:
            return
        decoder = StreamDecoder(settings.registry(), DeltaMode.DECODE, settings.max_payload, start_offset=first)
        builder = RowBuilder(Where(task.path), task.worker, typed)
        accel = lanes() if typed is None else None
        frames = decoder.frames
        lane = None
        if accel is not None:
            from .arrow import rows_before, run_batch  # pyarrow's

            lane = Lane(accel, frames, decoder.messages.registry, DeltaMode.DECODE, None, LaneKind.ROWS)
        f.seek(first)
        while True:
            chunk = f.read(CHUNK)
            final = not chunk
            frames.append(chunk)
            # The lane's runs and the decoder's steps (an envelope or a
            # damaged region at a time), in stream order, so that the task
            # stops at the first one past its range instead of decoding the
            # rest of the chunk for nothing.
            while True:
                if lane is not None and (run := lane.run()) is not None:
                    batch = run_batch(builder, run, None)
                    if run.end > task.end and (ours := rows_before(batch, task.end)).num_rows < batch.num_rows:
                        # An envelope past the range: the next task's from there.
                        yield ours
                        return
                    yield batch
                events = decoder.step(final)
                if events is None:
                    break
                for ev in events:
                    # Past the range, the task stops at the first framed
                    # envelope (a message, or a problem of one: flags, a
                    # payload that does not decode): the next task starts
                    # there.  Damage before it (framing problems) is ours.
                    if ev.offset >= task.end and not (isinstance(ev, Problem) and ev.kind in FRAMING_KINDS):
                        return
                    yield _row(builder, ev)
            if final:
                return
            frames.compact()


def _row(builder: RowBuilder, ev: Event) -> Row:
    if isinstance(ev, Problem):
        return builder.problem(ev, None)
    return builder.message(ev, None)


# ------------------------------------------------------------------ captures


def capture_rows(
    task: CaptureFile, settings: Settings, typed: TaskTables | None = None, tally: Tally | None = None
) -> Iterator[Item]:
    rotated = task.rotated

    def want(stream: StreamId | None) -> bool:
        return stream is None or conn_key(stream) not in rotated

    siblings = typed is not None or tally is not None or task.sibling
    sink = RowSink(task.path, typed=typed, tally=tally, lanes=lanes() is not None)
    lane = LaneKind.ROWS if sink.takes_runs else None
    demux = ripple_demux(task.path, settings, DeltaMode.DECODE, want=want, lane=lane, siblings=siblings)
    events = settings.events(task.path)
    return demux_rows(events, demux, sink.attach(demux))


RankedFrame = tuple[int, int, int, int, bytes]  # (file rank, index in the file, time_ns, link type, frame bytes)


def read_frames(path: str) -> Iterator[tuple[int, int, bytes]]:
    """The frames of a capture (notes about the file are the CaptureFile task's)."""
    with open_input(path) as f:
        head = f.read(4)
        fmt = sniff_format(head)
        reader = read_pcap(f, head) if fmt == "pcap" else read_pcapng(f, head) if fmt == "pcapng" else iter(())
        for item in reader:
            if isinstance(item, tuple):
                yield item


def rotated_frames(task: RotatedPart, settings: Settings) -> Iterator[tuple[ConnKey, RankedFrame]]:
    """This file's packets of the rotated connections, keyed for the shuffle."""
    keys = task.keys
    for i, (time_ns, lt, frame) in enumerate(read_frames(settings.file(task.path))):
        seg = decode_frame(lt, frame)
        if isinstance(seg, tuple):
            key = segment_key(seg[0], seg[2], seg[1], seg[3])
            if key in keys:
                yield key, (task.rank, i, time_ns, lt, frame)


def rotated_rows(
    group: Rotated,
    frames: Iterable[RankedFrame],
    settings: Settings,
    typed: TaskTables | None = None,
    tally: Tally | None = None,
) -> Iterator[Row]:
    """One connection's packets from all its files, reassembled in capture
    order (file, then packet) as if they were one capture, and decoded."""
    ordered = sorted(frames, key=lambda fr: (fr[0], fr[1]))
    name = group.parts[0].path
    events: Iterator[CaptureEvent] = frame_events(
        ((t, lt, fr) for _r, _i, t, lt, fr in ordered), name, settings.capture_options()
    )
    demux = ripple_demux(name, settings, DeltaMode.DECODE, siblings=typed is not None or tally is not None)
    # Notes about a file (no stream) are its CaptureFile task's.
    sink = RowSink(name, group.where, streams_only=True, typed=typed, tally=tally)
    for item in demux_rows(events, demux, sink.attach(demux)):
        # A sink without lanes makes rows only: the shuffle's rows go to Spark one by one.
        assert isinstance(item, tuple)
        yield item


def task_rows(
    task: Task, settings: Settings, typed: TaskTables | None = None, tally: Tally | None = None
) -> Iterator[Item]:
    """A task's rows; with `tally` (stats), its sibling protocols' messages
    counted there (a raw stream is Ripple's only)."""
    if isinstance(task, RawRange):
        return raw_range_rows(task, settings, typed)
    return capture_rows(task, settings, typed, tally)


def rows_of(items: Iterable[Item]) -> Iterator[Row]:
    """Rows, a lane's batches among them made rows again (stats' SQLite
    takes rows)."""
    for item in items:
        if isinstance(item, tuple):
            yield item
        else:
            from .arrow import batch_rows

            yield from batch_rows(item)


def lanes() -> ModuleType | None:
    """The C extension, when the fast lane may make batches of rows: it is
    built and pyarrow, which the batches are, is installed (stats runs
    in-process without it)."""
    accel = speedups()
    return accel if accel is not None and _have_pyarrow() else None


@cache
def _have_pyarrow() -> bool:
    return find_spec("pyarrow") is not None


def typed_rows(rows: Iterator[T], typed: TaskTables | None) -> Iterator[T]:
    """`rows`, then the task's typed part files closed (written whole); a
    task that fails or is stopped takes back the part files it had begun."""
    if typed is None:
        yield from rows
        return
    try:
        yield from rows
    except BaseException:
        typed.abort()
        raise
    typed.close()
