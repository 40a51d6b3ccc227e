"""The first pass: what every decode task needs to know about the others.

- Handshakes, wherever they are: their schemas serve every task (a byte
  range far from its stream's Handshake, a capture of a connection that
  declared its schemas in another file), and their worker and offset seed
  the worker column of the ranges after them.
- The connections of each capture, with whether they were cut by the
  file's start or end: a connection cut in one file and present in another
  is a rotated one, reassembled across its files (plan.py).

A raw range is scanned fast: only envelopes whose header starts with the
Handshake tag are looked at (a bytes search), then checked and decoded
exactly.  A capture is read whole, as its decode task will.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import BinaryIO

from ripple_cli.capture.events import CaptureEvent, StreamEnd, StreamStart
from ripple_cli.codec.crc import crc32c
from ripple_cli.codec.envelope import CRC, HEADER, HEADER_SIZE, MAGIC, OVERHEAD, VERSION
from ripple_cli.codec.errors import DecodeError
from ripple_cli.codec.fast import speedups
from ripple_cli.codec.messages import HANDSHAKE, DeltaMode, Handshake, read_payload
from ripple_cli.codec.registry import SchemaRegistry
from ripple_cli.codec.schema import Schema
from ripple_cli.flow.pipeline import BaseSink, pump
from ripple_cli.protocols.base import LaneKind
from ripple_cli.protocols.item import Decoded, Run
from ripple_cli.protocols.origin import Origin
from ripple_cli.protocols.ripple.message import Message
from ripple_cli.sources.urls import is_url, open_url

from .tasks import CaptureFile, ConnKey, RawRange, Settings, conn_key, ripple_demux

_HANDSHAKE_HEAD = MAGIC + bytes((VERSION, HANDSHAKE))


@dataclass(frozen=True)
class HandshakeSeen:
    path: str
    offset: int  # in the raw stream; -1 in a capture (where the decode task sees it in place)
    worker: bytes
    schemas: tuple[Schema, ...]


@dataclass
class ConnSeen:
    path: str
    connection: int
    key: ConnKey
    first_ns: int
    cut: bool = False  # entered part-way (no SYN), or still open when the capture ended


@dataclass
class ScanResult:
    handshakes: list[HandshakeSeen] = field(default_factory=list)
    connections: list[ConnSeen] = field(default_factory=list)


def scan_raw_range(task: RawRange, max_payload: int, file: str | None = None) -> ScanResult:
    """The Handshakes whose envelope starts in [start, end)."""
    out = ScanResult()
    if task.start >= task.end:
        return out
    path = file or task.path
    with _bytes_of(path) as mm:
        size = len(mm)
        stop = min(task.end + len(_HANDSHAKE_HEAD) - 1, size)
        accel = speedups()
        # The head's first five bytes begin every envelope: memmem (C)
        # finds it 4x as fast as mmap.find in a Ripple stream.
        find = mm.find if accel is None or not isinstance(mm, mmap.mmap) else partial(accel.find, mm)
        p = find(_HANDSHAKE_HEAD, task.start, stop)
        while p >= 0:
            hs = _handshake_at(mm, p, size, max_payload)
            if hs is not None:
                out.handshakes.append(HandshakeSeen(task.path, p, hs.source_worker_id, _schemas(hs)))
            p = find(_HANDSHAKE_HEAD, p + 1, stop)
    return out


class _Ranged:
    """A file by URL as the scan reads an mmap: `find` over windows of
    byte-range reads, slices read as asked; nothing else of it is fetched."""

    WINDOW = 8 << 20

    def __init__(self, f: BinaryIO) -> None:
        self.f = f
        self.size = f.size()  # type: ignore[attr-defined]  # pyarrow's NativeFile

    def __len__(self) -> int:
        return int(self.size)

    def __getitem__(self, s: slice) -> bytes:
        self.f.seek(s.start)
        return self.f.read(s.stop - s.start)

    def find(self, needle: bytes, start: int, stop: int) -> int:
        while start < stop:
            end = min(start + self.WINDOW, stop)
            window = self[start : min(end + len(needle) - 1, stop)]
            i = window.find(needle)
            if i >= 0:
                return start + i
            start = end
        return -1


@contextmanager
def _bytes_of(path: str) -> Iterator[mmap.mmap | _Ranged]:
    if is_url(path):
        with open_url(path) as f:
            yield _Ranged(f)
        return
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        yield mm


def _handshake_at(mm: mmap.mmap | _Ranged, p: int, size: int, max_payload: int) -> Handshake | None:
    if p + OVERHEAD > size:
        return None
    length = HEADER.unpack(mm[p : p + HEADER_SIZE])[-1]
    end = p + HEADER_SIZE + length
    if not 0 <= length <= max_payload or end + 4 > size:
        return None
    env = mm[p : end + 4]
    if CRC.unpack_from(env, end - p)[0] != crc32c(env[: end - p]):
        return None
    try:
        body = read_payload(HANDSHAKE, env[HEADER_SIZE : end - p])
    except DecodeError:
        return None
    return body if isinstance(body, Handshake) else None


def _schemas(hs: Handshake) -> tuple[Schema, ...]:
    return tuple(schema for _output, schema in hs.output_schemas)


def scan_capture(task: CaptureFile, settings: Settings) -> ScanResult:
    """The capture's Handshakes (decoded as its decode task will find them)
    and its connections."""
    out = ScanResult()
    # RAW: no Delta needs decoding here; the fast lane (when built) takes
    # every envelope but the Handshakes, which come out as messages.
    demux = ripple_demux(
        task.path, settings, DeltaMode.RAW, lane=LaneKind.COUNT, registry=SchemaRegistry(), siblings=task.sibling
    )
    conns: dict[int, ConnSeen] = {}

    def events() -> Iterator[CaptureEvent]:
        for ev in settings.events(task.path):
            st = ev.stream
            if st is not None:
                if isinstance(ev, StreamStart):
                    seen = conns.get(st.connection)
                    if seen is None:
                        seen = conns[st.connection] = ConnSeen(task.path, st.connection, conn_key(st), ev.time_ns or 0)
                    seen.cut |= not ev.syn_seen
                elif isinstance(ev, StreamEnd) and ev.reason == "end of capture":
                    conns[st.connection].cut = True
            yield ev

    pump(events(), demux, _Handshakes(out, task.path))
    out.connections = [conns[n] for n in sorted(conns)]
    return out


class _Handshakes(BaseSink):
    """A pipeline sink that notes each Handshake; the lane counts the rest."""

    takes_runs = True

    def __init__(self, out: ScanResult, path: str) -> None:
        self.out = out
        self.path = path

    def message(self, origin: Origin, msg: Decoded) -> None:
        if isinstance(msg, Message) and isinstance(msg.body, Handshake):
            self.out.handshakes.append(HandshakeSeen(self.path, -1, msg.body.source_worker_id, _schemas(msg.body)))

    def run(self, origin: Origin, run: Run) -> None:
        pass


def scan_task(task: RawRange | CaptureFile, settings: Settings) -> ScanResult:
    if isinstance(task, RawRange):
        return scan_raw_range(task, settings.max_payload, settings.file(task.path))
    return scan_capture(task, settings)
