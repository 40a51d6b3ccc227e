"""`ripple tap -w`: the proxy's traffic as pcapng, read back by ripple's
capture reader, by `ripple decode` and by dpkt; rotation."""

from __future__ import annotations

import random
import re
import subprocess
import time
from collections import defaultdict
from pathlib import Path

import dpkt  # type: ignore[import-untyped, unused-ignore]
from tapkit import DEMO, ROOT, EchoServer, by_connection, decode_lines, exchange, ripple_cmd, ripple_stream, run_tap
from test_tap_proxy import _client_port, _parallel, _proxy_args

from ripple_cli.capture.events import CaptureNote, StreamData, StreamEnd, StreamGap, StreamStart
from ripple_cli.capture.reader import CaptureOptions, capture_events
from ripple_cli.tap.synth import checksum


def _streams(path: Path) -> tuple[dict[tuple[int, int, bool], bytes], list[CaptureNote], dict[object, str]]:
    """Each direction's bytes as ripple's capture reader reassembles them:
    (connection, client port, from client) -> bytes; the notes; the end reasons."""
    data: dict[tuple[int, int, bool], bytearray] = defaultdict(bytearray)
    notes: list[CaptureNote] = []
    ends: dict[object, str] = {}
    with path.open("rb") as f:
        for ev in capture_events(f, path.name, CaptureOptions()):
            if isinstance(ev, CaptureNote):
                notes.append(ev)
            elif isinstance(ev, StreamData):
                assert ev.stream is not None
                data[(ev.stream.connection, ev.stream.client.port, ev.stream.from_client)] += ev.data
            elif isinstance(ev, StreamGap):
                raise AssertionError(f"a hole in {path}: {ev}")
            elif isinstance(ev, StreamEnd):
                ends[ev.stream] = ev.reason
            else:
                assert isinstance(ev, StreamStart)
    return {k: bytes(v) for k, v in data.items()}, notes, ends


def _decode(path: Path, *extra: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(ripple_cmd("decode", *extra, str(path)), capture_output=True, cwd=ROOT, check=False)


def test_proxy_capture_reads_back_and_decodes_like_the_raw_bytes(tmp_path: Path) -> None:
    up = EchoServer(seed=5)
    cap = tmp_path / "tap.pcapng"
    payloads = [ripple_stream(seed=11, size=400_000), DEMO, random.Random(3).randbytes(200_000)]
    with run_tap(_proxy_args(up.port, "--show-connection", "-w", str(cap)), tmp_path) as tap:
        results = _parallel(tap.port, payloads, seed=2)
        assert tap.interrupt() == 130
    port_payload = {local: payloads[i] for i, (local, _d, _s) in enumerate(results)}

    # ripple's own reader: every byte of every direction, a handshake seen, FIN at the end.
    streams, notes, ends = _streams(cap)
    assert not [n for n in notes if n.error], notes
    assert len(streams) == 6
    for (_conn, client_port, _c2s), data in streams.items():
        assert data == port_payload[client_port]
    assert sorted(set(ends.values())) == ["fin"]

    # `ripple decode` of the capture: per connection, the raw decode; and the tap's own output.
    r = _decode(cap, "--show-connection")
    from_capture = by_connection(r.stdout.splitlines())
    assert from_capture == by_connection(tap.stdout().splitlines())
    for label, lines in from_capture.items():
        assert lines == decode_lines(port_payload[_client_port(label, up.port)], tmp_path), label

    # An independent reader: dpkt parses every frame, and the checksums hold.
    with cap.open("rb") as f:
        reader = dpkt.pcapng.Reader(f)
        assert reader.datalink() == dpkt.pcap.DLT_EN10MB
        frames = list(reader)
    syns = 0
    for _ts, frame in frames:
        ip = dpkt.ethernet.Ethernet(frame).data
        tcp = ip.data
        assert len(tcp.data) <= 65000
        assert checksum(bytes(ip)[:20]) == 0  # a header with its checksum sums to zero
        pseudo = ip.src + ip.dst + bytes([0, 6]) + len(bytes(tcp)).to_bytes(2, "big")
        assert checksum(pseudo, bytes(tcp)) == 0
        syns += bool(tcp.flags & dpkt.tcp.TH_SYN)
    assert syns == 2 * len(payloads)  # SYN and SYN+ACK per connection


def test_rotation_by_size_gives_files_readable_alone(tmp_path: Path) -> None:
    up = EchoServer(seed=6)
    cap = tmp_path / "rot.pcapng"
    payload = ripple_stream(seed=12, size=1_000_000)
    with run_tap(_proxy_args(up.port, "-w", str(cap), "--rotate", "size:0.3"), tmp_path) as tap:
        client_port = exchange(tap.port, payload, random.Random(1))[0]
        assert tap.interrupt() == 130
    files = sorted(tmp_path.glob("rot.pcapng*"), key=lambda p: int(p.suffix[1:]) if p.suffix[1:].isdigit() else 0)
    assert [p.name for p in files[:3]] == ["rot.pcapng", "rot.pcapng.1", "rot.pcapng.2"]
    assert len(files) >= 7  # 2 MB of traffic in files of at most 300 kB
    joined: dict[bool, bytearray] = {True: bytearray(), False: bytearray()}
    for path in files:
        assert path.stat().st_size <= 300_000
        streams, notes, _ends = _streams(path)  # raises on a hole: each file is whole
        assert not [n for n in notes if n.error], (path, notes)
        for (_conn, port, c2s), data in streams.items():
            # A file that starts mid-connection shows no SYN: the reader may
            # take either side for the client.  The sender's port tells.
            joined[c2s == (port == client_port)] += data
        r = _decode(path)  # readable alone: messages come out, whatever the file's first bytes are
        assert r.returncode in (0, 1) and r.stdout, (path, r.stderr)
        assert b"bad_capture" not in r.stderr
    assert joined[True] == payload and joined[False] == payload  # nothing lost between files


def test_rotation_keeps_only_the_newest_files(tmp_path: Path) -> None:
    up = EchoServer(seed=7)
    cap = tmp_path / "ring.pcapng"
    with run_tap(_proxy_args(up.port, "-w", str(cap), "--rotate", "size:0.2", "--rotate", "files:3"), tmp_path) as tap:
        exchange(tap.port, ripple_stream(seed=13, size=800_000), random.Random(1))
        assert tap.interrupt() == 130
    names = sorted((p.name for p in tmp_path.glob("ring.pcapng*")), key=lambda n: int(n.rsplit(".", 1)[1]))
    assert len(names) == 3
    last = int(names[-1].rsplit(".", 1)[1])
    assert last >= 8 and names == [f"ring.pcapng.{k}" for k in (last - 2, last - 1, last)]


def test_rotation_by_time(tmp_path: Path) -> None:
    up = EchoServer(seed=8)
    cap = tmp_path / "timed.pcapng"
    with run_tap(_proxy_args(up.port, "-w", str(cap), "--rotate", "time:0.4"), tmp_path) as tap:
        for k in range(3):
            exchange(tap.port, DEMO, random.Random(k))
            time.sleep(0.5)
        assert tap.interrupt() == 130
    files = sorted(tmp_path.glob("timed.pcapng*"))
    assert len(files) == 3  # one per exchange: each began more than 0.4 s after the file before
    for path in files:
        streams, notes, _ends = _streams(path)
        assert not notes and sorted(streams.values()) == [DEMO, DEMO]


def test_rotate_needs_write_and_valid_specs(tmp_path: Path) -> None:
    for args, message in (
        (["--rotate", "size:1"], "--rotate needs -w FILE"),
        (["-w", str(tmp_path / "x"), "--rotate", "size:zero"], "--rotate: 'size:zero'"),
        (["-w", str(tmp_path / "x"), "--rotate", "files:2"], "files:N needs size:MB or time:S"),
        (["-w", str(tmp_path / "x"), "--rotate", "often"], "expected size:MB"),
    ):
        r = subprocess.run(
            ripple_cmd("tap", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1", *args),
            capture_output=True,
            cwd=ROOT,
            check=False,
        )
        assert r.returncode == 2, r.stderr
        assert re.search(re.escape(message), r.stderr.decode()), r.stderr


def test_unwritable_capture_is_exit_3(tmp_path: Path) -> None:
    r = subprocess.run(
        ripple_cmd("tap", *_proxy_args(1), "-w", str(tmp_path / "no" / "such" / "dir.pcapng")),
        capture_output=True,
        cwd=ROOT,
        check=False,
    )
    assert r.returncode == 3
    assert r.stderr.decode().startswith("ripple: ") and "cannot write" in r.stderr.decode()
    assert len(r.stderr.splitlines()) == 1
