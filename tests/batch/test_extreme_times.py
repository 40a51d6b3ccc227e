"""Times at the ends of 64 bits in export and stats (in-process, no Spark):
a capture stamped past 2^63 ns, Heartbeats 2^63 ns apart, a watermark at
-2^63.  Each once ended in an internal error (found by fuzzing); the rows
are written, with a null where a value does not fit int64."""

from __future__ import annotations

import csv
import socket
from pathlib import Path

import dpkt  # type: ignore[import-untyped, unused-ignore]

from tests.conftest import EXAMPLES, run_cli
from tests.replay.pcap import _frame

DEMO = (EXAMPLES / "demo.ripple").read_bytes()
MAX_US = (1 << 63) // 1000  # the last microsecond whose nanoseconds fit int64


def _capture_at(path: Path, ts_us: int) -> Path:
    """The demo in one packet of a pcapng (microsecond stamps) stamped ts_us."""
    frame = _frame(socket.inet_aton("10.0.0.1"), socket.inet_aton("10.0.0.2"), 50000, 9000, 1, 1, 0x18, DEMO)
    epb = dpkt.pcapng.EnhancedPacketBlockLE(
        ts_high=ts_us >> 32, ts_low=ts_us & 0xFFFFFFFF, caplen=len(frame), pkt_len=len(frame), pkt_data=frame
    )
    with path.open("wb") as f:
        dpkt.pcapng.Writer(f, snaplen=65535, linktype=dpkt.pcap.DLT_EN10MB).writepkt(epb)
    return path


def _encoded(tmp_path: Path, lines: list[bytes]) -> Path:
    path = tmp_path / "stream.ripple"
    r = run_cli(["encode", "-o", str(path)], stdin=b"".join(line + b"\n" for line in lines))
    assert r.code == 0, r.stderr
    return path


def _capture_times(out: Path) -> set[str]:
    rows = [row for part in sorted(out.glob("*.csv")) for row in csv.DictReader(part.open())]
    assert len(rows) == 300  # every message has its row
    return {row["capture_time_ns"] for row in rows}


def test_a_capture_time_past_int64_is_null(tmp_path: Path) -> None:
    for ts_us, shown in ((MAX_US, str(MAX_US * 1000)), (MAX_US + 1, "")):
        pcap = _capture_at(tmp_path / f"at-{ts_us}.pcapng", ts_us)
        out = tmp_path / f"out-{ts_us}"
        r = run_cli(["export", "-q", "-F", "csv", "-o", str(out), str(pcap)])
        assert r.code == 0, r.stderr
        assert _capture_times(out) == {shown}
        r = run_cli(["stats", "-q", "-F", "json", str(pcap)])
        assert (r.code, r.stderr) == (0, "")


def test_heartbeats_2_63_ns_apart(tmp_path: Path) -> None:
    """The silence between them is 2^63 - 1 ns; Spark's percentile comes back
    through a double, whose toLong clamps: the same here."""
    beat = b"((seq %d)(time_ns %d)(schema ripple.heartbeat/v1)(msg(Heartbeat((worker_id w1)(timestamp_ns 1)(load 1)))))"
    stream = _encoded(tmp_path, [beat % (1, 0), beat % (2, (1 << 63) - 1)])
    r = run_cli(["stats", "-q", "-F", "json", str(stream)])
    assert (r.code, r.stderr) == (0, "")
    assert str((1 << 63) - 1).encode() in r.stdout


def test_a_watermark_at_int64_min_plots(tmp_path: Path) -> None:
    """Its lag does not fit 64 bits (null in SQL): the plot leaves it out."""
    handshake = next(line for line in (EXAMPLES / "demo.sexp").read_bytes().splitlines() if b"Handshake" in line)
    delta = (
        b"((seq 2)(time_ns 1)(schema vwap/v2)(msg(Delta((source_output vwap)(key AAPL)"
        b"(delta(Patch((Price 1.5))))(sequence_no 1)(watermark_ns(-9223372036854775808))))))"
    )
    stream = _encoded(tmp_path, [handshake, delta])
    r = run_cli(["stats", "-q", "--plot", str(tmp_path / "plots"), str(stream)])
    assert (r.code, r.stderr) == (0, "")
    assert (tmp_path / "plots" / "watermark_lag.svg").exists()
