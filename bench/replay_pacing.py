#!/usr/bin/env python3
"""How closely `ripple replay` keeps its schedule, at a few rates.

A sink on 127.0.0.1 (in this process) answers the Handshake and reads
everything; `ripple replay --format json` runs in its own process against
it, and its report gives the achieved rate and the scheduling lag (the
clock after each message's write returned, minus the message's target).
The source is examples/demo.ripple, looped as many times as a row needs.

    python bench/replay_pacing.py                  # about 20 s
    python bench/replay_pacing.py --seconds 5 --pps 1000 20000

Rows: --pps at each rate; --multiplier on the demo's own timing (bursty
event times); --renumber at the highest rate (its cost per message); and
--topspeed (no schedule: the throughput ceiling).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ripple_cli.codec.envelope import build_envelope  # noqa: E402
from ripple_cli.codec.messages import (  # noqa: E402
    FIXED_FINGERPRINTS,
    HANDSHAKE,
    SCHEMA_NEGOTIATION,
    DeltaMode,
    SchemaNegotiation,
    write_payload,
)
from ripple_cli.protocols.ripple.decoder import StreamDecoder  # noqa: E402
from ripple_cli.protocols.ripple.message import Message  # noqa: E402

DEMO = ROOT / "examples" / "demo.ripple"


def demo_facts() -> tuple[int, float]:
    """(messages after the Handshake, their span in seconds of event time)."""
    events = StreamDecoder(None, DeltaMode.RAW).feed(DEMO.read_bytes())
    times = [e.frame.time_ns for e in events if isinstance(e, Message)][1:]
    return len(times), (max(times) - times[0]) / 1e9


class Sink:
    """Accepts connections one after another; answers each Handshake with
    ok true and reads to the end, as fast as it can."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        answer = build_envelope(
            SCHEMA_NEGOTIATION,
            1,
            time.time_ns(),
            FIXED_FINGERPRINTS[SCHEMA_NEGOTIATION],
            write_payload(SchemaNegotiation(True, ())),
        )
        while True:
            conn, _ = self.listener.accept()
            with conn:
                decoder: StreamDecoder | None = StreamDecoder(None, DeltaMode.RAW)
                while data := conn.recv(1 << 20):
                    if decoder is None:
                        continue  # answered: the rest is only drained
                    for ev in decoder.feed(data):
                        if isinstance(ev, Message) and ev.frame.tag == HANDSHAKE:
                            conn.sendall(answer)
                            decoder = None
                            break


def run(sink: Sink, args: list[str]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "ripple_cli", "replay", str(DEMO), "--to", sink.address, "--format", "json", *args]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr}")
    report: dict[str, Any] = json.loads(r.stdout)
    return report


def machine() -> str:
    cpu = platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}, load average {load}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=2.0, help="scheduled length of each paced row")
    ap.add_argument("--pps", type=float, nargs="+", default=[100, 1000, 5000, 20000, 50000], help="rates to try")
    ap.add_argument("--multipliers", type=float, nargs="+", default=[10, 50], help="--multiplier rows")
    args = ap.parse_args()

    header = machine()  # before the runs: the load average is the machine's, not ours
    per_pass, span = demo_facts()
    sink = Sink()
    rows: list[tuple[str, float | None, dict[str, Any]]] = []

    def paced(label: str, messages: int, target_rate: float | None, extra: list[str]) -> None:
        loops = max(1, math.ceil(messages / per_pass))
        report = run(sink, [*extra, "--loop", str(loops), "--limit", str(messages + 1)])
        rows.append((label, target_rate, report))
        print(f"  done: {label}", file=sys.stderr, flush=True)

    for rate in args.pps:
        paced(f"--pps {rate:g}", max(10, int(rate * args.seconds)), rate, ["--pps", f"{rate:g}"])
    top = max(args.pps)
    paced(f"--pps {top:g} --renumber", max(10, int(top * args.seconds)), top, ["--pps", f"{top:g}", "--renumber"])
    for mult in args.multipliers:
        # The demo's event times: bursts and pauses, about per_pass / span msgs/s at x1.
        seconds_per_pass = span / mult
        passes = max(1, round(args.seconds / seconds_per_pass))
        rate = per_pass / seconds_per_pass
        paced(f"--multiplier {mult:g}", passes * per_pass, rate, ["--multiplier", f"{mult:g}"])
    paced("--topspeed", 100 * per_pass, None, ["--topspeed"])

    print(f"replay pacing: {header}; source {DEMO.name} looped; sink on 127.0.0.1")
    print()
    head = f"{'mode':28} {'messages':>9} {'elapsed s':>9} {'target/s':>10} {'achieved/s':>11} {'MB/s':>7}"
    print(head + f" {'lag p50 ms':>10} {'p99 ms':>8} {'max ms':>8}")
    for label, target, rep in rows:
        lag = rep["lag_ms"] or {}
        tgt = f"{target:10,.0f}" if target else f"{'-':>10}"
        cells = [f"{lag[k]:>8.3f}" if k in lag else f"{'-':>8}" for k in ("p50", "p99", "max")]
        print(
            f"{label:28} {rep['messages']:9,} {rep['elapsed_s']:9.3f} {tgt} {rep['rate']['msgs_per_s']:11,.0f}"
            f" {rep['rate']['mb_per_s']:7.2f}   {cells[0]} {cells[1]} {cells[2]}"
        )
    print()
    print("lag: clock after the write returned minus the message's target (absolute schedule, no drift)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
