"""`ripple tap` as a proxy, as a process on real sockets: bytes intact in
both directions, decoded like `ripple decode`, closing like a plain relay,
and traffic never held up by a blocked printer.  Every test runs with the
relay's C loop and with its asyncio loop (RIPPLE_PURE=1)."""

from __future__ import annotations

import os
import random
import re
import signal
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path

import pytest
from tapkit import (
    DEMO,
    EchoServer,
    TapRun,
    by_connection,
    decode_lines,
    exchange,
    recv_all,
    ripple_stream,
    run_tap,
    serve_once,
    sha,
    wait_for,
    wait_idle,
)

from ripple_cli.tap.relay import c_loop


@pytest.fixture(autouse=True, params=["c", "asyncio"])
def relay_lane(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The tap's subprocesses inherit the environment: RIPPLE_PURE=1 picks the asyncio relay."""
    if request.param == "asyncio":
        monkeypatch.setenv("RIPPLE_PURE", "1")
    else:
        monkeypatch.delenv("RIPPLE_PURE", raising=False)
        if c_loop() is None:
            pytest.skip("the C relay loop is not built here")
    return str(request.param)


def _proxy_args(upstream_port: int, *extra: str) -> list[str]:
    # --nice 0: these tests are about what the tap forwards, decodes and
    # counts, not about yielding the CPU (test_tap_cli tests --nice).  At the
    # default 19, two busy processes beside the tests starve its decoding:
    # wait_idle then takes a starved tap for one that has finished.
    return ["--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{upstream_port}", "--nice", "0", *extra]


def _parallel(port: int, payloads: list[bytes], seed: int = 1) -> list[tuple[int, str, int]]:
    results: list[tuple[int, str, int] | None] = [None] * len(payloads)

    def one(i: int) -> None:
        results[i] = exchange(port, payloads[i], random.Random(seed * 1000 + i))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(payloads))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert all(r is not None for r in results), "a connection did not finish"
    return [r for r in results if r is not None]


def _client_port(label: str, upstream_port: int) -> int:
    """The client's port in a `--show-connection` label `N SRC -> DST CID`."""
    _n, src, _arrow, dst = label.split()[:4]
    ports = [int(src.rsplit(":", 1)[1]), int(dst.rsplit(":", 1)[1])]
    ports.remove(upstream_port)
    return ports[0]


def _wait_slowly(cond: Callable[[], bool], what: str, timeout: float = 600) -> None:
    """wait_for, looking once a second: the condition reads a large file."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(1)


def test_fifty_connections_arrive_intact_and_decode_like_decode(tmp_path: Path) -> None:
    variants = [ripple_stream(seed=k, size=2_000_000) for k in range(4)]
    garbage = random.Random(99).randbytes(2_000_000)
    payloads = [garbage if i == 17 else variants[i % 4] for i in range(50)]
    up = EchoServer(seed=3)
    # A buffer larger than all the traffic: this test wants every byte decoded.
    expected = {sha(p): decode_lines(p, tmp_path) for p in [*variants, garbage]}
    # Every line the tap is to show: both directions of each Ripple connection.
    shown = sum(2 * len(expected[sha(p)]) for p in payloads if p is not garbage)
    with run_tap(_proxy_args(up.port, "--show-connection", "--buffer", "1G"), tmp_path) as tap:
        results = _parallel(tap.port, payloads)
        wait_for(lambda: len(up.received) == 50, what="the upstream to see every connection end")
        # The tap decodes behind the traffic: Ctrl-C once it has shown every line.
        _wait_slowly(lambda: tap.stdout().count(b"\n") >= shown, what="the tap to show every message")
        assert tap.interrupt() == 130
    up.close()

    # Bytes: each side got exactly what the other sent.
    for (_local, digest, size), payload in zip(results, payloads, strict=True):
        assert (digest, size) == (sha(payload), len(payload))
    assert sorted(r.sha for r in up.received) == sorted(sha(p) for p in payloads)

    # Decoding: per connection and direction, what `ripple decode` prints for the same bytes.
    payload_of = {local: payloads[i] for i, (local, _d, _s) in enumerate(results)}
    groups = by_connection(tap.stdout().splitlines())
    assert len(groups) == 2 * 49  # both directions of every Ripple connection
    for label, lines in groups.items():
        payload = payload_of[_client_port(label, up.port)]
        assert lines == expected[sha(payload)], label
    garbage_port = results[17][0]
    assert not any(_client_port(label, up.port) == garbage_port for label in groups)

    # Problems: only the garbage connection's, on stderr as decode reports them.
    problems = [ln for ln in tap.stderr().splitlines() if ": error: " in ln or ": warning: " in ln]
    assert problems
    assert all(re.search(rf"127\.0\.0\.1:{garbage_port}\b", p) for p in problems), problems
    assert any(re.search(r": error: offset 0: bad magic", p) for p in problems)
    summary = tap.stderr().splitlines()[-1]
    assert "50 connections" in summary
    assert "0 messages not shown, 0 bytes not decoded" in summary


def test_plain_sexp_is_decode_s_lines_each_direction_in_turn(tmp_path: Path) -> None:
    """Plain `--format sexp` (where the codec's fast lane writes lines in
    blocks, when built): the request's lines, then the answer's, exactly
    as `ripple decode` prints them, and the counts in the summary."""
    request = ripple_stream(seed=21, size=3_000_000, big=400)
    answer = ripple_stream(seed=22, size=1_000_000, big=200)

    def upstream(conn: socket.socket, result: dict[str, object]) -> None:
        result["got"] = recv_all(conn)
        conn.sendall(answer)

    port, result = serve_once(upstream)
    with run_tap(_proxy_args(port, "--format", "sexp"), tmp_path) as tap:
        with socket.create_connection(("127.0.0.1", tap.port)) as c:
            c.sendall(request)
            c.shutdown(socket.SHUT_WR)
            assert recv_all(c) == answer
        wait_for(lambda: "done" in result, what="the upstream")
        assert result["got"] == request
        wait_idle(tap.proc.pid)
        assert tap.interrupt() == 130
    lines = decode_lines(request, tmp_path) + decode_lines(answer, tmp_path)
    assert tap.stdout().splitlines() == lines
    summary = tap.final_stderr().splitlines()[-1]
    assert (
        summary
        == f"ripple: tap: 1 connection, {len(lines)} messages, 0 problems; 0 messages not shown, 0 bytes not decoded"
    )


def test_table_in_a_pipe_has_decode_s_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--format table` in a pipe (the fast lane's table rows, when built):
    every message a row with decode's cells; the widths may differ (the tap
    shows its rows at every pause, each batch as wide as its cells)."""
    # Cells whole, in both.  (Set, then unset: GNU readline, once imported,
    # exports COLUMNS below Python's os.environ, where only unsetenv reaches.)
    monkeypatch.setenv("COLUMNS", "")
    monkeypatch.delenv("COLUMNS")
    request = ripple_stream(seed=23, size=1_000_000, big=100)

    def upstream(conn: socket.socket, result: dict[str, object]) -> None:
        result["got"] = recv_all(conn)

    port, result = serve_once(upstream)
    with run_tap(_proxy_args(port, "--format", "table"), tmp_path) as tap:
        with socket.create_connection(("127.0.0.1", tap.port)) as c:
            c.sendall(request)
            c.shutdown(socket.SHUT_WR)
            recv_all(c)
        wait_for(lambda: "got" in result, what="the upstream")
        assert result["got"] == request
        wait_idle(tap.proc.pid)
        assert tap.interrupt() == 130

    def cells(lines: list[bytes]) -> list[list[bytes]]:
        # without the header and its rules (one per batch: a table printed in pieces)
        return [ln.split() for ln in lines if not ln.startswith((b"offset", "─".encode()))]

    expected = cells(decode_lines(request, tmp_path, "--format", "table"))
    assert len(expected) > 1000
    assert cells(tap.stdout().splitlines()) == expected


def test_blocked_printer_never_stops_or_alters_traffic(tmp_path: Path) -> None:
    """stdout is a pipe nobody reads: the printer blocks at once, messages
    are dropped and counted, and the traffic goes on (the relay's speed
    beside socat's is measured by `make bench`, not here)."""
    up = EchoServer(seed=4)
    many = DEMO * 40  # 12,000 small messages each way: more than the print queue holds
    bulk = random.Random(5).randbytes(48 << 20)
    # --show-connection: a line per message (plain sexp would get the fast
    # lane's blocks of lines, which the queue's item bound does not reach).
    with run_tap(_proxy_args(up.port, "--show-connection"), tmp_path, stdout=subprocess.PIPE) as tap:
        assert exchange(tap.port, many, random.Random(7))[1:] == (sha(many), len(many))
        assert exchange(tap.port, bulk, random.Random(8), max_write=1 << 20)[1:] == (sha(bulk), len(bulk))
        # Everything received is decoded, and either waits for the blocked
        # printer or was dropped.  Only now is stdout read.
        wait_idle(tap.proc.pid)
        tap.proc.send_signal(signal.SIGINT)
        assert tap.proc.stdout is not None
        shown = tap.proc.stdout.read().count(b"\n")
        assert tap.proc.wait(30) == 130
    # No bound on the time it took: speed is the benchmark's business (make
    # bench), and a busy machine stretches any.  A relay that waited on the
    # blocked printer would never have finished the exchange above.
    summary = tap.final_stderr().splitlines()[-1]
    m = re.search(r"(\d+) messages not shown", summary)
    assert m is not None and int(m.group(1)) > 0, summary
    assert shown + int(m.group(1)) == 2 * 12_000, summary  # every message was either shown or counted


def test_sigterm_stops_the_tap_like_ctrl_c_with_its_summary_and_exit_143(tmp_path: Path) -> None:
    """kill, systemd and docker stop send SIGTERM: what was received is still
    shown, the summary follows, and the exit status says how it ended."""
    request = ripple_stream(seed=23, size=200_000, big=20)

    def upstream(conn: socket.socket, result: dict[str, object]) -> None:
        result["got"] = recv_all(conn)

    port, result = serve_once(upstream)
    with run_tap(_proxy_args(port, "--format", "sexp"), tmp_path) as tap:
        with socket.create_connection(("127.0.0.1", tap.port)) as c:
            c.sendall(request)
            c.shutdown(socket.SHUT_WR)
            recv_all(c)
        wait_for(lambda: "done" in result, what="the upstream")
        wait_idle(tap.proc.pid)
        tap.proc.send_signal(signal.SIGTERM)
        summary = tap.final_stderr().splitlines()[-1]
        assert tap.proc.returncode == 143
    lines = decode_lines(request, tmp_path)
    assert tap.stdout().splitlines() == lines
    assert (
        summary
        == f"ripple: tap: 1 connection, {len(lines)} messages, 0 problems; 0 messages not shown, 0 bytes not decoded"
    )


def test_kill_int_stops_a_tap_started_with_sigint_ignored(tmp_path: Path) -> None:
    """A shell script's background job (`ripple tap ... &`) starts with
    SIGINT ignored, as does anything a process that ignores it starts:
    `kill -INT` must still stop the tap as Ctrl-C does, exit 130."""
    request = ripple_stream(seed=29, size=20_000)

    def upstream(conn: socket.socket, result: dict[str, object]) -> None:
        result["got"] = recv_all(conn)

    port, result = serve_once(upstream)
    with ExitStack() as stack:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # inherited by the tap started here
        try:
            tap = stack.enter_context(run_tap(_proxy_args(port, "--format", "sexp"), tmp_path))
        finally:
            signal.signal(signal.SIGINT, previous)
        with socket.create_connection(("127.0.0.1", tap.port)) as c:
            c.sendall(request)
            c.shutdown(socket.SHUT_WR)
            recv_all(c)
        wait_for(lambda: "done" in result, what="the upstream")
        assert tap.interrupt() == 130
    assert tap.stdout().splitlines() == decode_lines(request, tmp_path)


def _exited(pid: int) -> bool:
    """Whether a child process has exited (a zombie until it is reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def test_a_second_ctrl_c_gives_up_what_is_left_to_show(tmp_path: Path) -> None:
    up = EchoServer(seed=5)
    with run_tap(_proxy_args(up.port), tmp_path, stdout=subprocess.PIPE) as tap:
        children = Path(f"/proc/{tap.proc.pid}/task/{tap.proc.pid}/children")
        if not children.exists():
            pytest.skip("this kernel does not list a process's children in /proc")
        (relay,) = map(int, children.read_text().split())
        exchange(tap.port, DEMO * 40, random.Random(1))
        wait_idle(tap.proc.pid)  # decoded; the printer is stuck on the full pipe
        tap.proc.send_signal(signal.SIGINT)
        # The first Ctrl-C has been handled once the tap has stopped its relay
        # (two signals sent at once could also arrive as one).
        wait_for(lambda: _exited(relay), timeout=30, what="the first Ctrl-C to stop the relay")
        assert tap.proc.poll() is None  # still waiting to show what it decoded
        tap.proc.send_signal(signal.SIGINT)
        assert tap.proc.wait(10) == 130
    summary = tap.final_stderr().splitlines()[-1]
    m = re.search(r"(\d+) messages not shown", summary)
    assert m is not None and int(m.group(1)) > 10_000, summary  # the queued ones count too


def test_a_relay_that_dies_ends_the_tap_with_a_problem(tmp_path: Path) -> None:
    up = EchoServer(seed=6)
    with run_tap(_proxy_args(up.port), tmp_path) as tap:
        children = Path(f"/proc/{tap.proc.pid}/task/{tap.proc.pid}/children")
        if not children.exists():
            pytest.skip("this kernel does not list a process's children in /proc")
        (relay,) = children.read_text().split()
        os.kill(int(relay), signal.SIGKILL)
        assert tap.proc.wait(30) == 1
    assert "error: the relay process ended unexpectedly (exit status -9)" in tap.final_stderr()


def _rst(s: socket.socket) -> None:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def _tap_to(upstream_port: int, tmp_path: Path) -> AbstractContextManager[TapRun]:
    return run_tap(_proxy_args(upstream_port, "--format", "json"), tmp_path)


def test_client_half_close_reaches_upstream_which_still_answers(tmp_path: Path) -> None:
    def upstream(conn: socket.socket, result: dict[str, object]) -> None:
        result["got"] = recv_all(conn)  # returns at the client's FIN
        conn.sendall(b"answer after your FIN")
        conn.close()

    port, result = serve_once(upstream)
    with _tap_to(port, tmp_path) as tap, socket.create_connection(("127.0.0.1", tap.port)) as c:
        c.sendall(b"question")
        c.shutdown(socket.SHUT_WR)
        c.settimeout(10)
        assert recv_all(c) == b"answer after your FIN"  # and then EOF: the upstream closed
        wait_for(lambda: "done" in result)
        assert result["got"] == b"question"


def test_upstream_close_reaches_client(tmp_path: Path) -> None:
    def upstream(conn: socket.socket, result: dict[str, object]) -> None:
        conn.sendall(b"bye")
        conn.shutdown(socket.SHUT_WR)
        result["got"] = recv_all(conn)  # the client still talks, then closes

    port, result = serve_once(upstream)
    with _tap_to(port, tmp_path) as tap, socket.create_connection(("127.0.0.1", tap.port)) as c:
        c.settimeout(10)
        assert recv_all(c) == b"bye"  # EOF seen by the client
        c.sendall(b"still here")
        c.shutdown(socket.SHUT_WR)
        wait_for(lambda: "done" in result)
        assert result["got"] == b"still here"


def test_client_reset_resets_upstream(tmp_path: Path) -> None:
    got_first = threading.Event()

    def upstream(conn: socket.socket, result: dict[str, object]) -> None:
        result["first"] = conn.recv(100)
        got_first.set()
        conn.settimeout(10)
        result["then"] = conn.recv(100)  # raises ConnectionResetError when the RST is passed on

    port, result = serve_once(upstream)
    with _tap_to(port, tmp_path) as tap:
        c = socket.create_connection(("127.0.0.1", tap.port))
        c.sendall(b"x")
        assert got_first.wait(10)
        _rst(c)
        wait_for(lambda: "done" in result)
    assert result["first"] == b"x"
    assert isinstance(result.get("error"), ConnectionResetError), result


def test_upstream_reset_resets_client(tmp_path: Path) -> None:
    got_y = threading.Event()

    def upstream(conn: socket.socket, result: dict[str, object]) -> None:
        result["first"] = conn.recv(100)
        conn.sendall(b"y")
        assert got_y.wait(30)  # reset only once the client has the byte sent before
        _rst(conn)

    port, result = serve_once(upstream)
    with _tap_to(port, tmp_path) as tap, socket.create_connection(("127.0.0.1", tap.port)) as c:
        c.settimeout(10)
        c.sendall(b"x")
        assert c.recv(100) == b"y"
        got_y.set()
        with pytest.raises(ConnectionResetError):
            c.recv(100)
        assert tap.interrupt() == 130
    assert result["first"] == b"x"
