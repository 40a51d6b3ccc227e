#!/usr/bin/env python3
"""ripple against its anchors, side by side in one run: the OCaml workers'
own code, tshark, socat.

Builds the OCaml tools (tests/interop/ocaml: the same generator the interop
tests use), generates the inputs, times each workload for ripple and for its
anchor, and prints one table: workload, ripple's figure, the anchor's,
their ratio, the goal, whether it is met.

    make bench                          # or: python bench/bench.py --count 200000
    make bench-memory                   # python bench/bench.py --only memory --big: the 10 GB rows
    python bench/bench.py --with-pure   # also the pure-Python path (RIPPLE_PURE=1): before/after
    python bench/bench.py --only verify,pcap --repeat 3

Workloads (--only takes these names):
  verify    `ripple verify FILE` vs OCaml ripple_walk (every envelope, CRC by table), msgs/s,
            on a stream of --count messages (default 1,000,000; schemas with nested records,
            lists, enums and options)
  decode    `ripple decode --format sexp FILE > out` vs OCaml ripple_read -o out (typed
            bin_prot decode + sexplib one-line printing), msgs/s; outputs compared byte for byte
  jsonl     `ripple decode --format jsonl FILE > out` vs the same ripple_read, msgs/s; one
            object a message
  table     `ripple decode --format table FILE > out` (a file: every cell whole) vs the same
            ripple_read, msgs/s; one row a message
  select    `ripple decode -Y 'type == Delta and key == "AMZN"'` (about 3% chosen) vs the same
            ripple_read, msgs/s; the chosen messages are those of OCaml's text with that key
  export    `ripple export -F parquet --master local[1]` of a 4,000,000-message stream (Spark's
            JVM started by the run) vs ripple_read -o of it, msgs/s; local[2] against local[1]
            on a stream of 1 GB; and `ripple export` and `ripple stats` of the 37 KB demo
            (in-process: under 2 s each, start-up included).  Every run's row count is checked
  4k        `ripple verify` of a 1 GiB stream of 4 KiB Deltas (full-depth book/v4 snapshots,
            about a thousand values each, written by ripple's own encoder), GB/s, vs ripple_walk
  pcap      `ripple decode --format sexp` of a capture of the --count stream vs `tshark -r` of
            the same file dissecting only Ethernet, IP and TCP (tshark's default TCP
            preferences: it reassembles, as ripple must; other dissectors disabled), packets/s.
            The capture is real: tcpdump on the loopback of a private network namespace whose
            MTU is 1500 and offloads off (packets as a wire carries them), the stream sent
            through a TCP connection there; without root it falls back to the host's loopback
  storm     `ripple decode --format sexp` of a 100,000-packet retransmission storm (the pcap
            workload's capture, every packet seen three times: the copies up to four packets
            later, across directions) vs the same decode of its clean third: within 3x of its
            time, and peak RSS flat (duplicates are trimmed, not held)
  hostile   issue 15's classes of hostile input (a list bomb, 100,000 schemas, headers
            claiming 1 MiB, inflating Lumberjack frames, 20,000 connections): decode's time
            per KB against a clean input of their kind (within 10x), and peak RSS (512 MB)
  tap       `ripple tap --listen --upstream` (proxy mode) vs socat relaying the same: MB/s of
            the --count stream through it, and the p99 round trip of a small request/response
            (one Heartbeat envelope, echoed) minus the direct one's; for each of --tap-formats
            (sexp, table and jsonl to /dev/null, and the live view on a pseudo-terminal), with
            the bytes each tap says it did not decode (copies dropped); direct, socat and the
            taps take turns for --tap-rounds rounds, each keeping its best
  memory    peak RSS of verify and decode (getrusage of each child), the same on a stream a
            tenth the size; with --big also on a 10 GB stream (generated once, deleted after
            unless --keep-big): streaming, the figure does not grow with the input
Times are wall times of whole runs (interpreter start-up included; ripple's
modules byte-compiled first, as an installed package has them).  Reference
lines (no goal) follow the table.
"""

from __future__ import annotations

import argparse
import filecmp
import hashlib
import json
import os
import platform
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OCAML_SRC = ROOT / "tests" / "interop" / "ocaml"
WORK = ROOT / ".bench"
NETPEER = ROOT / "bench" / "netpeer.py"
WORKLOADS = (
    "verify",
    "decode",
    "jsonl",
    "table",
    "select",
    "export",
    "4k",
    "pcap",
    "storm",
    "hostile",
    "tap",
    "memory",
)
# export: the 4,000,000-message stream its row names, and a stream of over
# 1 GB for local[2] against local[1] (the generator's 8.5 million messages,
# bench_spark.py's).
EXPORT_COUNT = 4_000_000
EXPORT_GB_COUNT = 8_500_000
# `decode -Y` selecting a few percent of the stream: one symbol's Deltas
# (the generator's vwap keys are twelve symbols; 2.9% of the messages).
SELECT_KEY = b"AMZN"
SELECT_FILTER = f'type == Delta and key == "{SELECT_KEY.decode()}"'
STORM_PACKETS = 100_000
BIG_BYTES = 10 * 10**9
# tshark dissecting Ethernet, IPv4 and TCP only, names not resolved, one
# summary line per packet (what `tshark -r` prints).
TSHARK_TCP = ["-n", "--disable-protocol", "ALL", "--enable-protocol", "eth,ip,tcp"]
NO_REASSEMBLY = ["-o", "tcp.desegment_tcp_streams:FALSE"]


def sh(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[Any]:
    if shutil.which(cmd[0]) is None:  # one line, not a traceback
        raise SystemExit(f"bench: {cmd[0]} is not installed (scripts/bench-deps.sh installs what the bench needs)")
    return subprocess.run(cmd, check=True, **kw)


def missing_tool(step: str, tool: str) -> bool:
    """Whether `tool` is missing: then one line says which step is skipped."""
    if shutil.which(tool) is not None:
        return False
    # On stderr: a capture child's stdout is its result (the parent relays this).
    print(f"  ({step}: skipped, {tool} is not installed: scripts/bench-deps.sh)", file=sys.stderr, flush=True)
    return True


def build_ocaml() -> Path:
    digest = hashlib.sha256()
    for f in sorted(OCAML_SRC.iterdir()):
        if f.is_file():
            digest.update(f.name.encode() + f.read_bytes())
    out = WORK / f"ocaml-{digest.hexdigest()[:12]}"
    if not (out / "ripple_walk").exists():
        sh([str(OCAML_SRC / "build.sh"), str(out)], stdout=subprocess.DEVNULL)
    return out


def generate(tools: Path, count: int, seed: int) -> Path:
    path = WORK / f"bench-{count}-{seed}.ripple"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        sh([str(tools / "ripple_gen"), "-profile", "bench", "-seed", str(seed), "-count", str(count), "-bin", str(tmp)])
        tmp.rename(path)
    return path


def generate_4k(count: int, seed: int) -> Path:
    """Deltas of about 4 KiB: book/v4 (examples/schemas) snapshots of 330
    levels, Set and Patch, after a Handshake declaring the schema; every
    rule kept (seq, sequence_no), so that verify finds nothing to report.
    Written by a child process (see `measure`: this one stays small)."""
    path = WORK / f"bench-4k-{count}-{seed}.ripple"
    if not path.exists():
        sh([sys.executable, __file__, "--write-4k", str(path), "--count-4k", str(count), "--seed", str(seed)], cwd=ROOT)
    return path


def write_4k(path: Path, count: int, seed: int) -> None:
    sys.path.insert(0, str(ROOT))
    from ripple_cli.codec import binprot as bp
    from ripple_cli.codec.delta import CompiledSchema, Patch, SetRow
    from ripple_cli.codec.envelope import build_envelope
    from ripple_cli.codec.messages import DELTA, FIXED_FINGERPRINTS, HANDSHAKE, Handshake, write_payload
    from ripple_cli.sources.schema_files import load_schema_file

    rnd = random.Random(seed)
    schema = load_schema_file(str(ROOT / "examples" / "schemas" / "book_v4.sexp"))
    book = CompiledSchema(schema)
    t0 = 1718900000000000000
    deltas = []
    for v in range(16):
        mid = rnd.uniform(50, 500)
        levels = [
            {
                "px": round(mid + rnd.uniform(-5, 5), 2),
                "size": rnd.randrange(100, 10000, 100),
                "orders": rnd.randrange(60),
            }
            for _ in range(330)
        ]
        if v % 2:
            deltas.append(book.write_delta(Patch(((2, levels),))))
            continue
        row = {
            "bid": ({"px": round(mid - 0.01, 2), "size": 1800},),
            "ask": ({"px": round(mid + 0.01, 2), "size": 900},),
            "levels": levels,
            "status": "Open",
            "stats": {"high": mid + 3, "low": mid - 3, "last": {"px": round(mid, 2), "at_ns": t0}, "vwap": (mid,)},
            "crossed": False,
        }
        deltas.append(book.write_delta(SetRow(row)))
    symbols = [b"AAPL", b"MSFT", b"V", b"XOM", b"KO", b"BRK.B", b"AMZN", b"GOOGL"]
    keys = [book.write_key({"symbol": s, "venue": "XNYS"}) for s in symbols]
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        hs = Handshake(b"md-worker-07", ((b"book", schema),), 1)
        f.write(build_envelope(HANDSHAKE, 1, t0, FIXED_FINGERPRINTS[HANDSHAKE], write_payload(hs)))
        for i in range(count):
            payload = bytearray()
            bp.write_string(payload, b"book")
            bp.write_string(payload, keys[i % len(keys)])
            bp.write_string(payload, deltas[i % len(deltas)])
            bp.write_int(payload, i + 1)
            payload.append(1)
            bp.write_int64(payload, t0 + i * 1000)
            f.write(build_envelope(DELTA, i + 2, t0 + i * 1000, b"book/v4", bytes(payload)))
    tmp.rename(path)


def write_heartbeat(path: Path) -> None:
    """The ping-pong request: one Heartbeat envelope (93 bytes)."""
    sys.path.insert(0, str(ROOT))
    from ripple_cli.codec.envelope import build_envelope
    from ripple_cli.codec.messages import FIXED_FINGERPRINTS, HEARTBEAT, Heartbeat, write_payload

    t = 1718900000000000000
    payload = write_payload(Heartbeat(b"md-worker-07", t, 0.25))
    path.write_bytes(build_envelope(HEARTBEAT, 1, t, FIXED_FINGERPRINTS[HEARTBEAT], payload))


@dataclass
class Measured:
    seconds: float  # best wall time
    rss_mb: float  # largest peak RSS


def measure(
    cmd: list[str], stdout_path: Path | None = None, repeat: int = 1, env: dict[str, str] | None = None
) -> Measured:
    """Wall time and peak RSS of a child (os.wait4 gives its own rusage).

    Linux carries the peak RSS of the forking process over into the child's
    (the high-water mark of the forked address space survives exec), so this
    process must stay small: outputs are compared in chunks, and the
    reference rows that read a whole file run after every measurement."""
    best, rss = float("inf"), 0.0
    for _ in range(repeat):
        out = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL  # noqa: SIM115
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
        _pid, status, usage = os.wait4(proc.pid, 0)
        best = min(best, time.perf_counter() - t0)
        rss = max(rss, usage.ru_maxrss / 1024)  # KiB on Linux
        proc.returncode = os.waitstatus_to_exitcode(status)
        if stdout_path:
            out.close()  # type: ignore[union-attr]
    return Measured(best, rss)


# Issue 15's classes of hostile input (tests/hostile/bombs.py builds them),
# each against a clean input of its kind: (name, file, what it is, clean one).
# The kind is the protocol and the packets: the inflating Lumberjack frames
# are measured against the same events sent uncompressed (a Lumberjack
# event costs what it costs, compressed or not: the bomb must add nothing),
# the 20,000 connections against the same 20,000 Heartbeats in one
# connection, a packet each (what is hostile is the count of connections,
# not the size of a packet).  The notes below the table give both rows
# against the Ripple stream on the C lane as well.
HOSTILE = (
    ("list bomb", "hostile-listbomb.ripple", "a Delta of lists of empty records claiming every byte", "clean"),
    ("many schemas", "hostile-schemas.ripple", "a Handshake of 100,000 schemas", "clean"),
    ("resync", "hostile-headers.ripple", "8 MiB of headers each claiming 1 MiB, no valid CRC", "clean"),
    ("inflate", "hostile-lumberjack.lj", "Lumberjack C frames of 20,000 JSON events each, per KB inflated", "clean.lj"),
    ("connections", "hostile-conns.pcap", "20,000 short connections of one Heartbeat each", "beats.pcap"),
)
# The clean inputs: `clean` is the generated Ripple stream, the rest are files of WORK.
HOSTILE_CLEAN = {
    "clean.pcap": "hostile-clean.pcap",  # the clean stream, one connection of full segments
    "clean.lj": "hostile-clean.lj",  # the inflate row's events, uncompressed
    "beats.pcap": "hostile-beats.pcap",  # the connections row's Heartbeats, one connection
}
HOSTILE_RATIO = 10.0  # "within a small constant of a clean input's time per byte"
HOSTILE_RSS_MB = 512.0


def write_hostile(work: Path, clean: Path) -> None:
    """The hostile inputs, and a one-connection capture of `clean` (run in a
    child, --write-hostile: the builders' memory must not raise the peak RSS
    the measured children inherit, see `measure`)."""
    sys.path.insert(0, str(ROOT))
    from ripple_cli.codec.envelope import build_envelope
    from ripple_cli.codec.messages import FIXED_FINGERPRINTS, HEARTBEAT, Heartbeat, write_payload
    from ripple_cli.protocols.lumberjack.wire import Json, Window, encode_frame
    from tests.hostile.bombs import claiming_headers, many_schemas, nested_list_bomb
    from tests.hostile.test_lumberjack_bombs import EVENTS, SMALL_ARRAYS, compressed_events
    from tests.replay.pcap import Connection, build_pcap

    def beat(seq: int) -> bytes:
        return build_envelope(HEARTBEAT, seq, 0, FIXED_FINGERPRINTS[HEARTBEAT], write_payload(Heartbeat(b"w", 1, 0.5)))

    beats = [beat(seq) for seq in range(1, 20_001)]
    events = encode_frame(Window(2, EVENTS)) + b"".join(
        encode_frame(Json(2, i % EVENTS + 1, SMALL_ARRAYS)) for i in range(8 * EVENTS)
    )
    inputs = {
        "hostile-listbomb.ripple": lambda: nested_list_bomb(1 << 20),
        "hostile-schemas.ripple": lambda: many_schemas(100_000),
        "hostile-headers.ripple": lambda: claiming_headers(8 << 20, claim=1 << 20),
        "hostile-lumberjack.lj": lambda: compressed_events(8),
        "hostile-conns.pcap": lambda: build_pcap(
            [Connection(beats[0], b"", 20000 + i) for i in range(20_000)], gap_s=0.0001
        ),
        "hostile-clean.pcap": lambda: build_pcap([Connection(clean.read_bytes())], gap_s=0.0001),
        "hostile-clean.lj": lambda: events,
        "hostile-beats.pcap": lambda: build_pcap([Connection(b"".join(beats))], segment=len(beats[0]), gap_s=0.0001),
    }
    for name, build in inputs.items():
        if not (work / name).exists():
            (work / name).write_bytes(build())
    # The bytes a row counts: its file's, but a compressed one's once inflated.
    sizes = {name: (work / name).stat().st_size for name in inputs}
    sizes["hostile-lumberjack.lj"] = len(events)  # the bytes it inflates to
    (work / "hostile-sizes.json").write_text(json.dumps(sizes))


def count_lines(path: Path, needle: bytes | None = None) -> int:
    """Lines of a file (holding `needle`, when given), read a line at a
    time: this process stays small (see measure)."""
    with path.open("rb") as f:
        return sum(1 for line in f if needle is None or needle in line)


def python_loop(path: Path) -> tuple[int, float]:
    """The hand-written script users would otherwise write: struct + crc32c."""
    from crc32c import crc32c

    t0 = time.perf_counter()
    data = path.read_bytes()
    pos, n, bad = 0, 0, 0
    unpack = struct.Struct("<i").unpack_from
    crc_at = struct.Struct("<I").unpack_from
    while pos + 63 <= len(data):
        length = unpack(data, pos + 55)[0]
        end = pos + 59 + length
        if crc32c(data[pos:end]) != crc_at(data, end)[0]:
            bad += 1
        n += 1
        pos = end + 4
    return n, time.perf_counter() - t0


def crc_whole(path: Path) -> float:
    from crc32c import crc32c

    data = path.read_bytes()
    t0 = time.perf_counter()
    crc32c(data)
    return time.perf_counter() - t0


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"


def fast_lane() -> str:
    probe = "from ripple_cli.codec.fast import speedups as s; m = s(); print(m.CRC32C_IMPL if m else '')"
    impl = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    return f"C fast lane (CRC-32C: {impl})" if impl else "pure Python (extension not built, or RIPPLE_PURE set)"


def tool_version(cmd: list[str], pattern: str) -> str:
    """The version `cmd` prints, found by `pattern` (its group 1)."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError:
        return "not installed"
    m = re.search(pattern, out.stdout + out.stderr)
    return m.group(1) if m else "?"


def same_file(a: Path, b: Path) -> bool:
    return a.exists() and b.exists() and filecmp.cmp(a, b, shallow=False)


# ------------------------------------------------------------------ the capture


def write_storm(pcap: Path, clean: Path, storm: Path, packets: int, seed: int) -> int:
    """From the first records of `pcap`: `clean` (a third of `packets`)
    and `storm` (each of them three times, the two copies up to four
    packets later: retransmissions and duplicates, reordered across
    directions).  The storm's packet count.  Run in a child (--write-storm):
    the records it holds must not raise the peak RSS that the measured
    children inherit (see `measure`)."""
    rng = random.Random(seed)
    with pcap.open("rb") as f:
        head = f.read(24)
        order = "<" if head[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        records = []
        while len(records) < packets // 3 and len(rec := f.read(16)) == 16:
            (caplen,) = struct.unpack_from(order + "I", rec, 8)
            records.append(rec + f.read(caplen))
    clean.write_bytes(head + b"".join(records))
    keyed = [(float(k), r) for k, r in enumerate(records)]
    keyed += [(k + rng.uniform(0.5, 4.5), r) for k, r in enumerate(records) for _copy in range(2)]
    keyed.sort(key=lambda kr: kr[0])
    with storm.open("wb") as out:
        out.write(head)
        for _k, r in keyed:
            out.write(r)
    return len(keyed)


def capture_pcap(stream: Path, out: Path) -> str:
    """A real tcpdump capture of `stream` sent through one TCP connection;
    cached.  Returns how it was taken."""
    how = out.with_suffix(".how")
    if out.exists() and how.exists():
        return how.read_text()
    args = [sys.executable, __file__, "--capture-child", str(out), str(stream)]
    step = "a private network namespace"
    netns = os.geteuid() == 0 and not missing_tool(step, "unshare") and not missing_tool(step, "ip")
    if netns:
        r = subprocess.run(["unshare", "--net", *args, "netns"], capture_output=True, text=True, check=False)
        if r.returncode != 0:
            why = (r.stderr.strip().splitlines() or ["?"])[-1]  # the last line says why
            print(f"  (network namespace capture failed, using the host's loopback: {why})", flush=True)
            netns = False
    if not netns:
        r = subprocess.run([*args, "host"], capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise SystemExit(f"bench: capture failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
    print(r.stderr, end="", flush=True)  # the child's notes (a step skipped)
    how.write_text(r.stdout.strip())
    return how.read_text()


def capture_child(out: Path, stream: Path, where: str) -> int:
    """Under `unshare --net` (where: netns): its own loopback up, MTU 1500,
    offloads off; or on the host's loopback as it is.  tcpdump on it while
    a sink reads the stream sent over TCP."""
    in_netns = where == "netns"
    where = "host's loopback (MTU 65536, offloads on)"
    if in_netns:
        sh(["ip", "link", "set", "lo", "up"])
        sh(["ip", "link", "set", "lo", "mtu", "1500"])
        if missing_tool("segmentation offloads off", "ethtool"):
            offloads = "offloads on (ethtool not installed)"
        else:
            off = subprocess.run(["ethtool", "-K", "lo", "tso", "off", "gso", "off", "gro", "off"], check=False)
            offloads = "segmentation offloads off" if off.returncode == 0 else "offloads on (ethtool failed)"
        where = "loopback of a private network namespace, MTU 1500, " + offloads
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]
    tmp = out.with_suffix(".tmp")
    dump = subprocess.Popen(
        ["tcpdump", "-i", "lo", "-w", str(tmp), "-U", "-s", "0", "-B", "262144", f"tcp port {port}"],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert dump.stderr is not None
    line = dump.stderr.readline()
    if "listening on" not in line:
        raise SystemExit(f"tcpdump did not start: {line}{dump.stderr.read()}")
    got: list[int] = []

    def sink() -> None:
        c, _ = srv.accept()
        n = 0
        buf = bytearray(1 << 20)
        while k := c.recv_into(buf):
            n += k
        got.append(n)
        c.close()

    t = threading.Thread(target=sink)
    t.start()
    with socket.create_connection(("127.0.0.1", port)) as s, open(stream, "rb") as f:
        while chunk := f.read(1 << 20):
            s.sendall(chunk)
    t.join()
    # tcpdump drops what the kernel still holds for it when it stops: wait
    # until it has written everything (-U: packet by packet), quiet a while.
    last, quiet_since = -1, time.monotonic()
    while time.monotonic() - quiet_since < 1.0:
        time.sleep(0.1)
        now = tmp.stat().st_size
        if now != last:
            last, quiet_since = now, time.monotonic()
    dump.send_signal(signal.SIGINT)
    stats = dump.stderr.read()
    dump.wait()
    m = re.search(r"(\d+) packets captured.*?(\d+) packets dropped by kernel", stats, re.S)
    if not m or int(m.group(2)) or got != [stream.stat().st_size]:
        raise SystemExit(f"incomplete capture: {stats.strip()}")
    # Every byte of the stream is in it, in order, once: ripple's own reader.
    sys.path.insert(0, str(ROOT))
    from ripple_cli.capture.events import StreamData, StreamGap
    from ripple_cli.sources.inputs import input_events

    sent, holes = 0, 0
    with open(tmp, "rb") as f:
        for ev in input_events(str(tmp), f):
            if isinstance(ev, StreamData) and ev.stream is not None and ev.stream.from_client:
                sent += len(ev.data)
            holes += isinstance(ev, StreamGap)
    if sent != stream.stat().st_size or holes:
        raise SystemExit(f"incomplete capture: {sent} bytes of the stream, {holes} holes ({stats.strip()})")
    tmp.rename(out)
    print(f"{m.group(1)} packets; tcpdump on the {where}")
    return 0


# ------------------------------------------------------------------ proxies


@contextmanager
def netpeer_server() -> Iterator[tuple[int, int]]:
    """The sink and echo servers (bench/netpeer.py) in their own process."""
    ports = []
    for _ in range(2):
        with socket.create_server(("127.0.0.1", 0)) as s:
            ports.append(s.getsockname()[1])
    proc = subprocess.Popen(
        [sys.executable, str(NETPEER), "serve", str(ports[0]), str(ports[1])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    if proc.stdout.readline().strip() != "ready":
        raise SystemExit("bench: netpeer serve did not start")
    try:
        yield ports[0], ports[1]
    finally:
        proc.stdin.close()
        proc.wait(10)


def _wait_listening(port: int, proc: subprocess.Popen[str], timeout: float = 20) -> None:
    """Until something listens on the port (read from /proc, so that no
    probe connection goes through the proxy)."""
    local = f"0100007F:{port:04X}"  # 127.0.0.1 as /proc/net/tcp writes it
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"bench: {proc.args!r} exited with status {proc.returncode}")
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[1] == local and fields[3] == "0A":  # LISTEN
                return
        time.sleep(0.02)
    raise SystemExit(f"bench: nothing listens on port {port}")


def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as s:
        return int(s.getsockname()[1])


# The tap's outputs the bench relays through: -F FORMAT to /dev/null, and
# "live", the live view (`-F table` on a terminal: a pseudo-terminal of
# 160x50 here, read as fast as the tap writes it).
TAP_FORMATS = ("sexp", "table", "jsonl", "live")


@contextmanager
def proxy(kind: str, upstream: int, tap_log: list[str]) -> Iterator[int]:
    """A proxy on a fresh port to 127.0.0.1:upstream: "direct" (none),
    "socat", or "ripple" (`ripple tap`, printing sexp to /dev/null), or
    "ripple -F FORMAT" (one of TAP_FORMATS)."""
    if kind == "direct":
        yield upstream
        return
    port = _free_port()
    fmt = kind.split()[-1] if kind.startswith("ripple -F ") else "sexp"
    if kind == "socat":
        cmd = ["socat", f"TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork", f"TCP:127.0.0.1:{upstream}"]
    else:
        listen, up = f"127.0.0.1:{port}", f"127.0.0.1:{upstream}"
        cmd = [sys.executable, "-m", "ripple_cli", "tap", "--listen", listen, "--upstream", up]
        cmd += ["-F", "table" if fmt == "live" else fmt]
    stderr = subprocess.PIPE if kind != "socat" else subprocess.DEVNULL
    screen: list[bytes] = []
    if fmt == "live":
        import fcntl
        import pty
        import termios

        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
        proc = subprocess.Popen(cmd, stdout=slave, stderr=stderr, text=True, cwd=ROOT)
        os.close(slave)

        def drain() -> None:
            while True:
                try:
                    chunk = os.read(master, 1 << 16)
                except OSError:  # EIO: the tap's end closed the terminal
                    return
                if not chunk:
                    return
                screen.append(chunk)

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
    else:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr, text=True, cwd=ROOT)
    try:
        _wait_listening(port, proc)
        yield port
    finally:
        proc.send_signal(signal.SIGINT if kind != "socat" else signal.SIGTERM)
        try:
            _out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            _out, err = proc.communicate()
            err = (err or "") + f"{kind} did not exit within 60 s of its signal: killed, its report cut short\n"
        if fmt == "live":
            reader.join(10)
            os.close(master)
            # The live view's own summary, its last line on the screen.
            text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(screen).decode(errors="replace"))
            err = (err or "") + "".join(ln + "\n" for ln in text.splitlines() if "not decoded" in ln)[-400:]
        if kind != "socat" and err:
            tap_log.append(f"{kind}: {err}")


def throughput(port: int, stream: Path) -> float:
    r = sh([sys.executable, str(NETPEER), "send", f"127.0.0.1:{port}", str(stream)], capture_output=True, text=True)
    n, seconds = r.stdout.split()
    if int(n) != stream.stat().st_size:
        raise SystemExit(f"bench: {n} bytes arrived of {stream.stat().st_size}")
    return float(seconds)


def pingpong(port: int, request: Path, rounds: int) -> tuple[float, float]:
    cmd = [sys.executable, str(NETPEER), "pingpong", f"127.0.0.1:{port}", str(request), str(rounds)]
    p50, p99 = sh(cmd, capture_output=True, text=True).stdout.split()
    return float(p50), float(p99)


@dataclass
class Row:
    name: str
    ours: float
    anchor: float
    goal: str
    met: bool
    pure: float | None = None
    fmt: str = ",.0f"
    ratio: float | None = None  # when not ours / anchor


def parquet_rows(out: Path) -> int:
    """The rows of an export's Parquet output, from the files' footers
    (in a child: this process stays small, see `measure`)."""
    code = (
        "import sys, pathlib, pyarrow.parquet as pq;"
        "print(sum(pq.read_metadata(p).num_rows for p in pathlib.Path(sys.argv[1]).rglob('*.parquet')))"
    )
    return int(sh([sys.executable, "-c", code, str(out)], capture_output=True, text=True).stdout)


def export_rows(tools: Path, ripple: list[str], args: argparse.Namespace, rows: list[Row], notes: list[str]) -> bool:
    """The export workload's rows (see the module's doc); whether every
    run wrote one row a message."""
    ok = True
    out = WORK / "export.out"
    stream = generate(tools, EXPORT_COUNT, args.seed)
    n = EXPORT_COUNT
    print(f"export stream: {stream.name}: {n:,} messages, {stream.stat().st_size / 1e6:.1f} MB", flush=True)

    def export(master: str | None, path: Path, fmt: str = "parquet") -> Measured:
        spark = ["--master", master] if master else []
        return measure([*ripple, "export", "-q", "--overwrite", "-F", fmt, *spark, "-o", str(out), str(path)])

    anchor = measure([str(tools / "ripple_read"), "-o", str(WORK / "export.ocaml.sexp"), str(stream)])
    (WORK / "export.ocaml.sexp").unlink()
    best = min((export("local[1]", stream) for _ in range(args.repeat)), key=lambda m: m.seconds)
    written = parquet_rows(out)
    ok &= written == n
    ratio = anchor.seconds / best.seconds
    rows.append(Row("export local[1], 4M (msgs/s)", n / best.seconds, n / anchor.seconds, "0.5x", ratio >= 0.5))
    notes.append(
        f"export --master local[1] of {n:,} messages: {best.seconds:.1f} s (the JVM's start included), "
        f"{written:,} rows, one a message: {'yes' if written == n else 'NO'}; ripple_read -o {anchor.seconds:.1f} s"
    )

    gb = generate(tools, EXPORT_GB_COUNT, args.seed)
    runs = {m: export(m, gb) for m in ("local[1]", "local[2]")}
    counts = {m: parquet_rows(out) for m in ("local[2]",)}  # the last run's output
    ok &= counts["local[2]"] == EXPORT_GB_COUNT
    one, two = runs["local[1]"].seconds, runs["local[2]"].seconds
    rows.append(Row("export 1 GB, local[2] (s)", two, one, ">=1.8x", one / two >= 1.8, fmt=".1f", ratio=one / two))
    notes.append(
        f"export of {gb.name} ({gb.stat().st_size / 1e6:,.0f} MB, {EXPORT_GB_COUNT:,} messages): local[1] {one:.1f} s, "
        f"local[2] {two:.1f} s ({one / two:.2f}x; the anchor column is local[1]); "
        f"{counts['local[2]']:,} rows: {'yes' if counts['local[2]'] == EXPORT_GB_COUNT else 'NO'}"
    )
    shutil.rmtree(out, ignore_errors=True)

    demo = ROOT / "examples" / "demo.ripple"
    for what, cmd in (
        ("export", [*ripple, "export", "-q", "--overwrite", "-o", str(out), str(demo)]),
        ("stats", [*ripple, "stats", str(demo)]),
    ):
        m = measure(cmd, repeat=max(3, args.repeat))
        rows.append(Row(f"{what} of the 37 KB demo (s)", m.seconds, 2.0, "<2 s", m.seconds < 2.0, fmt=".2f"))
    demo_rows = parquet_rows(out)
    ok &= demo_rows == 300
    notes.append(f"export of the demo: {demo_rows} rows (300 messages); the anchor column of its rows is the goal")
    shutil.rmtree(out, ignore_errors=True)
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=1_000_000, help="messages in the generated stream")
    ap.add_argument(
        "--count-4k", type=int, default=262_144, help="messages in the 4 KiB-message stream (default: 1.07 GB)"
    )
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=1, help="runs per workload; the best is kept")
    ap.add_argument("--only", default=",".join(WORKLOADS), help=f"workloads to run, of: {', '.join(WORKLOADS)}")
    ap.add_argument("--big", action="store_true", help="memory: also on a 10 GB stream (a few minutes)")
    ap.add_argument("--keep-big", action="store_true", help="keep the 10 GB stream in .bench/ for next time")
    ap.add_argument("--rounds", type=int, default=20_000, help="ping-pong round trips per proxy")
    ap.add_argument(
        "--tap-rounds", type=int, default=3, help="tap: rounds of direct, socat and ripple in turn; the best is kept"
    )
    ap.add_argument(
        "--tap-formats",
        default=",".join(TAP_FORMATS),
        help="tap: the outputs relayed through, of " + ",".join(TAP_FORMATS) + " (live: the live view on a terminal)",
    )
    ap.add_argument("--with-pure", action="store_true", help="also time ripple with RIPPLE_PURE=1 (slow)")
    ap.add_argument("--write-4k", type=Path, help=argparse.SUPPRESS)  # generate_4k's child
    ap.add_argument("--capture-child", nargs=3, help=argparse.SUPPRESS)  # capture_pcap's child
    ap.add_argument("--write-storm", nargs=4, help=argparse.SUPPRESS)  # write_storm's child
    ap.add_argument("--write-hostile", type=Path, help=argparse.SUPPRESS)  # write_hostile's child
    args = ap.parse_args()
    if args.write_storm:
        src, clean, storm, seed = args.write_storm
        print(write_storm(Path(src), Path(clean), Path(storm), STORM_PACKETS, int(seed)))
        return 0
    if args.write_4k:
        write_4k(args.write_4k, args.count_4k, args.seed)
        return 0
    if args.write_hostile:
        write_hostile(WORK, args.write_hostile)
        return 0
    if args.capture_child:
        out, stream_path, where = args.capture_child
        return capture_child(Path(out), Path(stream_path), where)
    only = {w.strip() for w in args.only.split(",") if w.strip()}
    if only - set(WORKLOADS):
        ap.error(f"--only: unknown workloads {', '.join(sorted(only - set(WORKLOADS)))}")

    for workload, tools_needed in (("pcap", ("tshark", "tcpdump")), ("storm", ("tcpdump",)), ("tap", ("socat",))):
        missing = [t for t in tools_needed if shutil.which(t) is None]
        if workload in only and missing:
            print(f"{workload}: skipped, {' and '.join(missing)} not installed (scripts/bench-deps.sh)", flush=True)
            only.discard(workload)

    WORK.mkdir(exist_ok=True)
    # PYTHONDONTWRITEBYTECODE (set here) would have every run compile every
    # module from source; a pip-installed ripple has them compiled.
    sh([sys.executable, "-m", "compileall", "-q", str(ROOT / "ripple_cli")], stdout=subprocess.DEVNULL)
    tools = build_ocaml()
    stream = generate(tools, args.count, args.seed)
    size = stream.stat().st_size
    n = args.count
    ripple = [sys.executable, "-m", "ripple_cli"]
    pure_env = {**os.environ, "RIPPLE_PURE": "1"}
    print(f"machine: {machine()}; ripple runs: {fast_lane()}", flush=True)
    print(f"stream: {stream.name}: {n:,} messages, {size / 1e6:.1f} MB", flush=True)

    def pure(cmd: list[str], out: Path | None = None) -> Measured | None:
        return measure(cmd, out, args.repeat, pure_env) if args.with_pure else None

    rows: list[Row] = []
    notes: list[str] = []
    ok = True
    v_r = d_r = None
    v_p = d_p = None
    anchor_rss: dict[str, float] = {}  # the OCaml tools' peak RSS
    out_r = WORK / "decode.ripple.sexp"

    if "verify" in only or "memory" in only:
        v_r = measure([*ripple, "verify", str(stream)], repeat=args.repeat)
        v_p = pure([*ripple, "verify", str(stream)])
    if "verify" in only and v_r:
        v_o = measure([str(tools / "ripple_walk"), str(stream)], repeat=args.repeat)
        ratio = v_o.seconds / v_r.seconds
        pure_rate = n / v_p.seconds if v_p else None
        rows.append(Row("verify (msgs/s)", n / v_r.seconds, n / v_o.seconds, "3.0x", ratio >= 3.0, pure_rate))
        anchor_rss["verify"] = v_o.rss_mb

    if "decode" in only or "memory" in only or "pcap" in only:
        d_r = measure([*ripple, "decode", "--format", "sexp", str(stream)], out_r, args.repeat)
        d_p = pure([*ripple, "decode", "--format", "sexp", str(stream)], WORK / "decode.pure.sexp")
    out_o = WORK / "decode.ocaml.sexp"
    d_o = None  # OCaml's typed decode and sexplib print: the anchor of decode, jsonl, table and select
    if only & {"decode", "jsonl", "table", "select"}:
        d_o = measure([str(tools / "ripple_read"), "-o", str(out_o), str(stream)], repeat=args.repeat)
    if "decode" in only and d_r and d_o:
        same = same_file(out_r, out_o)
        same_pure = d_p is None or same_file(WORK / "decode.pure.sexp", out_o)
        ok &= same and same_pure
        ratio = d_o.seconds / d_r.seconds
        pure_rate = n / d_p.seconds if d_p else None
        rows.append(
            Row("decode --format sexp (msgs/s)", n / d_r.seconds, n / d_o.seconds, "4.0x", ratio >= 4.0, pure_rate)
        )
        anchor_rss["decode"] = d_o.rss_mb
        text = f"decode output identical to OCaml's sexplib text: {'yes' if same else 'NO'}"
        notes.append(text + (f" (pure Python path: {'yes' if same_pure else 'NO'})" if args.with_pure else ""))

    # decode to a file in other formats, against the same anchor: (format,
    # goal, lines besides one a message, what a message's line is)
    formats = (("jsonl", 1.0, 0, "objects"), ("table", 0.5, 2, "rows"))  # a table: its header and rule
    for fmt, goal, extra, what in formats:
        if fmt not in only or d_o is None:
            continue
        out_f, pure_f = WORK / f"decode.ripple.{fmt}", WORK / f"decode.pure.{fmt}"
        f_r = measure([*ripple, "decode", "--format", fmt, str(stream)], out_f, args.repeat)
        f_p = pure([*ripple, "decode", "--format", fmt, str(stream)], pure_f)
        ratio = d_o.seconds / f_r.seconds
        pure_rate = n / f_p.seconds if f_p else None
        label = f"decode --format {fmt} (msgs/s)"
        rows.append(Row(label, n / f_r.seconds, n / d_o.seconds, f"{goal}x", ratio >= goal, pure_rate))
        lines = count_lines(out_f) - extra
        ok &= lines == n
        text = f"decode --format {fmt}: {lines:,} {what}, one a message: {'yes' if lines == n else 'NO'}"
        if f_p:
            same_pure = same_file(out_f, pure_f)
            ok &= same_pure
            text += f"; pure Python path identical: {'yes' if same_pure else 'NO'}"
        notes.append(text)

    if "select" in only and d_o:
        out_s = WORK / "decode.select.sexp"
        s_r = measure([*ripple, "decode", "-Y", SELECT_FILTER, str(stream)], out_s, args.repeat)
        s_p = pure([*ripple, "decode", "-Y", SELECT_FILTER, str(stream)])
        ratio = d_o.seconds / s_r.seconds
        pure_rate = n / s_p.seconds if s_p else None
        rows.append(
            Row("decode -Y, 2.9% chosen (msgs/s)", n / s_r.seconds, n / d_o.seconds, "2.0x", ratio >= 2.0, pure_rate)
        )
        chosen = count_lines(out_s)
        expected = count_lines(out_o, b"(key " + SELECT_KEY + b")")
        ok &= chosen == expected
        notes.append(
            f"decode -Y '{SELECT_FILTER}': {chosen:,} messages ({100 * chosen / n:.1f}%), those of OCaml's text "
            f"with that key: {'yes' if chosen == expected else 'NO'}"
        )

    if "export" in only:
        ok &= export_rows(tools, ripple, args, rows, notes)

    if "4k" in only:
        big = generate_4k(args.count_4k, args.seed)
        big_size = big.stat().st_size
        print(f"4 KiB stream: {big.name}: {args.count_4k + 1:,} messages, {big_size / 1e6:.1f} MB", flush=True)
        b_r = measure([*ripple, "verify", str(big)], repeat=args.repeat)
        b_o = measure([str(tools / "ripple_walk"), str(big)], repeat=args.repeat)
        b_p = pure([*ripple, "verify", str(big)])
        gbs = big_size / b_r.seconds / 1e9
        pure_gbs = big_size / b_p.seconds / 1e9 if b_p else None
        rows.append(
            Row(
                "verify, 4 KiB messages (GB/s)",
                gbs,
                big_size / b_o.seconds / 1e9,
                "1.0 GB/s",
                gbs >= 1.0,
                pure_gbs,
                ".2f",
            )
        )
        startup = measure([*ripple, "verify", str(ROOT / "examples" / "demo.ripple")], repeat=3)
        steady = big_size / max(b_r.seconds - startup.seconds, 1e-9) / 1e9
        notes.append(f"ripple start-up (verify of the 300-message demo): {startup.seconds * 1000:.0f} ms")
        notes.append(f"verify, 4 KiB messages, start-up excluded: {steady:.2f} GB/s; peak RSS {b_r.rss_mb:.0f} MB")

    if "pcap" in only:
        pcap = WORK / f"{stream.stem}.pcap"
        how = capture_pcap(stream, pcap)
        packets = int(how.split()[0])
        print(f"capture: {pcap.name}: {how}, {pcap.stat().st_size / 1e6:.1f} MB", flush=True)
        out_p = WORK / "decode.pcap.sexp"
        p_r = measure([*ripple, "decode", "--format", "sexp", str(pcap)], out_p, args.repeat)
        tshark = ["tshark", "-r", str(pcap), *TSHARK_TCP]
        p_t = measure(tshark, WORK / "tshark.txt", args.repeat)
        p_n = measure([*tshark, *NO_REASSEMBLY], WORK / "tshark.noreasm.txt", args.repeat)
        ratio = p_t.seconds / p_r.seconds
        rows.append(
            Row("decode of a pcap (packets/s)", packets / p_r.seconds, packets / p_t.seconds, ">1.0x", ratio > 1.0)
        )
        same = same_file(out_p, out_r)
        ok &= same
        notes.append(f"capture decoded to the same lines as the raw stream: {'yes' if same else 'NO'}")
        notes.append(
            f"tshark without TCP reassembly (-o tcp.desegment_tcp_streams:FALSE): {packets / p_n.seconds:,.0f} "
            f"packets/s, ripple {p_n.seconds / p_r.seconds:.2f}x of it; tshark peak RSS {p_t.rss_mb:.0f} MB, "
            f"ripple {p_r.rss_mb:.0f} MB"
        )

    if "storm" in only:
        pcap = WORK / f"{stream.stem}.pcap"
        if not pcap.exists():
            capture_pcap(stream, pcap)
        clean, storm = WORK / "storm.clean.pcap", WORK / "storm.pcap"
        child = [sys.executable, __file__, "--write-storm", str(pcap), str(clean), str(storm)]
        packets = int(sh([*child, str(args.seed)], capture_output=True, text=True).stdout)
        out_c, out_s = WORK / "storm.clean.sexp", WORK / "storm.sexp"
        s_c = measure([*ripple, "decode", "--format", "sexp", str(clean)], out_c, args.repeat)
        s_s = measure([*ripple, "decode", "--format", "sexp", str(storm)], out_s, args.repeat)
        ratio = s_s.seconds / s_c.seconds
        rows.append(Row(f"storm {packets:,} pkts (s)", s_s.seconds, s_c.seconds, "<=3.0x", ratio <= 3.0, fmt=".2f"))
        rows.append(Row("peak RSS storm (MB)", s_s.rss_mb, s_c.rss_mb, "flat", s_s.rss_mb <= s_c.rss_mb + 16.0))
        same = same_file(out_s, out_c)
        ok &= same
        notes.append(f"storm decoded to the same lines as its clean third: {'yes' if same else 'NO'}")

    if "hostile" in only:
        clean = generate(tools, 62_500, args.seed)  # about 8 MB, as the largest hostile input
        sh([sys.executable, __file__, "--write-hostile", str(clean)], cwd=ROOT)
        empty = WORK / "empty.ripple"
        empty.write_bytes(b"")
        # Several of these inputs take about as long as start-up, which is
        # subtracted: a busy moment in the runs of either swings a row by
        # several times.  So each input runs at least five times, each run
        # after one of the empty file, and start-up is the best of all of
        # those: measured across the whole section, as the inputs are.
        repeat = max(args.repeat, 5)
        sizes = json.loads((WORK / "hostile-sizes.json").read_text())
        startups: list[float] = []

        def best(path: Path, env: dict[str, str] | None = None) -> Measured:
            """The best time of `path`'s decode, and its peak RSS."""
            runs = []
            for _ in range(repeat):
                startups.append(measure([*ripple, "decode", str(empty)], env=env).seconds)
                runs.append(measure([*ripple, "decode", str(path)], WORK / "hostile.out", 1, env))
            return Measured(min(m.seconds for m in runs), max(m.rss_mb for m in runs))

        inputs = [clean, *(WORK / f for f in HOSTILE_CLEAN.values()), *(WORK / f for _n, f, _w, _a in HOSTILE)]
        timed = {path.name: best(path) for path in inputs}
        timed_pure = best(clean, pure_env)
        startup = min(startups)

        def per_kb(path: Path, m: Measured | None = None) -> Measured:
            """Seconds per KB past start-up (in `seconds`), and the peak RSS."""
            m = m or timed[path.name]
            kb = sizes.get(path.name, path.stat().st_size) / 1024
            return Measured(max(m.seconds - startup, 1e-6) / kb, m.rss_mb)

        cleans = {"clean": per_kb(clean), **{k: per_kb(WORK / f) for k, f in HOSTILE_CLEAN.items()}}
        clean_pure = per_kb(clean, timed_pure)
        for name, file, what, against in HOSTILE:
            m, ref = per_kb(WORK / file), cleans[against]
            ratio = m.seconds / ref.seconds
            met = ratio <= HOSTILE_RATIO and m.rss_mb <= HOSTILE_RSS_MB
            rows.append(Row(f"hostile: {name} (us/KB)", m.seconds * 1e6, ref.seconds * 1e6, "<=10x", met, fmt=",.1f"))
            notes.append(f"hostile: {name}: {what}; peak RSS {m.rss_mb:.0f} MB (at most {HOSTILE_RSS_MB:.0f})")
            if against != "clean":
                base = cleans["clean"]
                notes.append(
                    f"  against {HOSTILE_CLEAN[against]} ({ref.seconds * 1e6:,.1f} us/KB); against the clean Ripple "
                    f"stream on the C lane ({base.seconds * 1e6:,.1f} us/KB) it is {m.seconds / base.seconds:,.1f}x"
                    + (
                        f", against its full-segment capture ({cleans['clean.pcap'].seconds * 1e6:,.1f} us/KB) "
                        f"{m.seconds / cleans['clean.pcap'].seconds:,.1f}x"
                        if against.endswith(".pcap")
                        else ""
                    )
                )
        notes.append(
            f"hostile: decode time per KB past start-up ({startup * 1000:.0f} ms), against a clean stream of "
            f"{clean.stat().st_size / 1e6:.1f} MB on the C lane (the rows with a file named above: that file); "
            f"the clean stream on the pure-Python lane: {clean_pure.seconds * 1e6:,.1f} us/KB"
        )

    if "tap" in only:
        request = WORK / "heartbeat.ripple"
        write_heartbeat(request)
        tap_log: list[str] = []
        p99: dict[str, float] = {}
        p50: dict[str, float] = {}
        # The three proxies take turns, round after round, so that whatever
        # else the machine does falls on all of them alike; each keeps its best.
        formats = [f for f in TAP_FORMATS if f in args.tap_formats.split(",")]
        kinds = ("direct", "socat", *(f"ripple -F {f}" for f in formats))
        mbs = dict.fromkeys(kinds, 0.0)
        best_rt: dict[str, tuple[float, float]] = {}
        with netpeer_server() as (sink, echo):
            for _ in range(max(args.repeat, args.tap_rounds)):
                for kind in kinds:
                    with proxy(kind, sink, tap_log) as port:
                        mbs[kind] = max(mbs[kind], size / throughput(port, stream) / 1e6)
                    with proxy(kind, echo, []) as port:
                        rt = pingpong(port, request, args.rounds)
                    if kind not in best_rt or rt[1] < best_rt[kind][1]:
                        best_rt[kind] = rt
        for kind in kinds:
            p50[kind], p99[kind] = best_rt[kind]
        tapped = [k for k in kinds if k.startswith("ripple")]
        added = {k: max(p99[k] - p99["direct"], 0.0) for k in ("socat", *tapped)}
        latency_rows = []
        for kind in tapped:
            what = kind.removeprefix("ripple ").replace("-F live", "live view")
            ratio = mbs[kind] / mbs["socat"]
            rows.append(Row(f"tap proxy throughput, {what} (MB/s)", mbs[kind], mbs["socat"], "1.0x", ratio >= 1.0))
            # socat adds so little that its p99 can come out at or below the direct one's: 1 us at least.
            lat_ratio = added[kind] / max(added["socat"], 1.0)
            name = f"tap added p99 latency, {what} (us)"
            latency_rows.append(Row(name, added[kind], added["socat"], "<=1.5x", lat_ratio <= 1.5, ratio=lat_ratio))
        rows += latency_rows  # after the throughput rows
        notes.append(
            f"direct (no proxy): {mbs['direct']:,.0f} MB/s; round trip p50/p99 "
            + ", ".join(f"{k} {p50[k]:.0f}/{p99[k]:.0f} us" for k in kinds)
            + f" ({args.rounds:,} round trips of a {request.stat().st_size}-byte envelope)"
        )
        # The tap's own count of the copies it dropped (bytes not decoded),
        # each format's last throughput run: the views must drop no more than sexp.
        for kind in tapped:
            said = [ln.strip() for log in tap_log if log.startswith(kind + ":") for ln in log.splitlines()]
            said = [ln for ln in said if "not decoded" in ln or "killed" in ln]
            if said:
                m = re.search(r"([\d,]+) bytes? not decoded", said[-1])
                notes.append(f"{kind}: {m.group(1) if m else '?'} bytes not decoded (its last throughput run)")

    if "memory" in only and v_r and d_r:
        if "verify" not in anchor_rss:
            anchor_rss["verify"] = measure([str(tools / "ripple_walk"), str(stream)]).rss_mb
        if "decode" not in anchor_rss:
            ocaml_out = WORK / "decode.ocaml.sexp"
            anchor_rss["decode"] = measure([str(tools / "ripple_read"), "-o", str(ocaml_out), str(stream)]).rss_mb
        small = generate(tools, max(n // 10, 1), args.seed)
        v_s = measure([*ripple, "verify", str(small)])
        d_s = measure([*ripple, "decode", "--format", "sexp", str(small)], WORK / "decode.small.sexp")
        flat = 16.0  # MB of slack: flat means no more than this above the run on a tenth of the input
        v_flat, d_flat = v_r.rss_mb <= v_s.rss_mb + flat, d_r.rss_mb <= d_s.rss_mb + flat
        rows.append(
            Row(
                "peak RSS verify (MB)",
                v_r.rss_mb,
                anchor_rss["verify"],
                "flat",
                v_flat,
                v_p.rss_mb if v_p else None,
            )
        )
        rows.append(
            Row(
                "peak RSS decode (MB)",
                d_r.rss_mb,
                anchor_rss["decode"],
                "flat",
                d_flat,
                d_p.rss_mb if d_p else None,
            )
        )
        notes.append(
            f"peak RSS on the {max(n // 10, 1):,}-message stream: verify {v_s.rss_mb:.0f} MB, "
            f"decode {d_s.rss_mb:.0f} MB (the OCaml anchors read the file whole)"
        )
        if args.big:
            big_count = -(-BIG_BYTES * n // size)  # messages for 10 GB at this stream's average size
            print(f"generating a {big_count:,}-message stream (10 GB) ...", flush=True)
            huge = generate(tools, big_count, args.seed)
            huge_gb = huge.stat().st_size / 1e9
            try:
                g_v = measure([*ripple, "verify", str(huge)])
                g_d = measure([*ripple, "decode", "--format", "sexp", str(huge)])  # to /dev/null
            finally:
                if not args.keep_big:
                    huge.unlink()
            rows.append(
                Row(
                    f"peak RSS verify {huge_gb:.0f} GB (MB)",
                    g_v.rss_mb,
                    v_r.rss_mb,
                    "flat",
                    g_v.rss_mb <= v_r.rss_mb + flat,
                )
            )
            rows.append(
                Row(
                    f"peak RSS decode {huge_gb:.0f} GB (MB)",
                    g_d.rss_mb,
                    d_r.rss_mb,
                    "flat",
                    g_d.rss_mb <= d_r.rss_mb + flat,
                )
            )
            notes.append(
                f"{huge_gb:.1f} GB rows: the anchor column is ripple's own on the {size / 1e6:.0f} MB stream; "
                f"verify {big_count / g_v.seconds:,.0f} msgs/s, decode {big_count / g_d.seconds:,.0f} msgs/s "
                "(the OCaml tools read a file whole: not run on it)"
            )

    if "verify" in only:
        count, t_py = python_loop(stream)  # these two read the whole file: after every measurement
        t_crc = crc_whole(stream)
        notes.append(f"plain Python loop, struct + crc32c: {count / t_py:,.0f} msgs/s")
        notes.append(f"crc32c over the whole file: {size / t_crc / 1e9:.1f} GB/s")

    print()
    pure_col = f" {'pure Python':>13}" if args.with_pure else ""
    print(f"{'workload':32} {'ripple':>14} {'anchor':>14} {'ratio':>7} {'goal':>9}  met{pure_col}")
    for r in rows:
        ratio_txt = f"{(r.ratio if r.ratio is not None else r.ours / r.anchor):6.2f}x"
        extra = f" {format(r.pure, r.fmt):>13}" if r.pure is not None else (f" {'':>13}" if args.with_pure else "")
        ours, anchor = format(r.ours, r.fmt), format(r.anchor, r.fmt)
        line = f"{r.name:32} {ours:>14} {anchor:>14} {ratio_txt} {r.goal:>9}  {'yes' if r.met else 'no ':3}{extra}"
        print(line.rstrip())
    print()
    tshark_v = tool_version(["tshark", "--version"], r"TShark \(Wireshark\) (\S+)")
    socat_v = tool_version(["socat", "-V"], r"socat version (\S+)")
    print(f"anchors: OCaml ripple_walk, ripple_read; tshark {tshark_v} (pcap); socat {socat_v} (tap)")
    print("reference figures:")
    for note in notes:
        print(f"  {note}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
