"""Item 2 of issue 15: a failure on the tap's decoding side never costs the
traffic.  The tap (where decoding runs) is killed mid-traffic; the relay
process forwards the connections already open, byte for byte, until they
close, then ends; it takes no new ones, as nobody watches them any more."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from ripple_cli.tap.relay import c_loop
from tests.conftest import EXAMPLES
from tests.tap.tapkit import EchoServer, recv_all, run_tap

DEMO = (EXAMPLES / "demo.ripple").read_bytes()


def _lane_env(lane: str) -> dict[str, str]:
    if lane == "c" and c_loop() is None:
        pytest.skip("the C relay loop is not built here")
    return {"RIPPLE_PURE": "1" if lane == "asyncio" else "0"}


def _recv_exactly(s: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = s.recv(min(1 << 16, n - len(out)))
        assert chunk, f"the connection closed after {len(out)} of {n} bytes"
        out += chunk
    return bytes(out)


def _relay_pid(tap_pid: int) -> int:
    children = Path(f"/proc/{tap_pid}/task/{tap_pid}/children")
    if not children.exists():
        pytest.skip("this kernel does not list a process's children in /proc")
    (relay,) = children.read_text().split()
    return int(relay)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().split(") ", 1)[1].startswith("Z")


def _wait(cond, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 30
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


@pytest.mark.parametrize("lane", ["c", "asyncio"])
def test_killing_the_decoding_side_costs_no_traffic(tmp_path: Path, lane: str) -> None:
    up = EchoServer(seed=15)
    rest = random.Random(15).randbytes(3 << 20)
    with run_tap(
        ["--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{up.port}"], tmp_path, env=_lane_env(lane)
    ) as tap:
        relay = _relay_pid(tap.proc.pid)
        client = socket.create_connection(("127.0.0.1", tap.port))
        client.sendall(DEMO)
        assert _recv_exactly(client, len(DEMO)) == DEMO
        tap.proc.send_signal(signal.SIGKILL)  # the decoder, the printer, the whole tap
        assert tap.proc.wait(30) == -signal.SIGKILL
        # The connection already open is still forwarded, both ways, in full.
        sender = threading.Thread(target=lambda: (client.sendall(rest), client.shutdown(socket.SHUT_WR)))
        sender.start()
        echoed = recv_all(client)
        sender.join(30)
        client.close()
    assert echoed == rest
    _wait(lambda: len(up.received) == 1, "the upstream's end of the connection")
    assert up.received[0].size == len(DEMO) + len(rest)
    assert up.received[0].sha == hashlib.sha256(DEMO + rest).hexdigest()
    # Its connections done, the orphaned relay ends; meanwhile it took no new ones.
    _wait(lambda: _gone(relay), "the orphaned relay to end")
    assert _refused(tap.port)
    up.close()


@pytest.mark.parametrize("lane", ["c", "asyncio"])
def test_an_orphaned_relay_takes_no_new_connection(tmp_path: Path, lane: str) -> None:
    up = EchoServer(seed=16)
    with run_tap(
        ["--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{up.port}"], tmp_path, env=_lane_env(lane)
    ) as tap:
        relay = _relay_pid(tap.proc.pid)
        held = socket.create_connection(("127.0.0.1", tap.port))
        held.sendall(b"x")
        assert _recv_exactly(held, 1) == b"x"
        tap.proc.send_signal(signal.SIGKILL)
        tap.proc.wait(30)
        _wait(lambda: _refused(tap.port), "the relay to stop listening")
        assert not _gone(relay)  # still forwarding the held connection
        held.sendall(b"yz")
        assert _recv_exactly(held, 2) == b"yz"
        held.shutdown(socket.SHUT_WR)
        assert recv_all(held) == b""
        held.close()
    _wait(lambda: _gone(relay), "the orphaned relay to end")
    up.close()
