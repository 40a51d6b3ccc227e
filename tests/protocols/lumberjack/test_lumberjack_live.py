"""Real npm writers through `ripple tap` and into tcpdump captures, decoded
by the commands as a user runs them: the events shown are the events sent,
field by field, the acks are the reader's, and auto-detection tells
Lumberjack from Ripple and RCP in one capture.

The v1 writer here is lumberjack-protocol's own frame builders over plain
TCP (its client speaks TLS only, which a tap cannot read)."""

from __future__ import annotations

import json
import struct
import threading
import time
from pathlib import Path
from typing import Any

import crc32c
import pytest
from peerkit import Reader, js_strings, require_peers, send

from ripple_cli.protocols import registry
from tests.capture.livecap import DEMO, closed, converse, listener, tcpdump
from tests.conftest import run_cli
from tests.tap.tapkit import run_tap

V2_QUEUED: list[dict[str, Any]] = [
    {"message": "GET /a 200", "bytes": 512, "ua": "curl/8"},
    {"message": "caf\u00e9 \U0001f600", "tags": ["x"], "none": None, "f": 0.25},
]
V2_LATER: list[dict[str, Any]] = [{"message": "later", "level": "info"}]
V1_QUEUED: list[dict[str, Any]] = [{"line": "first", "n": 1}, {"line": "second", "file": "/var/log/b.log"}]
V1_LATER: list[dict[str, Any]] = [{"line": "third"}]


@pytest.fixture(autouse=True)
def _peers() -> None:
    require_peers()


def v2_expected() -> list[tuple[int, Any]]:
    return [(i + 1, e) for i, e in enumerate(V2_QUEUED)] + [(1, e) for e in V2_LATER]


def v1_expected() -> list[tuple[int, Any]]:
    return [(i + 1, js_strings(e)) for i, e in enumerate(V1_QUEUED + V1_LATER)]


def lumberjack_lines(out: bytes) -> list[dict[str, Any]]:
    lines = [json.loads(ln) for ln in out.splitlines()]
    assert [ln for ln in lines if "problem" in ln] == []
    return [ln for ln in lines if ln.get("protocol") == "lumberjack"]


def events_of(lines: list[dict[str, Any]]) -> list[tuple[int, Any]]:
    return [(ln["seq"], ln["event"]) for ln in lines if ln["type"] in ("Json", "Data")]


def acks_of(lines: list[dict[str, Any]]) -> list[int]:
    return [ln["seq"] for ln in lines if ln["type"] == "Ack"]


# ---------------------------------------------------------------- ripple tap


@pytest.mark.parametrize("mode", ["client", "frames"])
def test_tap_shows_what_the_real_writer_sent(mode: str, tmp_path: Path) -> None:
    reader = Reader(style="count" if mode == "client" else "eager")
    args = ["--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{reader.port}", "--format", "jsonl"]
    # --nice 0: this test is about what the tap shows, not about yielding the
    # CPU; at nice 19 busy processes beside it starve its decoding.
    with run_tap([*args, "--show-connection", "--nice", "0"], tmp_path) as tap:
        if mode == "client":
            got_acks = send("client", tap.port, V2_QUEUED, V2_LATER)
        else:
            got_acks = send("frames", tap.port, V1_QUEUED, V1_LATER, window=2)
        reader.join()
        expected = v2_expected() if mode == "client" else v1_expected()
        assert reader.events == expected  # the tap passed the bytes on unchanged
        # The tap shows the last bytes a moment after they pass.
        deadline = time.monotonic() + 10
        while len(acks_of(lumberjack_lines(tap.stdout()))) < len(reader.acks) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert tap.interrupt() == 130
    lines = lumberjack_lines(tap.stdout())
    c2s = [ln for ln in lines if ln["direction"] == "c2s"]
    s2c = [ln for ln in lines if ln["direction"] == "s2c"]
    assert events_of(c2s) == expected
    assert acks_of(s2c) == reader.acks
    if mode == "frames":
        assert got_acks == reader.acks  # the writer read them back through the tap
        assert [ln["type"] for ln in c2s] == ["Window", "Data", "Data", "Data"]
    else:
        assert [ln["type"] for ln in c2s] == ["Window", "Compressed", "Json", "Json", "Window", "Compressed", "Json"]
    assert {ln["connection"] for ln in lines} == {1}
    assert "0 problems" in tap.stderr()


# ---------------------------------------------------------------- tcpdump captures


def test_a_tcpdump_capture_decodes_to_the_events_sent(tmp_path: Path) -> None:
    path = tmp_path / "lj.pcap"
    v2, v1 = Reader(style="count"), Reader(style="eager")
    until = closed(lambda: [v2.client_port, v1.client_port])
    with tcpdump(path, f"tcp port {v2.port} or tcp port {v1.port}", until=until):
        send("client", v2.port, V2_QUEUED, V2_LATER)
        send("frames", v1.port, V1_QUEUED, V1_LATER, window=2)
        v2.join()
        v1.join()

    r = run_cli(["decode", "--format", "jsonl", str(path)])
    assert r.code == 0, r.stderr
    lines = lumberjack_lines(r.stdout)
    by_conn: dict[int, list[dict[str, Any]]] = {}
    for ln in lines:
        by_conn.setdefault(ln["connection"], []).append(ln)
    assert sorted(by_conn) == [1, 2]
    first, second = by_conn[1], by_conn[2]
    assert events_of(first) == v2_expected() and acks_of(first) == v2.acks
    assert events_of(second) == v1_expected() and acks_of(second) == v1.acks
    assert {ln["version"] for ln in second} == {1}

    # verify applies the connection rules: both servers' styles pass.
    r = run_cli(["verify", str(path)])
    assert r.code == 0, r.stdout + r.stderr.encode()
    r = run_cli(["verify", "-F", "json", str(path)])
    analyses = [s["analysis"] for s in json.loads(r.stdout)["streams"] if "analysis" in s]
    # Capture times vary: the latencies are there, their figures are not checked.
    assert [a.pop("ack_latency_ns")["batches"] for a in analyses] == [2, 1]
    assert analyses == [
        {
            "protocol": "lumberjack",
            "version": 2,
            "batches": {"count": 2, "events": 3, "acked": 3, "unacked": 0},
            "acks": {"total": 4, "keepalives": 2, "partial": 0, "style": "either"},
            "window": {"first": 2, "last": 1, "min": 1, "max": 2, "changes": 1, "counts": [2, 1]},
        },
        {
            "protocol": "lumberjack",
            "version": 1,
            # lumberjack-protocol sends one W: the third event opens a second batch of its size.
            "batches": {"count": 2, "events": 3, "acked": 3, "unacked": 0},
            # Acked as the events come (one read or two for the first two): every ack is
            # partial but the one completing the first batch; the second batch never fills.
            "acks": {"total": len(v1.acks), "keepalives": 0, "partial": len(v1.acks) - 1, "style": "seq"},
            "window": {"first": 2, "last": 2, "min": 2, "max": 2, "changes": 0, "counts": [2]},
        },
    ]
    # The sexp lines read back to the bytes of the capture: the frames
    # inside C frames are not written again.
    r = run_cli(["decode", "--stream", "1:c2s", str(path)])
    assert b"in_compressed" in r.stdout
    rebuilt = run_cli(["encode"], stdin=r.stdout).stdout
    assert rebuilt == v2.received


def _rcp(payload: dict[str, Any]) -> bytes:
    body = json.dumps(payload, separators=(",", ":")).encode()
    return struct.pack(">4sHHHII", b"RCPX", 1, 1, 0, len(body), crc32c.crc32c(body)) + body


def test_auto_detection_in_a_capture_mixing_ripple_lumberjack_and_rcp(tmp_path: Path) -> None:
    if "rcp" not in registry.PROTOCOLS:
        pytest.skip("RCP is not registered")
    rcp_request = _rcp({"type": "request", "id": "1", "op": "PING"})
    rcp_response = _rcp({"type": "response", "id": "1", "status": "ok", "result": {"pong": True}})
    path = tmp_path / "mixed.pcap"
    reader = Reader(style="count")
    truth: dict[int, str] = {}  # client port -> the protocol its connection carried
    with listener() as srv:
        port = srv.getsockname()[1]
        until = closed(lambda: [*truth, reader.client_port])

        def others() -> None:
            answer_for = lambda first: b"" if first[:4] == DEMO[:4] else rcp_response  # noqa: E731
            for e in converse(srv, [(DEMO, b""), (rcp_request, rcp_response)], seed=3, answer_for=answer_for):
                truth[e.client_port] = "ripple" if e.sent == DEMO else "rcp"

        with tcpdump(path, f"tcp port {port} or tcp port {reader.port}", until=until):
            thread = threading.Thread(target=others)
            thread.start()
            send("client", reader.port, V2_QUEUED, V2_LATER)
            reader.join()
            thread.join(60)
    truth[reader.client_port] = "lumberjack"
    assert sorted(truth.values()) == ["lumberjack", "rcp", "ripple"]

    r = run_cli(["decode", "--format", "jsonl", str(path)])
    assert r.code == 0, r.stderr
    lines = [json.loads(ln) for ln in r.stdout.splitlines()]
    seen: dict[int, set[str]] = {}
    for ln in lines:
        client = ln["src"] if ln["direction"] == "c2s" else ln["dst"]
        seen.setdefault(int(client.rsplit(":", 1)[1]), set()).add(ln.get("protocol", "ripple"))
    assert seen == {p: {name} for p, name in truth.items()}
    assert events_of([ln for ln in lines if ln.get("protocol") == "lumberjack"]) == v2_expected()
    assert sum(1 for ln in lines if "protocol" not in ln) == 300  # the demo stream's envelopes
    assert [ln["type"] for ln in lines if ln.get("protocol") == "rcp"] == ["Request", "Response"]
