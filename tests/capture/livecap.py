"""Real captures for the tests: tcpdump on the loopback interface while
real sockets talk over it, and the capture read back into streams."""

from __future__ import annotations

import io
import os
import random
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import dpkt  # type: ignore[import-untyped, unused-ignore]
import pytest

from ripple_cli.capture.events import (
    CaptureEvent,
    CaptureNote,
    StreamData,
    StreamEnd,
    StreamGap,
    StreamStart,
)
from ripple_cli.capture.reader import CaptureOptions, capture_events

ROOT = Path(__file__).resolve().parents[2]
DEMO = (ROOT / "examples" / "demo.ripple").read_bytes()
TCPDUMP = shutil.which("tcpdump") or "/usr/bin/tcpdump"


def require_tcpdump() -> None:
    """Capturing needs root (CI runs the tests as root) and tcpdump."""
    if os.geteuid() != 0:
        pytest.skip("live captures need root: tcpdump must open the loopback interface")
    if not os.access(TCPDUMP, os.X_OK):
        pytest.skip(f"live captures need tcpdump ({TCPDUMP} is missing): make system-deps installs it")


def _wait_listening(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> str:
    """tcpdump's stderr up to its "listening on" line: from then on it captures."""
    assert proc.stderr is not None
    fd = proc.stderr.fileno()
    text = b""
    deadline = time.monotonic() + timeout
    while b"listening on" not in text:
        left = deadline - time.monotonic()
        if left <= 0 or proc.poll() is not None:
            proc.kill()
            raise AssertionError(f"tcpdump did not start capturing: {text.decode(errors='replace')}")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                continue
            text += chunk
    return text.decode(errors="replace")


def tcp_packets(path: Path) -> list[tuple[int, int, int]]:
    """(src port, dst port, TCP flags) of the packets tcpdump has written so
    far, read with dpkt (not with the code under test); a record still being
    written ends the list."""
    out: list[tuple[int, int, int]] = []
    data = path.read_bytes() if path.exists() else b""
    if len(data) < 24:
        return out
    try:
        reader = dpkt.pcap.Reader(io.BytesIO(data))
        link = {1: dpkt.ethernet.Ethernet, 113: dpkt.sll.SLL, 276: dpkt.sll2.SLL2}[reader.datalink()]
        for _ts, buf in reader:
            ip = link(buf).data
            if isinstance(ip, dpkt.ip.IP | dpkt.ip6.IP6) and isinstance(ip.data, dpkt.tcp.TCP):
                out.append((ip.data.sport, ip.data.dport, ip.data.flags))
    except (dpkt.Error, struct.error, ValueError):
        pass
    return out


def closed(client_ports: Callable[[], Iterable[int]]) -> Callable[[Path], bool]:
    """Whether the capture holds the end of every connection (by client
    port): a FIN from each side, then the last ACK."""

    def done(path: Path) -> bool:
        pkts = tcp_packets(path)
        for port in client_ports():
            mine = [(s, f) for s, d, f in pkts if port in (s, d)]
            fins = [k for k, (s, f) in enumerate(mine) if f & dpkt.tcp.TH_FIN]
            if len({mine[k][0] for k in fins}) < 2 or fins[-1] == len(mine) - 1:
                return False
        return True

    return done


def closed_all(server_port: int, connections: int) -> Callable[[Path], bool]:
    """Whether the capture holds the end of `connections` connections to
    `server_port` (their client ports not known beforehand)."""

    def done(path: Path) -> bool:
        clients = {s for s, d, _f in tcp_packets(path) if d == server_port}
        return len(clients) == connections and closed(lambda: clients)(path)

    return done


def _stop(proc: subprocess.Popen[bytes], path: Path | None, until: Callable[[Path], bool] | None) -> str:
    # Let tcpdump write what the kernel still holds for it: until the capture
    # holds what the test needs (or, without a test for that, a short while).
    deadline = time.monotonic() + 10
    if until is not None and path is not None:
        while not until(path) and time.monotonic() < deadline:
            time.sleep(0.02)
    else:
        time.sleep(0.15)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=10)
    return err.decode(errors="replace")


def tcpdump_args(iface: str, bpf: str, out: str, extra: Sequence[str] = (), immediate: bool = False) -> list[str]:
    # -U: each packet is written as soon as tcpdump has it; -Z root: keep
    # root so that the test's private temporary directory is writable; -s
    # just above loopback's 64 KiB MTU.  Without --immediate-mode the kernel
    # packs packets into the 64 MiB of -B (hundreds of thousands of small
    # ones), handing a block over when it is full or a second old: a busy
    # machine that keeps tcpdump from running for a while drops none.  In
    # immediate mode each packet takes a slot of the snap length, about
    # 1,000 in all (575 of 2,910 were dropped once, beside the suite and two
    # CPU hogs); it is kept for the pipes that must show packets at once.
    flags = ["-n", "-U", *(["--immediate-mode"] if immediate else []), "-Z", "root", "-B", "65536", "-s", "66000"]
    return [TCPDUMP, "-i", iface, *flags, *extra, "-w", out, bpf]


@contextmanager
def tcpdump(
    path: Path,
    bpf: str,
    iface: str = "lo",
    extra: Sequence[str] = (),
    until: Callable[[Path], bool] | None = None,
    netns: str | None = None,
) -> Iterator[None]:
    """Capture into `path` while the body runs; then, once `until(path)`
    (the capture has all the test needs), tcpdump is stopped.  `netns`: in
    that network namespace."""
    require_tcpdump()
    args = tcpdump_args(iface, bpf, str(path), extra)
    if netns is not None:
        args = ["ip", "netns", "exec", netns, *args]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _wait_listening(proc)
    try:
        yield
    finally:
        err = _stop(proc, path, until)
    assert re.search(r"^0 packets dropped by kernel", err, re.MULTILINE), err


@contextmanager
def tcpdump_pipe(bpf: str, iface: str = "lo") -> Iterator[subprocess.Popen[bytes]]:
    """tcpdump writing the capture to its stdout (`-w -`), as in
    `tcpdump -U -w - | ripple decode -`."""
    require_tcpdump()
    proc = subprocess.Popen(
        tcpdump_args(iface, bpf, "-", immediate=True), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    _wait_listening(proc)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)


@dataclass
class Exchange:
    """One real connection: what each side sent."""

    client_port: int
    sent: bytes  # client to server
    answered: bytes  # server to client


# The TCP ports of Linux's ephemeral range (32768-60999) that tshark (4.0,
# `tshark -G decodes`) gives a dissector: a connection on one of them is
# that protocol's before any heuristic runs (57000: IRC), so a capture
# whose dissector the tests find by its heuristic must not use them.
WIRESHARK_PORTS = frozenset({34980, 44321, 44322, 44818, 48049, 48898, 57000})


def bound(host: str = "127.0.0.1", *, client: bool = False) -> socket.socket:
    """A TCP socket bound to an ephemeral port that is not one of
    WIRESHARK_PORTS: on `host` to listen there, or (`client`) on any
    address of its family, to connect to `host`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    while True:
        s = socket.socket(family, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("" if client else host, 0))
        if s.getsockname()[1] not in WIRESHARK_PORTS:
            return s
        s.close()


def listener(host: str = "127.0.0.1") -> socket.socket:
    srv = bound(host)
    srv.listen(64)
    return srv


def _serve_one(
    conn: socket.socket, answer: bytes | Callable[[bytes], bytes], rng: random.Random, used: list[bytes]
) -> None:
    # Answers in pieces while reading, so that both directions carry data
    # at once; the rest after the client's FIN, in pieces too.  A callable
    # answer is chosen from the client's first bytes.
    with conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        at = 0
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            if callable(answer):
                answer = answer(chunk)
            if not used:
                used.append(answer)
            if at < len(answer):
                n = rng.randint(1, 400)
                conn.sendall(answer[at : at + n])
                at += n
        if callable(answer):
            answer = answer(b"")
        if not used:
            used.append(answer)
        while at < len(answer):
            n = rng.randint(1, 1500)
            conn.sendall(answer[at : at + n])
            at += n


def _client(host: str, port: int, payload: bytes, rng: random.Random, max_write: int) -> tuple[int, bytes]:
    with bound(host, client=True) as c:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # one segment per write, mostly
        c.connect((host, port))
        local_port = c.getsockname()[1]
        received = bytearray()

        def read() -> None:
            while chunk := c.recv(65536):
                received.extend(chunk)

        reader = threading.Thread(target=read)
        reader.start()
        at = 0
        while at < len(payload):
            n = rng.randint(1, max_write)
            c.sendall(payload[at : at + n])
            at += n
        c.shutdown(socket.SHUT_WR)
        reader.join(10)
    return local_port, bytes(received)


def converse(
    srv: socket.socket,
    payloads: Sequence[tuple[bytes, bytes]],
    seed: int = 1,
    max_write: int = 3000,
    answer_for: Callable[[bytes], bytes] | None = None,
) -> list[Exchange]:
    """One connection per (client bytes, server bytes), all at once: each
    client writes its bytes in random-sized writes, the server answers each
    connection (in accept order) with the next server bytes, or, with
    `answer_for`, with what it gives for the client's first bytes."""
    host, port = srv.getsockname()[:2]
    rng = random.Random(seed)
    answered: dict[int, bytes] = {}  # client port -> what the server sent it
    received: dict[int, bytes] = {}  # client port -> what the client got

    def serve() -> None:
        handlers = []
        used: dict[int, list[bytes]] = {}
        for k, (_sent, answer) in enumerate(payloads):
            conn, addr = srv.accept()
            used[addr[1]] = []
            rng_k = random.Random(seed * 1000 + k)
            what = answer_for or answer
            handlers.append(threading.Thread(target=_serve_one, args=(conn, what, rng_k, used[addr[1]])))
            handlers[-1].start()
        for t in handlers:
            t.join(30)
        for port, answers in used.items():
            answered[port] = answers[0] if answers else b""

    server = threading.Thread(target=serve)
    server.start()
    sent_by: dict[int, bytes] = {}

    def client(sent: bytes, client_seed: float) -> None:
        local_port, got = _client(host, port, sent, random.Random(client_seed), max_write)
        sent_by[local_port] = sent
        received[local_port] = got

    clients = [threading.Thread(target=client, args=(sent, rng.random())) for sent, _a in payloads]
    for t in clients:
        t.start()
    for t in clients:
        t.join(30)
    server.join(30)
    assert len(sent_by) == len(payloads) == len(answered)
    out = []
    for p, sent in sent_by.items():
        assert received[p] == answered[p], "the sockets themselves lost bytes"
        out.append(Exchange(p, sent, answered[p]))
    return out


@dataclass
class Stream:
    """One direction as reassembled: its bytes, and the whole sequence of
    bytes and holes (adjacent bytes merged)."""

    data: bytearray = field(default_factory=bytearray)
    pieces: list[bytes | int] = field(default_factory=list)  # bytes, or the size of a gap
    start: StreamStart | None = None
    end: StreamEnd | None = None


@dataclass
class Connection:
    number: int
    client_port: int
    server_port: int
    c2s: Stream = field(default_factory=Stream)
    s2c: Stream = field(default_factory=Stream)


@dataclass
class Result:
    connections: dict[int, Connection] = field(default_factory=dict)  # by number
    notes: list[CaptureNote] = field(default_factory=list)
    events: list[CaptureEvent] = field(default_factory=list)

    def by_client_port(self, port: int) -> Connection:
        found = [c for c in self.connections.values() if c.client_port == port]
        assert len(found) == 1, f"{len(found)} connections from client port {port}: {self.connections}"
        return found[0]


def collect(events: Iterator[CaptureEvent]) -> Result:
    res = Result()
    for ev in events:
        res.events.append(ev)
        if isinstance(ev, CaptureNote):
            res.notes.append(ev)
            continue
        sid = ev.stream
        assert sid is not None
        conn = res.connections.get(sid.connection)
        if conn is None:
            conn = res.connections[sid.connection] = Connection(sid.connection, sid.client.port, sid.server.port)
        st = conn.c2s if sid.from_client else conn.s2c
        if isinstance(ev, StreamStart):
            assert st.start is None, f"two starts for {sid.key}"
            st.start = ev
        elif isinstance(ev, StreamEnd):
            assert st.end is None, f"two ends for {sid.key}"
            st.end = ev
        else:
            assert st.start is not None and st.end is None, f"{ev} outside its stream's life"
            if isinstance(ev, StreamData):
                assert ev.data, "empty StreamData"
                st.data += ev.data
                if st.pieces and isinstance(st.pieces[-1], bytes):
                    st.pieces[-1] += ev.data
                else:
                    st.pieces.append(ev.data)
            elif isinstance(ev, StreamGap):
                assert ev.size > 0
                st.pieces.append(ev.size)
    for conn in res.connections.values():
        for st in (conn.c2s, conn.s2c):
            assert st.start is not None and st.end is not None, f"connection {conn.number} not started or ended"
    return res


def read_capture(source: Path | BinaryIO, **options: object) -> Result:
    opts = CaptureOptions(**options)  # type: ignore[arg-type]
    if isinstance(source, Path):
        with source.open("rb") as f:
            return collect(capture_events(f, str(source), opts))
    return collect(capture_events(source, "<test>", opts))


def assert_exchanges(res: Result, exchanges: Sequence[Exchange]) -> None:
    """Every connection reassembled to exactly what its sockets sent, nothing else."""
    assert len(res.connections) == len(exchanges)
    for ex in exchanges:
        conn = res.by_client_port(ex.client_port)
        assert bytes(conn.c2s.data) == ex.sent
        assert bytes(conn.s2c.data) == ex.answered
        assert conn.c2s.pieces == ([ex.sent] if ex.sent else [])
        assert conn.s2c.pieces == ([ex.answered] if ex.answered else [])
        for st in (conn.c2s, conn.s2c):
            assert st.start is not None and st.start.syn_seen
            assert st.end is not None and st.end.reason == "fin"
    assert [n for n in res.notes if n.error] == []


def capture_conversation(
    path: Path,
    payloads: Sequence[tuple[bytes, bytes]],
    seed: int,
    iface: str = "lo",
    extra: Sequence[str] = (),
    host: str = "127.0.0.1",
    max_write: int = 3000,
    answer_for: Callable[[bytes], bytes] | None = None,
) -> list[Exchange]:
    """Capture `converse` with a server on `host` into `path`."""
    exchanges: list[Exchange] = []
    until = closed(lambda: [e.client_port for e in exchanges])
    with listener(host) as srv, tcpdump(path, f"tcp port {srv.getsockname()[1]}", iface, extra, until):
        exchanges += converse(srv, payloads, seed, max_write, answer_for)
    return exchanges
