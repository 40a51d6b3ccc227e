"""`ripple replay` against a consumer on a real socket (127.0.0.1).

Timing is checked only with generous bounds (at least 80% of the scheduled
duration, well under ten times it); pacing accuracy is measured by
bench/replay_pacing.py, not asserted here.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ripple_cli.codec.envelope import HEADER_SIZE, frame_bytes
from ripple_cli.codec.messages import DELTA, HANDSHAKE, DeltaMode, DeltaMsg
from ripple_cli.protocols.ripple.decoder import StreamDecoder
from ripple_cli.protocols.ripple.message import Message
from tests.conftest import EXAMPLES, ROOT, Result, run_cli
from tests.replay.consumer import Behaviour, Consumer, connect_and_serve, negotiation
from tests.replay.pcap import Connection, build_pcap

DEMO_PATH = EXAMPLES / "demo.ripple"
DEMO = DEMO_PATH.read_bytes()


def envelopes(data: bytes) -> list[Message]:
    return [e for e in StreamDecoder(None, DeltaMode.RAW).feed(data) if isinstance(e, Message)]


SOURCE = envelopes(DEMO)
SOURCE_BYTES = [frame_bytes(m.frame) for m in SOURCE]


def replay(consumer: Consumer, *args: str, source: str = str(DEMO_PATH), stdin: bytes = b"") -> Result:
    return run_cli(["replay", source, "--to", consumer.address, *args], stdin=stdin)


def ripple_process(*args: str) -> subprocess.Popen[str]:
    """The real program in its own process: for signals and --listen."""
    return subprocess.Popen(
        [sys.executable, "-m", "ripple_cli", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )


def scheduled_span(multiplier: float) -> float:
    """Seconds from the first message after the Handshake to the last, at x`multiplier`."""
    times = [m.frame.time_ns for m in SOURCE[1:]]
    return (max(times) - times[0]) / 1e9 / multiplier


# ------------------------------------------------------------------ fidelity


def test_every_message_arrives_in_order_byte_identical() -> None:
    with Consumer() as c:
        r = replay(c, "--topspeed")
    assert r.code == 0, r.stderr
    got = c.received[0]
    assert got.envelopes == SOURCE_BYTES
    assert b"".join(got.envelopes) == DEMO
    assert got.problems == []
    assert "replay: 300 messages, 37,372 bytes to " in r.stderr


def test_renumber_across_two_loops() -> None:
    with Consumer() as c:
        r = replay(c, "--topspeed", "--renumber", "--loop", "2")
    assert r.code == 0, r.stderr
    got = [envelopes(e)[0] for e in c.received[0].envelopes]
    expected = SOURCE + SOURCE[1:]
    assert len(got) == len(expected) == 1 + 2 * 299
    assert [m.frame.seq for m in got] == list(range(1, len(got) + 1))
    per_output: dict[bytes, list[int]] = {}
    for new, old in zip(got, expected, strict=True):
        f, g = old.frame, new.frame
        assert (g.tag, g.flags, g.time_ns, g.fingerprint) == (f.tag, f.flags, f.time_ns, f.fingerprint)
        if f.tag != DELTA:
            assert g.payload == f.payload
            continue
        a, b = old.body, new.body
        assert isinstance(a, DeltaMsg) and isinstance(b, DeltaMsg)
        assert (b.source_output, b.key, b.delta_bytes, b.watermark_ns) == (
            a.source_output,
            a.key,
            a.delta_bytes,
            a.watermark_ns,
        )
        per_output.setdefault(b.source_output, []).append(b.sequence_no)
    # Each output numbered 1..n over both passes: the second pass continues.
    for numbers in per_output.values():
        assert numbers == list(range(1, len(numbers) + 1))
    deltas_per_pass = sum(1 for m in SOURCE if m.frame.tag == DELTA)
    assert sum(len(n) for n in per_output.values()) == 2 * deltas_per_pass


def test_loop_without_renumber_repeats_the_bytes() -> None:
    with Consumer() as c:
        r = replay(c, "--topspeed", "--loop", "3")
    assert r.code == 0, r.stderr
    assert c.received[0].envelopes == SOURCE_BYTES[:1] + SOURCE_BYTES[1:] * 3


def test_limit_counts_every_message_sent() -> None:
    with Consumer() as c:
        r = replay(c, "--topspeed", "--limit", "50", "--loop", "4")
    assert r.code == 0, r.stderr
    assert c.received[0].envelopes == SOURCE_BYTES[:50]
    assert "replay: 50 messages" in r.stderr


def test_limit_across_loops() -> None:
    with Consumer() as c:
        r = replay(c, "--topspeed", "--limit", "400", "--loop", "4")
    assert r.code == 0, r.stderr
    assert c.received[0].envelopes == (SOURCE_BYTES[:1] + SOURCE_BYTES[1:] * 2)[:400]


def test_stdin_source() -> None:
    with Consumer() as c:
        r = replay(c, "-t", source="-", stdin=DEMO)
    assert r.code == 0, r.stderr
    assert c.received[0].envelopes == SOURCE_BYTES


def test_damaged_envelopes_are_skipped_and_reported(tmp_path: Path) -> None:
    # Envelope 5's CRC broken, garbage between envelopes 10 and 11, a
    # truncated envelope at the end.
    parts = list(SOURCE_BYTES)
    bad = bytearray(parts[4])
    bad[-1] ^= 0xFF
    parts[4] = bytes(bad)
    parts[10] = b"garbage!" + parts[10]
    damaged = b"".join(parts) + SOURCE_BYTES[7][:40]
    path = tmp_path / "damaged.ripple"
    path.write_bytes(damaged)
    with Consumer() as c:
        r = replay(c, "-t", source=str(path))
    assert r.code == 1
    assert c.received[0].envelopes == SOURCE_BYTES[:4] + SOURCE_BYTES[5:]
    lines = r.stderr.splitlines()
    assert any("error: offset" in line and "CRC mismatch" in line for line in lines)
    assert any("bad magic" in line for line in lines)
    assert any("stream ends inside an envelope" in line for line in lines)
    assert "skipped: 3 problem(s) in the source" in r.stderr


def test_source_without_a_handshake_first(tmp_path: Path) -> None:
    path = tmp_path / "no-handshake.ripple"
    path.write_bytes(b"".join(SOURCE_BYTES[2:]))
    with Consumer() as c:
        r = replay(c, "-t", source=str(path))
        # Nothing was sent: let the consumer's accept finish.
        socket.create_connection(("127.0.0.1", c.port)).close()
    assert r.code == 1
    assert "starts with a Delta (seq 3), not a Handshake" in r.stderr


# ------------------------------------------------------------------ the peer


def test_negotiation_refused_prints_the_errors() -> None:
    how = Behaviour(ok=False, errors=("missing field price", "vwap/v2: incompatible"))
    with Consumer(how=how) as c:
        r = replay(c, "-t")
    assert r.code == 1
    assert r.stderr.splitlines() == [
        f"ripple: {c.address} refused the Handshake (Schema_negotiation ok false):",
        "  missing field price",
        "  vwap/v2: incompatible",
    ]
    assert c.received[0].envelopes == SOURCE_BYTES[:1]


def test_no_answer_times_out() -> None:
    with Consumer(how=Behaviour(answer=False)) as c:
        started = time.monotonic()
        r = replay(c, "-t", "--handshake-timeout", "0.3")
    assert r.code == 1
    assert r.stderr == f"ripple: no Schema_negotiation from {c.address} within 0.3 s of the Handshake\n"
    assert time.monotonic() - started < 5


def test_connection_refused_is_exit_3_once_the_timeout_has_passed() -> None:
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]
    r = run_cli(["replay", str(DEMO_PATH), "--to", f"127.0.0.1:{port}", "--handshake-timeout", "0.3"])
    assert r.code == 3
    assert r.stderr == f"ripple: cannot connect to 127.0.0.1:{port}: connection refused (for 0.3 s)\n"


def test_the_json_report_comes_after_a_refusal_or_a_failed_connection_too() -> None:
    """-F json: one object on stdout whatever the end, `stopped` saying why
    (it was an empty stdout), beside the same line on stderr."""
    with Consumer(how=Behaviour(ok=False, errors=("no",))) as c:
        r = replay(c, "-t", "-F", "json")
    assert r.code == 1
    doc = json.loads(r.stdout)
    assert (doc["messages"], doc["complete"]) == (1, False)
    assert doc["stopped"] == "schemas refused"
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]
    r = run_cli(["replay", str(DEMO_PATH), "--to", f"127.0.0.1:{port}", "--handshake-timeout", "0.3", "-F", "json"])
    assert r.code == 3
    doc = json.loads(r.stdout)
    assert (doc["connections"], doc["messages"], doc["complete"]) == (0, 0, False)
    assert doc["stopped"] == f"cannot connect to 127.0.0.1:{port}: connection refused (for 0.3 s)"
    assert r.stderr == f"ripple: {doc['stopped']}\n"


def test_a_consumer_that_starts_listening_late_is_waited_for() -> None:
    """A consumer started beside the replay refuses until it listens: the
    replay tries again until --handshake-timeout."""
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]
    proc = ripple_process(
        "replay", str(DEMO_PATH), "--to", f"127.0.0.1:{port}", "--handshake", "none", "-t", "-F", "json"
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # refused for a second: now the consumer starts
        assert line == f"ripple: 127.0.0.1:{port} refuses connections: trying again for up to 10 s\n"
        with socket.create_server(("127.0.0.1", port)) as srv:
            srv.settimeout(30)
            conn, _ = srv.accept()
            with conn:
                got = recv_all(conn)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert got == DEMO
    assert json.loads(out)["messages"] == 300


def recv_all(conn: socket.socket) -> bytes:
    chunks = []
    while chunk := conn.recv(1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def test_peer_closing_mid_replay_is_exit_1_with_the_count() -> None:
    with Consumer(how=Behaviour(close_after=20)) as c:
        r = replay(c, "--multiplier", "20")
    assert r.code == 1
    last = r.stderr.splitlines()[-1]
    m = re.fullmatch(rf"ripple: {c.address} closed the connection after (\d+) messages had been sent.*", last)
    assert m, r.stderr
    assert 20 <= int(m.group(1)) < 300
    assert "replay: " in r.stderr  # the report of what was sent


# ------------------------------------------------------------------ pacing


def test_pps_count_and_duration() -> None:
    with Consumer() as c:
        r = replay(c, "--pps", "200", "--limit", "101", "--format", "json")
    assert r.code == 0, r.stderr
    report = json.loads(r.stdout)
    scheduled = 99 / 200  # 100 messages after the Handshake, the first at once
    assert report["messages"] == 101 == len(c.received[0].envelopes)
    assert scheduled * 0.8 <= report["elapsed_s"] < scheduled * 10
    assert scheduled * 0.8 <= c.received[0].duration < scheduled * 10
    assert set(report["lag_ms"]) == {"p50", "p99", "max"}


def test_multiplier_follows_envelope_time() -> None:
    multiplier = 40.0
    with Consumer() as c:
        r = replay(c, "--multiplier", str(multiplier))
    assert r.code == 0, r.stderr
    scheduled = scheduled_span(multiplier)
    assert len(c.received[0].envelopes) == 300
    assert scheduled * 0.8 <= c.received[0].duration < scheduled * 10
    assert "lag:  p50 " in r.stderr


def test_maxsleep_caps_the_waits() -> None:
    # At x1 the first 60 messages span about 4 s; each wait capped at 2 ms.
    uncapped = (SOURCE[59].frame.time_ns - SOURCE[1].frame.time_ns) / 1e9
    assert uncapped > 3
    with Consumer() as c:
        r = replay(c, "--maxsleep", "2", "--limit", "60", "--format", "json")
    assert r.code == 0, r.stderr
    assert len(c.received[0].envelopes) == 60
    assert json.loads(r.stdout)["elapsed_s"] < 1.5


def test_json_report_topspeed() -> None:
    with Consumer() as c:
        r = replay(c, "-t", "--format", "json")
    assert r.code == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["messages"] == 300 and report["bytes"] == len(DEMO) and report["connections"] == 1
    assert report["lag_ms"] is None and report["complete"] is True and report["skipped"] == 0
    assert report["rate"]["msgs_per_s"] > 0 and report["peer"] == c.address
    assert r.stderr == ""


def _interrupted_replay(
    c: Consumer, sigint_ignored: bool = False, signum: int = signal.SIGINT
) -> subprocess.Popen[str]:
    """A replay into `c`, sent SIGINT once the Handshake is answered and
    messages flow (at x1 the demo lasts 20 s); started with SIGINT ignored
    when asked (a shell script's background job starts so)."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if sigint_ignored else None
    try:
        proc = ripple_process("replay", str(DEMO_PATH), "--to", c.address)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    deadline = time.monotonic() + 30
    while len(c.received[0].envelopes) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signum)
    return proc


def test_ctrl_c_stops_with_the_report() -> None:
    with Consumer() as c:
        proc = _interrupted_replay(c)
        _out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert "(interrupted)" in err and "Traceback" not in err
    m = re.search(r"replay: (\d+) messages", err)
    assert m and 1 <= int(m.group(1)) < 300
    assert c.received[0].envelopes == SOURCE_BYTES[: len(c.received[0].envelopes)]


def test_kill_int_stops_a_replay_started_with_sigint_ignored() -> None:
    """`kill -INT` stops a replay that started with SIGINT ignored as
    Ctrl-C does, with its report and exit 130 (terminal/interrupts.py)."""
    with Consumer() as c:
        proc = _interrupted_replay(c, sigint_ignored=True)
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "(interrupted)" in err and "Traceback" not in err


def test_sigterm_stops_with_the_report_and_143() -> None:
    """kill (SIGTERM) stops a replay as Ctrl-C does, with its report; exit
    143 (ripple-replay(1))."""
    with Consumer() as c:
        proc = _interrupted_replay(c, signum=signal.SIGTERM)
        _out, err = proc.communicate(timeout=20)
    assert proc.returncode == 143, err
    assert "(interrupted)" in err and "Traceback" not in err
    assert c.received[0].envelopes == SOURCE_BYTES[: len(c.received[0].envelopes)]


# ------------------------------------------------------------------ --listen


def test_listen_serves_a_consumer_that_connects() -> None:
    proc = ripple_process("replay", str(DEMO_PATH), "--listen", "127.0.0.1:0", "-t", "--format", "json")
    assert proc.stderr is not None
    line = proc.stderr.readline()
    m = re.fullmatch(r"ripple: listening on 127\.0\.0\.1:(\d+): waiting for a consumer\n", line)
    assert m, line
    got = connect_and_serve(int(m.group(1)))
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert got.envelopes == SOURCE_BYTES
    report = json.loads(out)
    assert report["messages"] == 300
    # The listening address is ours: `listen`; the consumer that came is the peer.
    assert report["listen"] == f"127.0.0.1:{m.group(1)}" and "peer" not in report
    assert len(report["peers"]) == 1 and re.fullmatch(r"127\.0\.0\.1:\d+", report["peers"][0])
    assert report["peers"][0] != report["listen"]


# ------------------------------------------------------------------ captures


def two_connection_capture(tmp_path: Path, gap_s: float = 0.01) -> Path:
    answer = negotiation(True)
    pcap = build_pcap(
        [Connection(DEMO, answer), Connection(b"".join(SOURCE_BYTES[:40]), answer, client_port=40001)], gap_s=gap_s
    )
    path = tmp_path / "two.pcap"
    path.write_bytes(pcap)
    return path


def test_capture_each_client_direction_on_its_own_connection(tmp_path: Path) -> None:
    path = two_connection_capture(tmp_path)
    with Consumer(connections=2) as c:
        r = replay(c, "-t", source=str(path))
    assert r.code == 0, r.stderr
    assert c.received[0].envelopes == SOURCE_BYTES
    assert c.received[1].envelopes == SOURCE_BYTES[:40]
    assert "(2 connections)" in r.stderr


def test_capture_stream_picks_one(tmp_path: Path) -> None:
    path = two_connection_capture(tmp_path)
    with Consumer() as c:
        r = replay(c, "-t", "--stream", "2", source=str(path))
    assert r.code == 0, r.stderr
    assert c.received[0].envelopes == SOURCE_BYTES[:40]


def test_capture_other_connections_are_left_out(tmp_path: Path) -> None:
    http = b"GET / HTTP/1.1\r\nHost: example\r\n\r\n" * 40
    pcap = build_pcap(
        [
            Connection(http, b"HTTP/1.1 200 OK\r\n\r\n", client_port=40002, server_port=80),
            Connection(DEMO, negotiation(True)),
        ]
    )
    path = tmp_path / "mixed.pcap"
    path.write_bytes(pcap)
    with Consumer() as c:
        r = replay(c, "-t", source=str(path))
    assert r.code == 0, r.stderr
    assert c.received[0].envelopes == SOURCE_BYTES
    assert "(1 connection)" in r.stderr


def test_capture_clock(tmp_path: Path) -> None:
    # 27 data segments 10 ms apart (plus the answer's packet): the messages
    # of the first connection span about 0.27 s of capture time.
    path = two_connection_capture(tmp_path, gap_s=0.01)
    with Consumer() as c:
        r = replay(c, "--clock", "capture", "--stream", "1:c2s", source=str(path))
    assert r.code == 0, r.stderr
    segments = -(-len(DEMO) // 1400)
    scheduled = (segments - 1) * 0.01  # first to last data segment, the answer's packet aside
    assert c.received[0].envelopes == SOURCE_BYTES
    assert scheduled * 0.8 <= c.received[0].duration < scheduled * 10


def test_real_tcpdump_capture(tmp_path: Path) -> None:
    """A capture of a real loopback connection (tcpdump, as root), replayed."""
    livecap = pytest.importorskip("tests.capture.livecap")
    path = tmp_path / "live.pcap"
    srv = livecap.listener()
    port = srv.getsockname()[1]
    exchanges: list[Any] = []
    # tcpdump is stopped once the capture holds the connection's end, not after a guessed while.
    with livecap.tcpdump(path, f"tcp port {port}", until=livecap.closed(lambda: [e.client_port for e in exchanges])):
        exchanges += livecap.converse(srv, [(DEMO, negotiation(True))])
    srv.close()
    with Consumer() as c:
        r = replay(c, "-t", "--port", str(port), source=str(path))
    assert r.code == 0, r.stderr
    assert c.received[0].envelopes == SOURCE_BYTES


# ------------------------------------------------------------------ usage


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ([], "give one of --to HOST:PORT"),
        (["--to", "127.0.0.1:9", "--listen", "127.0.0.1:0"], "give one of --to HOST:PORT"),
        (["--to", "127.0.0.1:9", "-t", "--pps", "5"], "--topspeed and --pps: choose one way to pace"),
        (["--to", "127.0.0.1:9", "--clock", "capture"], "is a raw stream, it has no capture times"),
        (["--to", "9000"], "expected HOST:PORT"),
        (["--to", "127.0.0.1:9", "--multiplier", "0"], "--multiplier"),
    ],
)
def test_usage_errors_are_exit_2(args: list[str], needle: str) -> None:
    r = run_cli(["replay", str(DEMO_PATH), *args])
    assert r.code == 2, r.stderr
    assert needle in r.stderr


def test_handshake_is_the_first_thing_sent() -> None:
    with Consumer() as c:
        replay(c, "-t", "--limit", "2")
    first = c.received[0].envelopes[0]
    assert first[5] == HANDSHAKE and len(first) > HEADER_SIZE
