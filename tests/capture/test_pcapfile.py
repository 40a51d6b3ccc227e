"""pcap and pcapng files and pipes: byte orders, resolutions, blocks,
sections, interfaces; damage reported as notes; reading as data arrives."""

from __future__ import annotations

import io
import os
import random
import struct
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

import pytest
from livecap import assert_exchanges, collect, read_capture
from mutate import pcap_bytes

from ripple_cli.capture.events import CaptureEvent, CaptureNote, StreamData, StreamEnd
from ripple_cli.capture.pcapfile import read_pcap, read_pcapng
from ripple_cli.capture.reader import CaptureOptions, capture_events, frame_events
from ripple_cli.sources.inputs import ChunkFile, input_events
from tests.capture.capkit import Capture
from tests.conftest import run_cli


def _records(cap: Capture) -> list[tuple[int, bytes]]:
    with cap.path.open("rb") as f:
        return [(r[0], r[2]) for r in read_pcap(f) if isinstance(r, tuple)]


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("nano", [False, True])
def test_pcap_byte_orders_and_resolutions(lo_capture: Capture, order: str, nano: bool) -> None:
    records = _records(lo_capture)
    if nano:
        records = [(t + k % 997, frame) for k, (t, frame) in enumerate(records)]  # not whole microseconds
    data = pcap_bytes(records, 1, order, nano)
    magics = {("<", False): "d4c3b2a1", (">", False): "a1b2c3d4", ("<", True): "4d3cb2a1", (">", True): "a1b23c4d"}
    assert data[:4].hex() == magics[(order, nano)]
    frames = [r for r in read_pcap(io.BytesIO(data[4:]), data[:4]) if isinstance(r, tuple)]
    assert [(t, f) for t, _lt, f in frames] == records
    assert_exchanges(read_capture(io.BytesIO(data)), lo_capture.exchanges)


def _block(order: str, btype: int, body: bytes) -> bytes:
    body += b"\x00" * (-len(body) % 4)
    n = len(body) + 12
    return struct.pack(order + "II", btype, n) + body + struct.pack(order + "I", n)


def _shb(order: str) -> bytes:
    return _block(order, 0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1))


def _idb(order: str, linktype: int, options: Sequence[tuple[int, bytes]] = ()) -> bytes:
    opts = b"".join(struct.pack(order + "HH", code, len(v)) + v + b"\x00" * (-len(v) % 4) for code, v in options)
    if options:
        opts += struct.pack(order + "HH", 0, 0)
    return _block(order, 1, struct.pack(order + "HHI", linktype, 0, 262144) + opts)


def _epb(order: str, iface: int, ts: int, frame: bytes) -> bytes:
    head = struct.pack(order + "IIIII", iface, ts >> 32, ts & 0xFFFFFFFF, len(frame), len(frame))
    return _block(order, 6, head + frame)


def _opb(order: str, iface: int, ts: int, frame: bytes) -> bytes:
    head = struct.pack(order + "HHIIII", iface, 0, ts >> 32, ts & 0xFFFFFFFF, len(frame), len(frame))
    return _block(order, 2, head + frame)


def _spb(order: str, frame: bytes) -> bytes:
    return _block(order, 3, struct.pack(order + "I", len(frame)) + frame)


def test_pcapng_block_kinds_resolutions_and_sections(lo_capture: Capture) -> None:
    """Enhanced, obsolete and Simple Packet Blocks; interfaces with their own
    resolution (10^-9, 2^-10, 10^-3) and offset; unknown blocks skipped; a
    second section in the other byte order."""
    records = _records(lo_capture)
    half = len(records) // 2
    parts = [
        _shb("<"),
        _block("<", 0x0BAD, b"custom"),
        _idb("<", 1, [(9, b"\x09")]),
        _idb("<", 1, [(9, b"\x8a"), (14, struct.pack("<q", 100))]),
    ]
    expected_times = []
    for k, (t, frame) in enumerate(records[:half]):
        if k % 3 == 0:
            parts.append(_epb("<", 0, t, frame))
            expected_times.append(t)
        elif k % 3 == 1:
            units = ((t - 100 * 10**9) << 10) // 10**9
            parts.append(_opb("<", 1, units, frame))
            expected_times.append((units * 10**9 >> 10) + 100 * 10**9)
        else:
            parts.append(_block("<", 5, b"\x00" * 12))  # an interface statistics block
            parts.append(_spb("<", frame))
            expected_times.append(expected_times[-1])  # no timestamp: the previous packet's
    parts += [_shb(">"), _idb(">", 1, [(9, b"\x03")])]
    for t, frame in records[half:]:
        parts.append(_epb(">", 0, t // 10**6, frame))
        expected_times.append(t // 10**6 * 10**6)
    data = b"".join(parts)
    frames = list(read_pcapng(io.BytesIO(data)))
    assert all(isinstance(f, tuple) for f in frames)
    assert [f[0] for f in frames if isinstance(f, tuple)] == expected_times
    assert [f[2] for f in frames if isinstance(f, tuple)] == [fr for _t, fr in records]
    assert_exchanges(read_capture(io.BytesIO(data)), lo_capture.exchanges)


def _notes(data: bytes) -> tuple[list[CaptureNote], list[CaptureEvent]]:
    events = list(capture_events(io.BytesIO(data), "x", CaptureOptions()))
    return [e for e in events if isinstance(e, CaptureNote)], events


def test_truncated_pcap_is_a_note_and_keeps_every_whole_packet(lo_capture: Capture) -> None:
    data = lo_capture.path.read_bytes()
    records = _records(lo_capture)
    boundaries = {24}
    for _t, frame in records:
        boundaries.add(max(boundaries) + 16 + len(frame))
    rng = random.Random(1)
    for cut in [10, 24, 30, 40, *rng.sample(range(41, len(data) - 1), 30)]:
        notes, events = _notes(data[:cut])
        if cut in boundaries:
            assert notes == []
        elif cut < 24:  # no whole file header: nothing could be read, the file is damaged
            assert [(n.kind, n.error, n.time_ns) for n in notes] == [("bad_capture", True, None)]
            assert "the capture ends inside the pcap file header" in notes[0].detail
        else:
            assert [(n.kind, n.error) for n in notes] == [("capture_truncated", False)]
            assert "the capture ends inside" in notes[0].detail
        # Every stream still open ends with the capture.
        ends = [e for e in events if isinstance(e, StreamEnd)]
        starts = [e for e in events if type(e).__name__ == "StreamStart"]
        assert len(ends) == len(starts)
    # Cut inside the last record: all the others are read.
    frames = list(read_pcap(io.BytesIO(data[4:-5]), data[:4]))
    assert [f[2] for f in frames[:-1] if isinstance(f, tuple)] == [fr for _t, fr in records[:-1]]
    note = frames[-1]
    assert isinstance(note, CaptureNote) and "packet record" in note.detail


def test_truncated_pcapng(lo_capture: Capture) -> None:
    records = _records(lo_capture)
    data = _shb("<") + _idb("<", 1) + b"".join(_epb("<", 0, t // 1000, f) for t, f in records)
    for cut in (40, len(data) - 3, len(data) - 50):
        notes, _events = _notes(data[:cut])
        assert [(n.kind, n.error) for n in notes] == [("capture_truncated", False)]
    # Cut inside the section header block, the first: nothing could be read.
    notes, _events = _notes(data[:20])
    assert [(n.kind, n.error, n.time_ns) for n in notes] == [("bad_capture", True, None)]


@pytest.mark.parametrize(
    ("data", "cause"),
    [
        (bytes.fromhex("d4c3b2a1") + b"\x07\x00\x04\x00" + b"\x00" * 16, "version 7.4"),
        (pcap_bytes([]) + struct.pack("<IIII", 0, 0, 10**7, 10**7), "length 10000000"),
        (pcap_bytes([(0, b"x" * 60)], linktype=147), "link type 147 is not supported"),
        (_shb("<")[:8] + b"\x00" * 20, "no byte-order magic"),
        (_shb("<") + struct.pack("<II", 6, 13) + b"\x00" * 20, "length 13"),
        (_shb("<") + _idb("<", 1) + _epb("<", 3, 0, b"x" * 60), "undeclared interface 3"),
        (_shb("<") + _epb("<", 0, 0, b"x" * 60)[:-4] + b"\x00\x00\x00\x00", "differ"),
        (_shb("<") + _idb("<", 1)[:-4] + struct.pack("<I", 999), "differ"),
        (b"RIPP" + b"\x00" * 100, "not a pcap or pcapng file"),
        (b"", "not a pcap or pcapng file"),
    ],
)
def test_bad_files_are_error_notes(data: bytes, cause: str) -> None:
    notes, _events = _notes(data)
    errors = [n for n in notes if n.error]
    assert errors and cause in errors[0].detail, notes


@pytest.mark.parametrize("seed", range(40))
def test_damage_never_raises(lo_capture: Capture, seed: int) -> None:
    """Garbage after a valid magic, or bytes flipped anywhere: notes, never
    an exception."""
    rng = random.Random(seed)
    good = lo_capture.path.read_bytes()
    ng = _shb("<") + _idb("<", 1, [(9, b"\x09")]) + b"".join(_epb("<", 0, t, f) for t, f in _records(lo_capture)[:20])
    base = [good, ng][seed % 2]
    if seed % 4 < 2:
        data = base[: rng.randrange(4, 40)] + rng.randbytes(rng.randrange(0, 3000))
    else:
        data = bytearray(base)
        for _ in range(rng.randrange(1, 20)):
            data[rng.randrange(4, len(data))] = rng.randrange(256)
        data = bytes(data)
    _notes(data)


def _arrivals(f: BinaryIO, writer: threading.Thread, done: threading.Event) -> list[tuple[bool, CaptureEvent]]:
    writer.start()
    out = [(done.is_set(), ev) for ev in capture_events(f, "<pipe>", CaptureOptions())]
    writer.join()
    return out


def _slow_writer(fd: int, data: bytes, done: threading.Event) -> threading.Thread:
    def run() -> None:
        rng = random.Random(3)
        at = 0
        with os.fdopen(fd, "wb", buffering=0) as w:
            while at < len(data):
                n = rng.randint(1, 3000)
                w.write(data[at : at + n])
                at += n
                time.sleep(0.001)
            done.set()

    return threading.Thread(target=run)


class _ExactReader:
    """A file with `read(n)` only, which waits for all n bytes (like the
    chunk adapter of ripple's inputs): the reader must not ask for more than
    the next record, or it would wait for packets not sent yet."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self.sizes: list[int] = []

    def read(self, n: int = -1) -> bytes:
        self.sizes.append(n)
        out = bytearray()
        while len(out) < n:
            chunk = self._raw.read(n - len(out))
            if not chunk:
                break
            out += chunk
        return bytes(out)


@pytest.mark.parametrize("kind", ["buffered", "raw", "read-n-only"])
def test_pipe_events_arrive_before_the_writer_ends(lo_capture: Capture, kind: str) -> None:
    data = lo_capture.path.read_bytes()
    r, w = os.pipe()
    done = threading.Event()
    writer = _slow_writer(w, data, done)
    raw = os.fdopen(r, "rb", buffering=0)
    f: BinaryIO
    if kind == "buffered":
        f = io.BufferedReader(raw)
    elif kind == "raw":
        f = raw
    else:
        f = _ExactReader(raw)  # type: ignore[assignment]
    with raw:
        got = _arrivals(f, writer, done)
    early = [ev for was_done, ev in got if not was_done and isinstance(ev, StreamData)]
    assert len(early) > 10, "events waited for the end of the input"
    assert_exchanges(collect(iter(ev for _d, ev in got)), lo_capture.exchanges)
    if isinstance(f, _ExactReader):
        assert max(f.sizes) <= 66000 + 16


def test_chunk_file_read1_gives_what_is_there() -> None:
    """The inputs' chunk adapter: `read1` never waits while bytes are
    buffered, and hands a whole chunk over when it fits."""
    f = ChunkFile(b"ab", iter([b"cdef", b"gh"]))
    assert f.read1(3) == b"ab"
    assert f.read1(3) == b"cde"
    assert f.read1(-1) == b"f"
    assert f.read1(10) == b"gh"
    assert f.read1(10) == b""
    assert f.read(4) == b""


def test_a_capture_on_stdin_goes_through_the_chunk_adapter_as_it_arrives(lo_capture: Capture) -> None:
    """`ripple decode -` of a pcap: stdin's chunks through ChunkFile, read
    in blocks (read1), events still coming before the writer is done."""
    data = lo_capture.path.read_bytes()
    r, w = os.pipe()
    done = threading.Event()
    writer = _slow_writer(w, data, done)
    with os.fdopen(r, "rb") as stdin:
        writer.start()
        got = [(done.is_set(), ev) for ev in input_events("-", stdin)]
        writer.join()
    early = [ev for was_done, ev in got if not was_done and isinstance(ev, StreamData)]
    assert len(early) > 10, "events waited for the end of the input"
    assert_exchanges(collect(iter(ev for _d, ev in got)), lo_capture.exchanges)


class _Counting(io.RawIOBase):
    """A big input made on the fly, counting the bytes asked for at once."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buf = b""
        self.largest = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray) -> int:  # type: ignore[override]
        self.largest = max(self.largest, len(b))
        if not self._buf:
            self._buf = next(self._chunks, b"")
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


def test_reading_is_bounded(lo_capture: Capture) -> None:
    """Fifty copies of the capture's packets (~2.5 MB) through a stream: the
    reader never asks for much more than a chunk at a time."""
    records = _records(lo_capture)

    def chunks() -> Iterator[bytes]:
        yield pcap_bytes([])
        for k in range(50):
            yield pcap_bytes([(t + k * 10**12, f) for t, f in records])[24:]

    src = _Counting(chunks())
    res = collect(capture_events(io.BufferedReader(src, 1 << 16), "big", CaptureOptions()))
    assert len(res.connections) == 150
    assert src.largest <= 1 << 17


def test_pcapng_interface_of_unsupported_link_type_is_skipped(lo_capture: Capture) -> None:
    """One error note for the interface ripple cannot read; the packets of
    the other interface are all read."""
    records = _records(lo_capture)
    parts = [_shb("<"), _idb("<", 147), _idb("<", 1, [(9, b"\x09")])]
    for t, frame in records:
        parts += [_epb("<", 0, t, b"\x00" * 40), _epb("<", 1, t, frame)]
    res = read_capture(io.BytesIO(b"".join(parts)))
    assert [(n.kind, n.error) for n in res.notes] == [("unsupported_linktype", True)]
    assert "link type 147" in res.notes[0].detail
    res.notes.clear()
    assert_exchanges(res, lo_capture.exchanges)


def test_unsupported_link_type_names_the_file_once(tmp_path: Path) -> None:
    path = tmp_path / "odd.pcap"
    path.write_bytes(pcap_bytes([(0, b"x" * 60)], linktype=147))
    res = run_cli(["decode", str(path)])
    assert res.code == 1
    assert res.stderr.startswith(f"ripple: {path}: error: link type 147 is not supported (supported: ")
    assert res.stderr.count(str(path)) == 1 and res.stderr.count("\n") == 1


def test_frame_events_from_frames_read_elsewhere(lo_capture: Capture) -> None:
    frames = [(t, 1, frame) for t, frame in _records(lo_capture)]
    assert_exchanges(collect(frame_events(iter(frames), "tap", CaptureOptions())), lo_capture.exchanges)


def test_packets_cut_short_are_counted_in_one_note_at_the_end() -> None:
    """Enhanced Packet Blocks whose captured length is under the packet's,
    and Simple ones cut by their interface's snap length: one warning at the
    end naming how many and the most bytes kept of one."""
    frame = bytes(range(200))
    epb_cut = struct.pack("<IIIII", 0, 0, 7, 100, 200) + frame[:100]
    idb_snap = _block("<", 1, struct.pack("<HHI", 1, 0, 150))
    data = b"".join(
        [
            _shb("<"),
            _idb("<", 1),
            _epb("<", 0, 5, frame),
            _block("<", 6, epb_cut),
            _shb("<"),
            idb_snap,
            _block("<", 3, struct.pack("<I", 200) + frame),
            _spb("<", frame[:120]),
        ]
    )
    items = list(read_pcapng(io.BytesIO(data)))
    assert [len(i[2]) for i in items if isinstance(i, tuple)] == [200, 100, 150, 120]
    assert [i for i in items if not isinstance(i, tuple)] == [
        CaptureNote(
            None,
            7000,  # the last cut packet's time: a Simple block's is the one before it
            "snap_length",
            "2 packets cut short when captured (at most 150 bytes kept of each): "
            "what they lost is missing from their streams (capture with tcpdump -s 0)",
        )
    ]
    whole = pcap_bytes([(1, frame), (2, frame)])
    assert all(isinstance(i, tuple) for i in read_pcap(io.BytesIO(whole)))
