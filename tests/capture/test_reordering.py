"""Reordering is not loss: a real capture of an OCaml-made stream (the
bundled examples/demo.ripple, both ways, on four connections at once; on
loopback, and over a veth pair between two network namespaces with a
1500-byte MTU and offloads off), its packets permuted within windows of up to 8 packets across both
directions (ACKs and handshakes included), some duplicated, segments split
and merged anywhere, decodes to exactly the raw stream's messages, byte
for byte, in both lanes (the C fast lane and RIPPLE_PURE=1)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import dpkt  # type: ignore[import-untyped, unused-ignore]
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from livecap import DEMO, capture_conversation, require_tcpdump
from mutate import MASK, Packet, duplicate, read_pcap, reorder, split, write_pcap
from vethcap import PORT, capture_over_veth

from ripple_cli.codec.fast import speedups
from tests.conftest import EXAMPLES, run_cli

CONNECTIONS = 4
SCHEMAS = str(EXAMPLES / "schemas")


@pytest.fixture(scope="module")
def lo_demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Packet], int]:
    """Four connections on 127.0.0.1, each carrying the demo stream both
    ways, captured by tcpdump -i lo; its TCP packets and the server port."""
    path = tmp_path_factory.mktemp("reorder") / "lo.pcap"
    capture_conversation(path, [(DEMO, DEMO)] * CONNECTIONS, seed=3, max_write=2000)
    pkts = read_pcap(path)
    return pkts, pkts[0].dport  # the first SYN's


@pytest.fixture(scope="module")
def veth_demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Packet], int]:
    """The same four conversations between two network namespaces, across
    a veth pair (1500-byte MTU, offloads off), captured on the client's side."""
    require_tcpdump()
    path = tmp_path_factory.mktemp("reorder") / "veth.pcap"
    capture_over_veth(path, EXAMPLES / "demo.ripple", CONNECTIONS, seed=3)
    return read_pcap(path), PORT


@pytest.fixture(scope="module", params=["lo", "veth"])
def demo_capture(request: pytest.FixtureRequest) -> tuple[list[Packet], int]:
    return request.getfixturevalue(f"{request.param}_demo")  # type: ignore[no-any-return]


def _merge(pkts: list[Packet], i: int) -> list[Packet]:
    """Data packet i and the next packet of its direction, when that one
    carries the bytes that follow on, as one segment (flags of the second)."""
    p = pkts[i]
    k = next((j for j in range(i + 1, len(pkts)) if pkts[j].sport == p.sport and pkts[j].dport == p.dport), None)
    if k is None:
        return pkts
    q = pkts[k]
    if not q.payload or (p.seq + len(p.payload)) & MASK != q.seq or p.flags & (dpkt.tcp.TH_FIN | dpkt.tcp.TH_SYN):
        return pkts
    merged = q.clone()
    merged.tcp.seq = p.seq
    merged.tcp.data = p.payload + q.payload
    merged = Packet(q.time_ns, dpkt.ethernet.Ethernet(merged.rebuilt()))
    return [*pkts[:i], merged, *pkts[i + 1 : k], *pkts[k + 1 :]]


def damage(pkts: list[Packet], seed: int, window: int, dup_rate: float, cut_rate: float) -> list[Packet]:
    """Segments split and merged anywhere, then some packets duplicated (the
    copy up to `window` packets later), then every run of `window` packets
    (across both directions, ACKs included) shuffled."""
    rng = random.Random(seed)
    out = list(pkts)
    i = 0
    while i < len(out):
        if out[i].payload and rng.random() < cut_rate:
            if rng.random() < 0.5 and len(out[i].payload) > 1:
                out = split(out, i, rng.randrange(1, len(out[i].payload)))
            else:
                out = _merge(out, i)
        i += 1
    copies = [(i + 1 + rng.randrange(window), p.clone()) for i, p in enumerate(out) if rng.random() < dup_rate]
    for at, p in sorted(copies, key=lambda c: c[0], reverse=True):
        out.insert(min(at, len(out)), p)
    shuffled: list[Packet] = []
    for start in range(0, len(out), window):
        block = out[start : start + window]
        rng.shuffle(block)
        shuffled += block
    return shuffled


def _messages(stdout: bytes) -> dict[str, list[bytes]]:
    """Decoded lines by stream label (`N A -> B`), the label cut off."""
    out: dict[str, list[bytes]] = {}
    for line in stdout.splitlines():
        text, _, where = line.rpartition(b" ; ")
        label = where.rsplit(b" ", 1)[0].decode()
        out.setdefault(label, []).append(text)
    return out


def _decode_both_lanes(args: list[str]) -> list[tuple[int, bytes, str]]:
    results = []
    for pure in (False, True):
        with pytest.MonkeyPatch.context() as m:
            if pure:
                m.setenv("RIPPLE_PURE", "1")
                assert speedups() is None
            res = run_cli(args)
        results.append((res.code, res.stdout, res.stderr))
    return results


@pytest.fixture(scope="module")
def raw_lines() -> list[bytes]:
    res = run_cli(["decode", "--schemas", SCHEMAS, str(EXAMPLES / "demo.ripple")])
    assert res.code == 0
    lines = res.stdout.splitlines()
    assert len(lines) == 300
    return lines


@settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 2**32 - 1),
    window=st.integers(2, 8),
    dup_rate=st.sampled_from([0.0, 0.05, 0.2]),
    cut_rate=st.sampled_from([0.0, 0.1, 0.3]),
)
def test_reordered_duplicated_split_merged_capture_decodes_whole(
    tmp_path: Path,
    demo_capture: tuple[list[Packet], int],
    raw_lines: list[bytes],
    seed: int,
    window: int,
    dup_rate: float,
    cut_rate: float,
) -> None:
    pkts, port = demo_capture
    path = write_pcap(tmp_path / f"r{seed}.pcap", damage(pkts, seed, window, dup_rate, cut_rate))
    for code, stdout, stderr in _decode_both_lanes(
        ["decode", "--schemas", SCHEMAS, "--port", str(port), "--show-connection", str(path)]
    ):
        assert (code, stderr) == (0, "")
        streams = _messages(stdout)
        assert len(streams) == 2 * CONNECTIONS
        for label, lines in streams.items():
            assert lines == raw_lines, label


def _client_data(pkts: list[Packet], port: int) -> list[int]:
    return [i for i, p in enumerate(pkts) if p.dport == port and p.payload]


def _list_streams(path: Path, port: int) -> dict[str, dict[str, object]]:
    res = run_cli(["decode", "--list-streams", "-F", "jsonl", "--port", str(port), str(path)])
    assert res.code == 0, res.stderr
    return {rec["stream"]: rec for rec in map(json.loads, res.stdout.splitlines())}


def test_counts_per_connection(tmp_path: Path, demo_capture: tuple[list[Packet], int]) -> None:
    """One data segment after the next two of its direction (the ACKs of it
    moved along), one duplicated: --list-streams counts them, exactly."""
    pkts, port = demo_capture
    first = pkts[0].sport
    conn = [p for p in pkts if first in (p.sport, p.dport)]
    data = _client_data(conn, port)
    reordered = reorder(conn, data[3], 2)
    damaged = duplicate(reordered, _client_data(reordered, port)[8], 1)
    streams = _list_streams(write_pcap(tmp_path / "c.pcap", damaged), port)
    assert streams["1:c2s"]["tcp"] == {"out_of_order": 2, "retransmitted": 1, "acked_unseen": 0, "held": 2}
    assert streams["1:c2s"]["messages"] == 300 and streams["1:s2c"]["messages"] == 300


def test_segment_after_an_ack_that_covers_it(
    tmp_path: Path, demo_capture: tuple[list[Packet], int], raw_lines: list[bytes]
) -> None:
    """The capture shows the receiver's ACK before the segment it covers
    (three packets later): counted as acked unseen, nothing declared missing."""
    pkts, port = demo_capture
    first = pkts[0].sport
    conn = [p for p in pkts if first in (p.sport, p.dport)]
    i = _client_data(conn, port)[5]
    moved = conn[i]
    end = (moved.seq + len(moved.payload)) & MASK
    j = next(k for k in range(i + 1, len(conn)) if conn[k].sport == port and ((conn[k].tcp.ack - end) & MASK) < 1 << 31)
    damaged = [*conn[:i], *conn[i + 1 : j + 1], *conn[j + 1 : j + 3], moved, *conn[j + 3 :]]
    path = write_pcap(tmp_path / "a.pcap", damaged)
    streams = _list_streams(path, port)
    tcp = streams["1:c2s"]["tcp"]
    assert isinstance(tcp, dict) and tcp["acked_unseen"] == 1
    for code, stdout, stderr in _decode_both_lanes(["decode", "--schemas", SCHEMAS, "--show-connection", str(path)]):
        assert (code, stderr) == (0, "")
        assert list(_messages(stdout).values()) == [raw_lines, raw_lines]
