"""The Lumberjack dissector of `ripple wireshark --protocol lumberjack` in
the real tshark, against `ripple decode --format jsonl`: the real npm
writers (lumberjack-client, compressed v2 batches; lumberjack-protocol, v1
data frames) and ripple's test readers captured with tcpdump, as in
tests/protocols/lumberjack/test_lumberjack_live.py; the golden streams
(v1 compressed, nested compressed frames, JSON frames, acks) sent over TCP;
and the bundled examples/beats.pcap."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from tests.capture.livecap import capture_conversation, closed, tcpdump
from tests.protocols.dissector_kit import read_hex
from tests.protocols.lumberjack.peerkit import Reader, require_peers, send
from tests.wireshark import tsharkkit as kit
from tests.wireshark.tsharkkit import REPO, Envelope, dissector, envelopes, jsonl, port_of, tshark

GOLDEN = REPO / "tests" / "golden" / "protocols" / "lumberjack"
CLEAN = ("v1-compressed", "nested", "v2-json", "v1-protocol")  # the writer's side; acks.hex answers v2-client.hex


# `ripple decode -Y` expressions and the display filters on the same fields.
FILTERS = {
    'type == "Json"': 'lumberjack.type == "Json"',
    "seq == 2": "lumberjack.seq == 2",
    "count == 3": "lumberjack.count == 3",
    "version == 1": "lumberjack.version == 1",
    "batch == 1": "lumberjack.batch == 1",
    "keepalive == false": "lumberjack.keepalive == 0",
}


@pytest.fixture(scope="module")
def lua(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return dissector("lumberjack", tmp_path_factory)


def expected(pcap: Path) -> dict[tuple[int, int], list[dict[str, Any]]]:
    out: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for d in jsonl(pcap):
        assert "problem" not in d, d
        if d.get("protocol") != "lumberjack":
            continue
        row = {k: d[k] for k in ("type", "version", "seq", "count", "pairs", "length", "inflated_size") if k in d}
        if d["type"] in ("Data", "Json"):
            row["event"] = d["event"]
        row["nested"] = "in_compressed" in d
        out.setdefault((port_of(d["src"]), port_of(d["dst"])), []).append(row)
    return out


def _int(e: Envelope, name: str) -> int | None:
    for f in e.node:
        if f.get("name") == name:
            return int(f.get("show", ""))
    return None


def shown(e: Envelope) -> dict[str, Any]:
    kind = e.show("lumberjack.type")
    row: dict[str, Any] = {"type": kind, "version": _int(e, "lumberjack.version")}
    for name in ("seq", "count", "pairs", "length", "inflated_size"):
        v = _int(e, f"lumberjack.{name}")
        if v is not None:
            row[name] = v
    if kind == "Data":
        pairs = [f for f in e.node if f.get("name") == "lumberjack.pair"]
        event = {}
        for pair in pairs:
            key, value = (bytes.fromhex(c.get("value", "")).decode() for c in pair)
            event[key] = value
        row["event"] = event
    if kind == "Json":
        payload = next((f for f in e.node if f.get("name") == "lumberjack.payload"), None)
        row["event"] = json.loads(bytes.fromhex(payload.get("value", ""))) if payload is not None else None
    row["nested"] = any(f.get("name") == "lumberjack.in_compressed" for f in e.node)
    return row


def dissected(lua: Path, pcap: Path) -> dict[tuple[int, int], list[dict[str, Any]]]:
    out: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for e in envelopes(tshark(lua, pcap, "-T", "pdml"), "lumberjack"):
        out.setdefault(e.ports, []).append(shown(e))
        # A compressed frame's frames are its children: listed after it, in order.
        for inner in e.node.iter("proto"):
            if inner.get("name") == "lumberjack" and inner is not e.node:
                out[e.ports].append(shown(Envelope(e.packet, inner, e.ports)))
    return out


def test_real_writers_message_for_message(lua: Path, tmp_path: Path) -> None:
    require_peers()
    path = tmp_path / "lj.pcap"
    v2, v1 = Reader(style="count"), Reader(style="eager")
    until = closed(lambda: [v2.client_port, v1.client_port])
    with tcpdump(path, f"tcp port {v2.port} or tcp port {v1.port}", until=until):
        send("client", v2.port, [{"message": "GET /a 200", "n": 1}, {"message": "caf\u00e9"}], [{"m": "later"}])
        send("frames", v1.port, [{"line": "first"}, {"line": "second"}], [{"line": "third"}], window=2)
        v2.join()
        v1.join()
    want = expected(path)
    rows = [r for rs in want.values() for r in rs]
    assert {r["type"] for r in rows} >= {"Window", "Compressed", "Json", "Data", "Ack"}
    assert any(r["nested"] for r in rows)
    assert dissected(lua, path) == want
    assert kit.assert_info_is_table(lua, path, "lumberjack") == len(rows)


def test_golden_streams_over_tcp(lua: Path, tmp_path: Path) -> None:
    path = tmp_path / "golden.pcap"
    streams = [(read_hex(GOLDEN / f"{name}.hex"), b"") for name in CLEAN]
    streams.append((read_hex(GOLDEN / "v2-client.hex"), read_hex(GOLDEN / "acks.hex")))
    capture_conversation(path, streams, seed=7, max_write=40)
    want = expected(path)
    assert sum(len(v) for v in want.values()) > 20
    assert dissected(lua, path) == want
    assert kit.assert_info_is_table(lua, path, "lumberjack") == sum(len(v) for v in want.values())


def test_bundled_capture_on_the_beats_port(lua: Path) -> None:
    pcap = REPO / "examples" / "beats.pcap"
    want = expected(pcap)
    assert dissected(lua, pcap) == want
    assert kit.assert_info_is_table(lua, pcap, "lumberjack") == sum(len(v) for v in want.values())


def test_display_filters_select_what_ripple_selects(lua: Path) -> None:
    counts = kit.assert_same_selection(lua, REPO / "examples" / "beats.pcap", "lumberjack", FILTERS)
    assert all(counts.values())


def test_display_filters_on_compressed_frames(lua: Path, tmp_path: Path) -> None:
    path = tmp_path / "golden.pcap"
    streams = [(read_hex(GOLDEN / f"{name}.hex"), b"") for name in CLEAN]
    capture_conversation(path, streams, seed=7, max_write=40)
    filters = {
        "in_compressed == 6": "lumberjack.in_compressed == 6",
        "frames == 1": "lumberjack.frames == 1",
        "pairs == 2": "lumberjack.pairs == 2",
        'type == "Compressed"': 'lumberjack.type == "Compressed"',
    }
    kit.assert_same_selection(lua, path, "lumberjack", filters)


def _json(seq: int, payload: bytes) -> bytes:
    return b"2J" + struct.pack(">II", seq, len(payload)) + payload


def _data(seq: int, pairs: list[tuple[bytes, bytes]]) -> bytes:
    body = b"".join(struct.pack(">I", len(k)) + k + struct.pack(">I", len(v)) + v for k, v in pairs)
    return b"1D" + struct.pack(">II", seq, len(pairs)) + body


# Text that ripple's summary escapes or cuts: controls, bytes that are not
# UTF-8 (a character cut at the 101st byte too), characters that do not
# print, and lines longer than the column.
ODD = b"".join(
    (
        b"2W" + struct.pack(">I", 5),
        _json(1, b'{"m":"tab\\there"}\t\x01\x7f'),
        _json(2, b"caf\xc3\xa9 \xe2\x82\xac \xff\xfe \xc0\x80 \xed\xa0\x80 \xf4\x90\x80\x80 \xc2\xa0 \xe2\x80\x8b"),
        _json(3, "\u00e9".encode() * 49 + b"xy" + "\u20ac".encode() * 5),
        _json(4, b"x" * 99 + "\u20ac".encode()),
        _json(5, b""),
        b"1W" + struct.pack(">I", 7),
        _data(6, [(b"k\xff", b"v\n"), (b"", b""), (b"long", b"y" * 120)]),
        _data(7, []),
    )
)


def test_info_escapes_and_cuts_as_ripple(lua: Path, tmp_path: Path) -> None:
    path = tmp_path / "odd.pcap"
    capture_conversation(path, [(ODD, b"2A" + struct.pack(">I", 0))], seed=11, max_write=33)
    assert kit.assert_info_is_table(lua, path, "lumberjack") == 10
