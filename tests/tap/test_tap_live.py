"""The live view (`--format table` on a terminal), run in-process with an
injected terminal Environment, stopped by a real SIGINT."""

from __future__ import annotations

import io
import os
import random
import re
import signal
import threading
from pathlib import Path

from tapkit import DEMO, ROOT, EchoServer, exchange, wait_for

from ripple_cli.cli.main import main
from ripple_cli.terminal.environment import Environment


class _Stdout(io.BytesIO):
    def close(self) -> None:  # rich's wrapper may try; keep the bytes readable
        pass


def _run_in_process(args: list[str], drive: threading.Thread, err: io.StringIO, out: _Stdout) -> int:
    env = Environment(
        stdin=io.BytesIO(),
        stdout=out,
        stderr=err,
        stdout_isatty=True,
        stderr_isatty=True,
        environ={"NO_COLOR": "1"},
        width=160,
    )
    drive.start()
    try:
        main(args, env=env)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0
    finally:
        drive.join(60)
    return code


def test_live_view_shows_each_direction_and_a_final_summary_after_ctrl_c(tmp_path: Path) -> None:
    up = EchoServer(seed=10)
    out, err = _Stdout(), io.StringIO()
    running = threading.Event()
    mid_run: list[str] = []

    def drive() -> None:
        try:
            wait_for(lambda: "listening on" in err.getvalue(), what="the tap to listen")
            port = int(re.findall(r"listening on 127\.0\.0\.1:(\d+)", err.getvalue())[0])
            exchange(port, DEMO, random.Random(1))
            exchange(port, random.Random(2).randbytes(5000), random.Random(2))
            # The view redraws as it goes: wait for the last connection's
            # problems (the tap's threads yield the CPU, so no fixed delay).
            wait_for(lambda: "bad_magic" in out.getvalue().decode(), timeout=60, what="the view to show the problems")
            mid_run.append(out.getvalue().decode())
        finally:
            # Stop the tap whatever happened here: a failed wait must fail
            # the test, not leave the tap running forever.
            if running.is_set():  # never interrupt pytest itself, should the tap have ended early
                os.kill(os.getpid(), signal.SIGINT)

    # --nice 0: this test is about what the view shows, not about yielding
    # the CPU; at nice 19 busy processes beside it starve its decoding.
    args = ["tap", "--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{up.port}", "--nice", "0"]
    args += ["--schemas", str(ROOT / "examples" / "schemas"), "--schemas", str(ROOT / "examples" / "more-schemas")]
    running.set()
    try:
        code = _run_in_process(args, threading.Thread(target=drive), err, out)
    finally:
        running.clear()
    assert code == 130

    # While running: the live view, redrawn in place, with its counters and the latest messages.
    live = mid_run[0]
    assert "\x1b[" in live  # cursor movements: a live display, not a printed table
    assert "ripple tap: listening on 127.0.0.1:" in live
    for column in ("conn", "from -> to", "msgs", "types", "bytes", "seq", "delta#", "gaps", "heartbeat", "wm lag"):
        assert column in live
    assert "latest messages" in live
    assert "not shown: 0 messages    not decoded: 0 bytes" in live

    # After Ctrl-C: the final summary, left on the screen.
    final = out.getvalue().decode()
    summary = final[final.rindex("ripple tap stopped (interrupted)") :]
    rows = [ln for ln in summary.splitlines() if re.match(r"\d+ (c2s|s2c) ", ln)]
    assert len(rows) == 4  # two connections, two directions each
    demo_rows = [r.split() for r in rows if r.startswith("1 ")]
    for row in demo_rows:
        # conn, endpoints, state, 300 messages, by type..., bytes, seq 300, the last Delta, heartbeat age and load, lag
        assert row[:2] in (["1", "c2s"], ["1", "s2c"])
        assert "fin" in row and "300" in row and "292D" in row and "36.5K" in row
        # The watermark lag is arrival time minus the demo's 2024 watermarks: days, growing daily.
        assert "trades#88" in row and "0.50" in row, row
        assert any(re.fullmatch(r"\d+d", cell) for cell in row), row
    assert (
        summary.splitlines()[-1] == "2 connections, 600 messages, 2 problems; 0 messages not shown, 0 bytes not decoded"
    )
    assert "bad_magic" not in summary  # problems show among the latest messages, not in the summary
    assert "bad_magic" in live
    # The live view printed its own summary: stderr has only the status line.
    (status,) = err.getvalue().splitlines()
    assert re.fullmatch(rf"ripple: tap: listening on 127\.0\.0\.1:\d+, forwarding to 127\.0\.0\.1:{up.port}", status)
