"""`ripple tap`'s command line: modes, options shared with decode, limits,
errors and exit codes."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import subprocess
from pathlib import Path

import pytest
from tapkit import (
    DEMO,
    ROOT,
    EchoServer,
    by_connection,
    decode_lines,
    exchange,
    listener,
    ripple_cmd,
    run_tap,
    wait_for,
)

from ripple_cli.capture.events import StreamData
from ripple_cli.capture.reader import CaptureOptions, capture_events
from tests.conftest import run_cli


def _tap(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(ripple_cmd("tap", *args), capture_output=True, text=True, cwd=ROOT, check=False, timeout=60)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give --listen HOST:PORT and --upstream HOST:PORT (proxy), or -i IFACE (sniff)"),
        (["--listen", "127.0.0.1:0"], "give --listen HOST:PORT and --upstream"),
        (["--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1", "-i", "lo"], "-i sniffs; --listen and --upstream"),
        (["--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1", "--port", "9"], "-f and --port apply to sniffing"),
        (["--listen", "127.0.0.1:0", "--upstream", ":9"], "--upstream needs a host"),
        (["--listen", "nonsense", "--upstream", "127.0.0.1:1"], "'nonsense' is not HOST:PORT"),
        (["--listen", "::1:9000", "--upstream", "127.0.0.1:1"], "write an IPv6 address in brackets"),
        (["--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1", "-Y", "type =="], "-Y:"),
        # Options of the other mode: refused, not silently ignored.
        (
            ["--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1", "--max-flows", "5", "--reassembly-window", "1M"],
            "--max-flows and --reassembly-window apply to sniffing (-i), whose packets are reassembled; "
            "a proxy has --max-connections",
        ),
        (["-i", "lo", "--max-connections", "5"], "--max-connections applies to the proxy (--listen)"),
    ],
)
def test_usage_errors_are_exit_2(args: list[str], message: str) -> None:
    r = _tap(*args)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr


def test_a_port_in_use_is_one_line_and_exit_3() -> None:
    busy = listener()
    port = busy.getsockname()[1]
    r = _tap("--listen", f"127.0.0.1:{port}", "--upstream", "127.0.0.1:1")
    busy.close()
    assert r.returncode == 3
    assert r.stderr == f"ripple: tap: cannot listen on 127.0.0.1:{port}: Address already in use\n"


def test_help_names_both_modes() -> None:
    r = _tap("--help")
    assert r.returncode == 0
    for option in ("--listen", "--upstream", "--interface", "--bpf", "--write", "--rotate", "--max-connections"):
        assert option in r.stdout


def test_count_stops_after_n_messages_and_cuts_the_connections(tmp_path: Path) -> None:
    up = EchoServer(seed=11)
    with run_tap(["--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{up.port}", "-c", "5"], tmp_path) as tap:
        c = socket.create_connection(("127.0.0.1", tap.port))
        c.sendall(DEMO)  # no FIN: the tap ends the connection when it stops
        assert tap.proc.wait(30) == 0
        c.settimeout(10)
        with pytest.raises(ConnectionResetError):  # the relay cut the connection on its way out
            while c.recv(65536):
                pass
        c.close()
    assert tap.stdout().splitlines() == decode_lines(DEMO, tmp_path)[:5]


def test_selection_and_json_with_problems_in_line(tmp_path: Path) -> None:
    up = EchoServer(seed=12)
    args = ["--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{up.port}", "--format", "json"]
    with run_tap([*args, "--type", "Heartbeat", "-Y", "load > 0.5"], tmp_path) as tap:
        exchange(tap.port, DEMO, random.Random(1))
        exchange(tap.port, b"not ripple at all", random.Random(2))
        assert tap.interrupt() == 130
    doc = json.loads(tap.stdout())
    messages = [m for m in doc if "msg" in m]
    problems = [m for m in doc if "problem" in m]
    assert messages and all(m["type"] == "Heartbeat" and m["msg"]["load"] > 0.5 for m in messages)
    assert {(m["connection"], m["direction"]) for m in messages} == {(1, "c2s"), (1, "s2c")}
    assert all(m["source"] == "tap" and m["capture_time_ns"] > 0 for m in messages)
    assert {(p["connection"], p["direction"], p["problem"]["kind"]) for p in problems} == {
        (2, "c2s", "bad_magic"),
        (2, "s2c", "bad_magic"),
    }
    assert "ripple: tap: 2 connections" in tap.stderr()  # the summary; no problem lines: they are in the JSON


def test_max_connections_refuses_beyond_the_limit(tmp_path: Path) -> None:
    up = EchoServer(seed=13)
    args = ["--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{up.port}", "--max-connections", "2"]
    with run_tap(args, tmp_path) as tap:
        held = [socket.create_connection(("127.0.0.1", tap.port)) for _ in range(2)]
        for s in held:  # both proxied: they echo
            s.sendall(b"ping")
            s.settimeout(10)
            assert s.recv(10) == b"ping"
        extra = socket.create_connection(("127.0.0.1", tap.port))
        extra.settimeout(10)
        assert extra.recv(10) == b""  # closed at once
        extra.close()
        for s in held:
            s.shutdown(socket.SHUT_WR)
            assert s.recv(10) == b""  # the relay passed the end on, both ways
            s.close()
        wait_for(lambda: len(up.received) == 2, timeout=30, what="the upstream to see both connections end")

        def room_again() -> bool:
            # The relay frees a slot once it has closed both sides; until
            # then a new connection is refused (closed at once).
            with socket.create_connection(("127.0.0.1", tap.port)) as again:
                again.settimeout(10)
                try:
                    again.sendall(b"pong")
                    return again.recv(10) == b"pong"
                except OSError:  # reset: refused
                    return False

        wait_for(room_again, timeout=30, what="room for a connection once the others are closed")
        assert tap.interrupt() == 130
    assert "refused: 2 connections open (--max-connections)" in tap.stderr()
    assert "3 connections" in tap.stderr().splitlines()[-1]


def test_an_unreachable_upstream_closes_the_client_with_a_note(tmp_path: Path) -> None:
    dead = listener()
    port = dead.getsockname()[1]
    dead.close()
    with run_tap(["--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{port}"], tmp_path) as tap:
        c = socket.create_connection(("127.0.0.1", tap.port))
        c.settimeout(10)
        with pytest.raises(ConnectionResetError):
            c.recv(10)
        c.close()
        assert tap.interrupt() == 130
    assert f"upstream 127.0.0.1:{port} unreachable: Connection refused" in tap.stderr()
    # The note is a warning (ripple-tap(1)), counted as one, not as a problem.
    assert tap.stderr().splitlines()[-1] == (
        "ripple: tap: 0 connections, 0 messages, 0 problems, 1 warning; 0 messages not shown, 0 bytes not decoded"
    )


def test_an_upstream_name_that_does_not_resolve_stops_the_tap_at_once(tmp_path: Path) -> None:
    """.invalid never resolves (RFC 6761): exit status 3, one line, before
    anything listens."""
    r = run_cli(["tap", "--listen", "127.0.0.1:0", "--upstream", "nohost.invalid:9"])
    assert r.code == 3
    assert r.stderr.startswith("ripple: tap: cannot resolve the upstream nohost.invalid:9: ")
    assert len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="no IPv6 loopback")
def test_ipv6_proxy_and_its_capture(tmp_path: Path) -> None:
    srv = listener("::1")
    port = srv.getsockname()[1]

    def echo() -> None:
        conn, _ = srv.accept()
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    import threading

    threading.Thread(target=echo, daemon=True).start()
    cap = tmp_path / "v6.pcapng"
    args = ["--listen", "[::1]:0", "--upstream", f"[::1]:{port}", "--show-connection", "-w", str(cap)]
    with run_tap(args, tmp_path, ready="ripple: tap: listening on [::1]:") as tap:
        tap_port = int(tap.stderr().split("listening on [::1]:")[1].split(",")[0])
        with socket.create_connection(("::1", tap_port)) as c:
            c.sendall(DEMO)
            c.shutdown(socket.SHUT_WR)
            got = bytearray()
            while chunk := c.recv(65536):
                got += chunk
        assert got == DEMO
        assert tap.interrupt() == 130
    groups = by_connection(tap.stdout().splitlines())
    assert len(groups) == 2 and all("[::1]:" in label for label in groups)
    assert all(lines == decode_lines(DEMO, tmp_path) for lines in groups.values())
    with cap.open("rb") as f:
        data = b"".join(ev.data for ev in capture_events(f, "v6", CaptureOptions()) if isinstance(ev, StreamData))
    assert data == DEMO + DEMO


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="no IPv6 loopback")
def test_an_ipv6_client_of_an_ipv4_upstream_has_a_community_id(tmp_path: Path) -> None:
    """`--listen :PORT` takes IPv6 clients whatever the upstream's family:
    the JSON rows' Community ID is that of the recording's flow, the IPv4
    address IPv4-mapped (it was an internal error, exit 70, at the first
    such connection)."""
    srv = listener("127.0.0.1")
    port = srv.getsockname()[1]

    def sink() -> None:
        conn, _ = srv.accept()
        with conn:
            while conn.recv(65536):
                pass

    import threading

    threading.Thread(target=sink, daemon=True).start()
    cap = tmp_path / "mixed.pcapng"
    args = ["--listen", "[::1]:0", "--upstream", f"127.0.0.1:{port}", "-F", "jsonl", "-w", str(cap)]
    with run_tap(args, tmp_path, ready="ripple: tap: listening on [::1]:") as tap:
        tap_port = int(tap.stderr().split("listening on [::1]:")[1].split(",")[0])
        with socket.create_connection(("::1", tap_port)) as c:
            c.sendall(DEMO)
            c.shutdown(socket.SHUT_WR)
            c.recv(1)
        assert tap.interrupt() == 130
    live_rows = [json.loads(line) for line in tap.stdout().splitlines()]
    assert len([row for row in live_rows if "type" in row]) == 300
    ids = {row["community_id"] for row in live_rows}
    assert len(ids) == 1 and next(iter(ids)).startswith("1:")
    r = run_cli(["decode", "-F", "jsonl", str(cap)])
    assert {json.loads(line)["community_id"] for line in r.text.splitlines()} == ids


def _nice_of(pid: int, tid: int) -> int:
    fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[16])  # field 19 of proc(5)


def _policy_of(pid: int, tid: int) -> int:
    fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[38])  # field 41 of proc(5): SCHED_OTHER 0, SCHED_IDLE 5


@pytest.mark.parametrize(
    ("args", "expected", "policy"),
    [([], 19, os.SCHED_IDLE), (["--nice", "7"], 7, os.SCHED_OTHER), (["--nice", "0"], 0, os.SCHED_OTHER)],
)
def test_nice_lowers_the_tap_threads_and_never_the_relay(
    args: list[str], expected: int, policy: int, tmp_path: Path
) -> None:
    """The reader, decoder and printer threads run at --nice, and at the
    default 19 in SCHED_IDLE too (a proxy); the main thread (Ctrl-C) and
    the relay process (forwarding) keep the tap's own."""
    up = EchoServer(seed=13)
    tap_args = ["--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{up.port}", *args]
    with run_tap(tap_args, tmp_path, nice=None) as tap:  # args0: the tap's own default
        pid = tap.proc.pid
        exchange(tap.port, DEMO, random.Random(3))
        own = _nice_of(pid, pid)
        lowered = min(own + expected, 19)

        def settled() -> bool:  # each thread lowers itself as it starts: on a busy machine, a while after
            tids = [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir() if int(t.name) != pid]
            return len(tids) == 3 and all(_nice_of(pid, t) == lowered for t in tids)

        wait_for(settled, timeout=60, what="the tap's threads to lower themselves")
        tasks = sorted(int(t.name) for t in Path(f"/proc/{pid}/task").iterdir())
        nice = {tid: _nice_of(pid, tid) for tid in tasks}
        policies = {tid: _policy_of(pid, tid) for tid in tasks}
        (relay,) = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        relay_nice = _nice_of(int(relay), int(relay))
        relay_policy = _policy_of(int(relay), int(relay))
        assert tap.interrupt() == 130
    base = nice.pop(pid)  # the tap's own: 0, unless the tests themselves run niced
    assert sorted(nice.values()) == [min(base + expected, 19)] * 3
    assert relay_nice == base
    assert policies.pop(pid) == relay_policy == os.SCHED_OTHER
    assert sorted(policies.values()) == [policy] * 3
    up.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="leaving SCHED_IDLE needs CAP_SYS_NICE or RLIMIT_NICE room")
def test_ctrl_c_lifts_the_tap_threads_back_for_what_is_left_to_show(tmp_path: Path) -> None:
    """After Ctrl-C nothing is forwarded any more: the threads the tap
    lowered take back its own class and nice, so that a machine busy with
    other work does not hold up what is left to show (a SCHED_IDLE thread
    gets about a thousandth of a core beside busy ones).  The printer is
    held by a stdout pipe nobody reads until the threads have been looked at:
    both directions of the demo print more than the pipe holds."""
    up = EchoServer(seed=14)
    tap_args = ["--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{up.port}", "--format", "sexp"]
    with run_tap(tap_args, tmp_path, stdout=subprocess.PIPE, nice=None) as tap:
        pid = tap.proc.pid
        exchange(tap.port, DEMO, random.Random(3))

        def threads() -> dict[int, tuple[int, int]]:
            found = {}
            for t in Path(f"/proc/{pid}/task").iterdir():
                with contextlib.suppress(FileNotFoundError):  # a thread that has just ended
                    found[int(t.name)] = (_policy_of(pid, int(t.name)), _nice_of(pid, int(t.name)))
            return found

        base = threads()[pid]
        assert base[0] == os.SCHED_OTHER
        low = (os.SCHED_IDLE, min(base[1] + 19, 19))
        # Each thread lowers itself as it starts: on a busy machine, a while after.
        wait_for(lambda: sorted(threads().values()) == sorted([base, low, low, low]), timeout=60, what="lowering")
        tap.proc.send_signal(signal.SIGINT)  # without waiting: the printer cannot end yet
        wait_for(lambda: set(threads().values()) == {base}, what="the threads to be lifted back")
        assert len(threads()) >= 2  # the printer among them, still held by the pipe
        assert tap.proc.stdout is not None
        shown = tap.proc.stdout.read()
        assert tap.proc.wait(60) == 130
    demo = (ROOT / "examples" / "demo.sexp").read_bytes().splitlines()
    assert sorted(shown.splitlines()) == sorted(2 * demo)  # each direction's messages, whole
    up.close()
