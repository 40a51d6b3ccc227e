"""Items 1, 2 and 5 of issue 15 through a live tap: a bomb sent through the
proxy costs decoding a problem line, never traffic or memory.  The bytes
reach the upstream and come back intact, the tap reports the message it
refused in one line and goes on decoding the next connection, and its
decoding process stays far under 512 MB."""

from __future__ import annotations

import hashlib
import re
import socket
import threading
from pathlib import Path

import pytest

from ripple_cli.tap.relay import c_loop
from tests.conftest import EXAMPLES
from tests.hostile.bombs import many_schemas, nested_list_bomb
from tests.tap.tapkit import EchoServer, recv_all, run_tap, wait_for

DEMO = (EXAMPLES / "demo.ripple").read_bytes()
RSS_LIMIT_KB = 512 << 10


def _through(port: int, data: bytes) -> bytes:
    """`data` sent through the tap, and what comes back, to the end."""
    with socket.create_connection(("127.0.0.1", port)) as c:
        sender = threading.Thread(target=lambda: (c.sendall(data), c.shutdown(socket.SHUT_WR)))
        sender.start()
        back = recv_all(c)
        sender.join(60)
    return back


def _peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


@pytest.mark.parametrize("lane", ["c", "asyncio"])
def test_bombs_through_a_live_tap(tmp_path: Path, lane: str) -> None:
    if lane == "c" and c_loop() is None:
        pytest.skip("the C relay loop is not built here")
    env = {"RIPPLE_PURE": "1" if lane == "asyncio" else "0"}
    up = EchoServer(seed=21)
    bombs = [nested_list_bomb(64 << 10), many_schemas(20_000)]
    with run_tap(["--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{up.port}"], tmp_path, env=env) as tap:
        for bomb in bombs:
            assert _through(tap.port, bomb) == bomb
        assert _through(tap.port, DEMO) == DEMO
        wait_for(lambda: tap.stdout().count(b"\n") >= 300 + 2, 120, "the tap to show the demo's messages")
        peak = _peak_rss_kb(tap.proc.pid)
        code = tap.interrupt()
    err = tap.stderr()
    assert peak < RSS_LIMIT_KB, f"the tap's decoding process peaked at {peak >> 10} MB"
    refused = (
        "error: offset 87: Delta does not decode with schema bomb/v1: list of 65531 empty elements over the"
        " decode budget (7 of 65541 left) at byte 7"
    )
    lines = [re.sub(r"127\.0\.0\.1:\d+", "ADDR", line) for line in err.splitlines()[1:]]
    assert lines == [
        f"ripple: tap: 1 ADDR -> ADDR: {refused}",  # the bomb, on its way up
        f"ripple: tap: 1 ADDR -> ADDR: {refused}",  # and echoed back
        "ripple: tap: 3 connections, 608 messages, 2 problems; 0 messages not shown, 0 bytes not decoded",
    ]
    wait_for(lambda: len(up.received) == 3, 30, "the upstream's three connections")
    assert sorted(r.sha for r in up.received) == sorted(hashlib.sha256(b).hexdigest() for b in [*bombs, DEMO])
    assert code == 130  # Ctrl-C, whatever was seen (ripple-tap(1))
    up.close()
