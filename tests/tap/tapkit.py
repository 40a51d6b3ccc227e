"""Helpers for the tap's tests: Ripple streams to send, upstream servers,
clients, and `ripple tap` run as a real process."""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import signal
import socket
import string
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ripple_cli.codec.envelope import build_envelope
from ripple_cli.codec.messages import DELTA, FIXED_FINGERPRINTS, HEARTBEAT, DeltaMsg, Heartbeat, write_payload

ROOT = Path(__file__).resolve().parents[2]
DEMO = (ROOT / "examples" / "demo.ripple").read_bytes()


def ripple_stream(seed: int, size: int, big: int = 16000) -> bytes:
    """The bundled demo stream (Handshake, Deltas decoded with its schemas),
    then large Heartbeats and Deltas of an unknown schema up to `size`
    bytes: megabytes that decode quickly (few, big messages)."""
    rng = random.Random(seed)
    out = [DEMO]
    total = len(DEMO)
    seq = 1000
    letters = string.ascii_letters.encode()
    while total < size:
        seq += 1
        text = bytes(rng.choices(letters, k=rng.randrange(big // 2, big)))
        if rng.random() < 0.3:
            body: Heartbeat | DeltaMsg = Heartbeat(text[:64], seq * 1000, rng.random())
            env = build_envelope(HEARTBEAT, seq, seq * 1000, FIXED_FINGERPRINTS[HEARTBEAT], write_payload(body))
        else:
            body = DeltaMsg(b"bulk", b"\x03k" + str(seq).encode(), text, seq, seq * 1000 - 5)
            env = build_envelope(DELTA, seq, seq * 1000, b"bulk/v9", write_payload(body))
        out.append(env)
        total += len(env)
    return b"".join(out)


def listener(host: str = "127.0.0.1") -> socket.socket:
    srv = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, 0))
    srv.listen(128)
    return srv


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Received:
    sha: str = ""
    size: int = 0


class EchoServer:
    """An upstream that sends back what it receives, reading and writing in
    random-sized pieces; on the client's FIN it finishes and closes.  Keeps
    the sha256 of what each connection received."""

    def __init__(self, seed: int = 1) -> None:
        self.srv = listener()
        self.port = int(self.srv.getsockname()[1])
        self.received: list[Received] = []  # one per connection, as each ends
        self.seed = seed
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._serve, daemon=True)
        self._accept.start()

    def _serve(self) -> None:
        k = 0
        while True:
            try:
                conn, _addr = self.srv.accept()
            except OSError:
                return
            k += 1
            t = threading.Thread(target=self._echo, args=(conn, random.Random(self.seed * 7919 + k)), daemon=True)
            t.start()
            self._threads.append(t)

    def _echo(self, conn: socket.socket, rng: random.Random) -> None:
        h = hashlib.sha256()
        size = 0
        with conn:
            try:
                while True:
                    chunk = conn.recv(rng.randint(1, 1 << 17))
                    if not chunk:
                        break
                    h.update(chunk)
                    size += len(chunk)
                    conn.sendall(chunk)
            except ConnectionResetError:
                return  # cut: the tap stopped (-c N, Ctrl-C) with the connection open
            # The other side may be gone already.
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_WR)
        self.received.append(Received(h.hexdigest(), size))

    def close(self) -> None:
        self.srv.close()


def exchange(port: int, payload: bytes, rng: random.Random, max_write: int = 1 << 16) -> tuple[int, str, int]:
    """Connect to `port`, send `payload` in random-sized writes while reading
    the answer, then FIN; returns (local port, sha256 of what came back, size)."""
    with socket.create_connection(("127.0.0.1", port)) as c:
        local = int(c.getsockname()[1])
        h = hashlib.sha256()
        got = [0]

        def read() -> None:
            while chunk := c.recv(1 << 17):
                h.update(chunk)
                got[0] += len(chunk)

        reader = threading.Thread(target=read)
        reader.start()
        at = 0
        while at < len(payload):
            n = rng.randint(1, max_write)
            c.sendall(payload[at : at + n])
            at += n
        c.shutdown(socket.SHUT_WR)
        reader.join(60)
        assert not reader.is_alive(), "the answer never ended"
    return local, h.hexdigest(), got[0]


def recv_all(s: socket.socket) -> bytes:
    """Everything until the peer's FIN."""
    out = bytearray()
    while chunk := s.recv(1 << 16):
        out += chunk
    return bytes(out)


def serve_once(handler: Callable[[socket.socket, dict[str, object]], None]) -> tuple[int, dict[str, object]]:
    """An upstream for one connection: `handler(conn, result)` in a thread.
    Returns its port and `result`, where an OSError lands as "error" and
    "done" says the connection is closed."""
    srv = listener()
    result: dict[str, object] = {}

    def run() -> None:
        conn, _ = srv.accept()
        srv.close()
        with conn:
            try:
                handler(conn, result)
            except OSError as e:
                result["error"] = e
        result["done"] = True

    threading.Thread(target=run, daemon=True).start()
    return int(srv.getsockname()[1]), result


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class TapRun:
    proc: subprocess.Popen[bytes]
    port: int
    stderr_lines: list[str] = field(default_factory=list)
    stdout_path: Path | None = None
    code: int | None = None
    stderr_done: threading.Event = field(default_factory=threading.Event)

    def stderr(self) -> str:
        return "".join(self.stderr_lines)

    def final_stderr(self, timeout: float = 30) -> str:
        """All of stderr, once the process has exited and the pipe is read to
        its end (the summary line is the last)."""
        assert self.proc.wait(timeout) is not None
        assert self.stderr_done.wait(timeout), "stderr never ended"
        return self.stderr()

    def stdout(self) -> bytes:
        assert self.stdout_path is not None
        return self.stdout_path.read_bytes()

    def interrupt(self, timeout: float = 60) -> int:
        """Ctrl-C; the exit status, once stderr is read to its end."""
        self.proc.send_signal(signal.SIGINT)
        self.code = self.proc.wait(timeout)
        assert self.stderr_done.wait(timeout), "stderr never ended"
        return self.code


def ripple_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "ripple_cli", *args]


@contextmanager
def run_tap(
    args: list[str],
    tmp: Path,
    stdout: int | None = None,
    ready: str = "ripple: tap: ",
    env: dict[str, str] | None = None,
    nice: str | None = "0",
) -> Iterator[TapRun]:
    """`ripple tap ARGS` as a process; stdout to a file (or the given
    descriptor/PIPE), stderr collected.  Waits for its status line; the port
    is the one it listens on (proxy mode).  `nice`: the --nice given when
    ARGS give none; 0, because what most tests check is what the tap shows,
    and at its default of 19 two busy processes beside it starve its
    decoding past any wait (None: the tap's own default)."""
    if nice is not None and "--nice" not in args:
        args = [*args, "--nice", nice]
    out_path = tmp / f"tap-{time.monotonic_ns()}.out"
    out_file = open(out_path, "wb") if stdout is None else None  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        ripple_cmd("tap", *args),
        stdout=out_file if out_file is not None else stdout,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    run = TapRun(proc, 0, stdout_path=out_path if out_file is not None else None)
    assert proc.stderr is not None
    err = proc.stderr

    def drain() -> None:
        for line in err:
            run.stderr_lines.append(line.decode("utf-8", "replace"))
        run.stderr_done.set()

    first = err.readline().decode("utf-8", "replace")
    run.stderr_lines.append(first)
    threading.Thread(target=drain, daemon=True).start()
    try:
        assert first.startswith(ready), f"the tap did not start: {first}{proc.stderr.read().decode()}"
        if "listening on 127.0.0.1:" in first:
            run.port = int(first.split("listening on 127.0.0.1:")[1].split(",")[0])
        yield run
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if out_file is not None:
            out_file.close()


def by_connection(lines: list[bytes]) -> dict[str, list[bytes]]:
    """`--show-connection` sexp lines grouped by their trailing label, the label removed."""
    groups: dict[str, list[bytes]] = defaultdict(list)
    for line in lines:
        text, sep, label = line.rpartition(b" ; ")
        assert sep, line
        groups[label.decode()].append(text)
    return groups


def decode_lines(data: bytes, tmp: Path, *extra: str) -> list[bytes]:
    """`ripple decode` of raw bytes: its stdout lines."""
    path = tmp / f"raw-{time.monotonic_ns()}.ripple"
    path.write_bytes(data)
    r = subprocess.run(ripple_cmd("decode", *extra, str(path)), capture_output=True, cwd=ROOT, check=False)
    assert r.returncode in (0, 1), r.stderr
    return r.stdout.splitlines()


def wait_for(cond: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def cpu_ticks(pid: int) -> int:
    """User + system CPU time of a process (all its threads), in clock ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of proc(5)


def wait_idle(pid: int, quiet: float = 0.4, timeout: float = 60.0) -> None:
    """Until the process has used no CPU for `quiet` seconds: whatever it
    could do is done, and it waits (on a pipe nobody reads, say)."""
    deadline = time.monotonic() + timeout
    last = cpu_ticks(pid)
    since = time.monotonic()
    while time.monotonic() - since < quiet:
        assert time.monotonic() < deadline, "the process never went idle"
        time.sleep(0.05)
        now = cpu_ticks(pid)
        if now != last:
            last, since = now, time.monotonic()
