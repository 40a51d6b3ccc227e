"""`ripple tap -i`: live sniffing with the real tcpdump on the loopback
interface (root needed: CI runs as root; skipped otherwise)."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from tapkit import (
    ROOT,
    EchoServer,
    by_connection,
    decode_lines,
    exchange,
    ripple_cmd,
    ripple_stream,
    run_tap,
    wait_for,
)

from ripple_cli.capture.community_id import community_id
from ripple_cli.capture.events import Endpoint

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="sniffing needs root (CI runs the tests as root)")
needs_tcpdump = pytest.mark.skipif(shutil.which("tcpdump") is None, reason="tcpdump is not installed")


@needs_root
@needs_tcpdump
def test_sniffing_lo_decodes_like_decode_and_records_the_packets(tmp_path: Path) -> None:
    up = EchoServer(seed=8)
    cap = tmp_path / "sniff.pcapng"
    payload = ripple_stream(seed=21, size=300_000)
    expected = decode_lines(payload, tmp_path)
    # --nice 0: this test is about what the tap decodes, not about yielding
    # the CPU; at nice 19 two busy processes beside it starve its decoding.
    args = ["-i", "lo", "--port", str(up.port), "--show-connection", "-w", str(cap), "--nice", "0"]
    with run_tap(args, tmp_path, ready="ripple: tap: capturing on lo") as tap:
        assert f"ripple: tap: capturing on lo (tcp port {up.port})\n" in tap.stderr()
        client_port, _digest, size = exchange(up.port, payload, random.Random(2))
        assert size == len(payload)
        # Ctrl-C once every message of both directions is shown: the tap
        # stops tcpdump when it has been quiet for a moment, and on a busy
        # machine the last packets could still be on their way to it.
        wait_for(
            lambda: len(tap.stdout().splitlines()) >= 2 * len(expected),
            timeout=120,
            what="the tap to show both directions",
        )
        assert tap.interrupt() == 130
    groups = by_connection(tap.stdout().splitlines())
    # Each label ends with the connection's Community ID, the same both ways.
    cid = community_id(Endpoint("127.0.0.1", client_port), Endpoint("127.0.0.1", up.port))
    assert sorted(groups) == sorted(
        [
            f"1 127.0.0.1:{client_port} -> 127.0.0.1:{up.port} {cid}",
            f"1 127.0.0.1:{up.port} -> 127.0.0.1:{client_port} {cid}",
        ]
    )
    for label, lines in groups.items():
        assert lines == expected, label
    assert "0 bytes not decoded" in tap.stderr().splitlines()[-1]

    # -w kept the real packets: decoding them gives the same again.
    r = subprocess.run(ripple_cmd("decode", "--show-connection", str(cap)), capture_output=True, cwd=ROOT, check=False)
    assert r.returncode == 0, r.stderr
    assert by_connection(r.stdout.splitlines()) == groups


@needs_root
@needs_tcpdump
def test_sniffing_without_port_finds_ripple_by_content(tmp_path: Path) -> None:
    up = EchoServer(seed=9)
    with run_tap(["-i", "lo", "-f", f"port {up.port}", "--format", "jsonl"], tmp_path, ready="ripple: tap: ") as tap:
        payload = ripple_stream(seed=22, size=100_000)
        expected = 2 * len(decode_lines(payload, tmp_path))  # echoed: both directions
        exchange(up.port, payload, random.Random(3))
        exchange(up.port, random.Random(4).randbytes(50_000), random.Random(4))  # not Ripple: left alone
        # Ctrl-C once everything is shown: on a busy machine tcpdump may
        # still hold packets when the traffic ends.
        wait_for(lambda: tap.stdout().count(b"\n") >= expected, timeout=120, what="every message to be shown")
        assert tap.interrupt() == 130
    lines = tap.stdout().splitlines()
    assert lines and all(b'"connection":1' in ln for ln in lines)
    assert not any(b'"problem"' in ln for ln in lines)
    assert tap.stderr().splitlines()[-1].startswith("ripple: tap: 1 connection, ")  # the other one is not counted


@needs_root
@needs_tcpdump
def test_sniffing_without_the_right_to_capture_is_one_line_and_exit_3() -> None:
    # Root without CAP_NET_RAW (dropped from the bounding set) is refused by the kernel, like any user.
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is needed to drop CAP_NET_RAW")
    r = subprocess.run(
        [setpriv, "--bounding-set", "-net_raw", *ripple_cmd("tap", "-i", "lo")],
        capture_output=True,
        cwd=ROOT,
        check=False,
        timeout=60,
    )
    assert r.returncode == 3
    assert r.stderr.decode() == (
        "ripple: tap: cannot capture on lo: permission denied (sniffing needs root or CAP_NET_RAW)\n"
    )


@needs_root
@needs_tcpdump
def test_sniffing_errors() -> None:
    def tap(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ripple_cmd("tap", *args), capture_output=True, text=True, cwd=ROOT, check=False, timeout=60, env=env
        )

    r = tap("-i", "nosuchif0")
    assert r.returncode == 3 and r.stderr.startswith("ripple: tap: cannot capture on nosuchif0: ")
    r = tap("-i", "lo", "-f", "port ((( nonsense")
    assert r.returncode == 2 and r.stderr.startswith("ripple: tap: -f: tcpdump cannot use the filter")
    # Filters tcpdump's grammar takes and its compiler refuses, each in words of its own (they were exit 3).
    for expression, words in [
        ("port 99999999", "illegal port number 99999999 > 65535"),
        ("host nosuchhost.invalid", "unknown host 'nosuchhost.invalid'"),
        ("ether host 1:2:3", "bogus ethernet address"),
    ]:
        r = tap("-i", "lo", "-f", expression)
        assert r.returncode == 2, r.stderr
        assert r.stderr.startswith(f"ripple: tap: -f: tcpdump cannot use the filter {expression!r}: {words}")
        assert len(r.stderr.splitlines()) == 1
    r = tap("-i", "lo", env={**os.environ, "PATH": "/nonexistent"})
    assert r.returncode == 3 and r.stderr.startswith("ripple: tap: tcpdump is not installed")
    assert len(r.stderr.splitlines()) == 1


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@needs_root
@needs_tcpdump
def test_a_quiet_interface_is_an_empty_capture_not_a_problem(tmp_path: Path) -> None:
    """No packet before Ctrl-C: nothing to show and nothing wrong (it was
    `error: lo is not a pcap or pcapng file (no magic)`, exit 1's problem)."""
    with run_tap(["-i", "lo", "--port", str(_free_port()), "-F", "jsonl"], tmp_path) as tap:
        assert tap.interrupt() == 130
    assert tap.stdout() == b""
    assert tap.final_stderr().splitlines()[-1].startswith("ripple: tap: 0 connections, 0 messages, 0 problems;")


@needs_root
@needs_tcpdump
def test_tcpdump_killed_is_said_so(tmp_path: Path) -> None:
    """tcpdump dies under the tap (killed, here): one note that says how,
    not tcpdump's banner, and no second problem about the capture."""
    with run_tap(["-i", "lo", "--port", str(_free_port()), "-F", "jsonl"], tmp_path) as tap:
        children = Path(f"/proc/{tap.proc.pid}/task/{tap.proc.pid}/children").read_text().split()
        (tcpdump,) = [int(pid) for pid in children if Path(f"/proc/{pid}/comm").read_text().strip() == "tcpdump"]
        os.kill(tcpdump, signal.SIGKILL)
        assert tap.proc.wait(60) == 1
    (row,) = [json.loads(line) for line in tap.stdout().splitlines()]
    assert row["problem"]["kind"] == "tcpdump_failed"
    assert row["problem"]["detail"] == "tcpdump stopped: killed by SIGKILL"
    assert tap.final_stderr().splitlines()[-1].startswith("ripple: tap: 0 connections, 0 messages, 1 problem;")
