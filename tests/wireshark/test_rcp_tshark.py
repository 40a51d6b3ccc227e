"""The RCP dissector of `ripple wireshark --protocol rcp` in the real tshark,
against `ripple decode --format jsonl`: a capture of the real rstmdb client
(PyPI rstmdb) and the test server (tests/protocols/rcp/rcppeer.py), binary
frames and a JSON-lines session, on an ephemeral port (the heuristic finds
it), and the bundled examples/rstmdb.pcap on RCP's port 7401."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.capture.livecap import closed, tcpdump
from tests.protocols.rcp.rcppeer import RcpServer, binary_session, jsonl_session
from tests.wireshark import tsharkkit as kit
from tests.wireshark.tsharkkit import REPO, Envelope, dissector, envelopes, jsonl, port_of, tshark

# Each `ripple decode -Y` expression, and the display filter on the same field.
FILTERS = {
    'op == "HELLO"': 'rcp.op == "HELLO"',
    'status == "ok"': 'rcp.status == "ok"',
    'kind == "request"': 'rcp.kind == "request"',
    'type == "Response"': 'rcp.type == "Response"',
    "crc_ok == true": "rcp.crc_ok == 1",
    "payload_len > 200": "rcp.payload_len > 200",
    'wire == "frame"': 'rcp.wire == "frame"',
}


@pytest.fixture(scope="module")
def lua(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return dissector("rcp", tmp_path_factory)


@pytest.fixture(scope="module")
def peers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    server = RcpServer()
    path = tmp_path_factory.mktemp("ws-rcp-live") / "rcp.pcap"
    try:
        with tcpdump(
            path, f"tcp port {server.port}", until=closed(lambda: [c.client_port for c in server.connections])
        ):
            asyncio.run(binary_session(server.port))
            asyncio.run(jsonl_session(server.port, hello_as_frame=False))
    finally:
        server.close()
    return path


def expected(pcap: Path) -> dict[tuple[int, int], list[dict[str, Any]]]:
    """ripple's messages by direction (source port, destination port)."""
    out: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for d in jsonl(pcap):
        assert "problem" not in d, d
        crc = {True: "1", False: "0", None: "2"}[d.get("crc_ok")]
        row = {k: d.get(k) for k in ("type", "wire", "kind", "id", "op", "status", "error_code", "payload_len")}
        out.setdefault((port_of(d["src"]), port_of(d["dst"])), []).append({**row, "crc": crc})
    return out


def shown(e: Envelope) -> dict[str, Any]:
    length = e.show("rcp.payload_len")
    return {
        "type": e.show("rcp.type"),
        "wire": e.show("rcp.wire"),
        "kind": e.show("rcp.kind"),
        "id": e.show("rcp.id"),
        "op": e.show("rcp.op"),
        "status": e.show("rcp.status"),
        "error_code": e.show("rcp.error_code"),
        "payload_len": None if length is None else int(length),
        "crc": e.show("rcp.crc.status") or "2",
    }


def dissected(lua: Path, pcap: Path) -> dict[tuple[int, int], list[dict[str, Any]]]:
    out: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for e in envelopes(tshark(lua, pcap, "-T", "pdml"), "rcp"):
        out.setdefault(e.ports, []).append(shown(e))
    return out


def test_real_peers_message_for_message(lua: Path, peers: Path) -> None:
    want = expected(peers)
    assert len(want) == 4  # two connections, both directions
    assert {r["wire"] for rows in want.values() for r in rows} == {"frame", "jsonl"}
    assert dissected(lua, peers) == want
    assert kit.assert_info_is_table(lua, peers, "rcp") == sum(len(v) for v in want.values())


def test_bundled_capture_on_the_rcp_port(lua: Path) -> None:
    pcap = REPO / "examples" / "rstmdb.pcap"
    want = expected(pcap)
    assert {r["crc"] for rows in want.values() for r in rows} == {"1"}
    assert dissected(lua, pcap) == want
    assert kit.assert_info_is_table(lua, pcap, "rcp") == sum(len(v) for v in want.values())


def test_display_filters_select_what_ripple_selects(lua: Path, peers: Path) -> None:
    kit.assert_same_selection(lua, REPO / "examples" / "rstmdb.pcap", "rcp", FILTERS)
    live = {**FILTERS, 'wire == "jsonl"': 'rcp.wire == "jsonl"', 'id == "1"': 'rcp.id == "1"'}
    live.pop("payload_len > 200")
    kit.assert_same_selection(lua, peers, "rcp", live)
