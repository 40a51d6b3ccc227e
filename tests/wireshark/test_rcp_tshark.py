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

from ripple_cli.protocols.rcp.wire import RcpFrame, write_frame
from tests.capture.livecap import capture_conversation, closed, read_capture, tcpdump
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


def expected(pcap: Path, problems: bool = False) -> dict[tuple[int, int], list[dict[str, Any]]]:
    """ripple's messages by direction (source port, destination port);
    `problems`: allowing problems, which are left out."""
    out: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for d in jsonl(pcap):
        if problems and "problem" in d:
            continue
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


def _frame(msg: str, flags: int = 1) -> bytes:
    payload = msg.encode()
    crc = RcpFrame(1, flags, 0, b"", payload).computed_crc
    return write_frame(RcpFrame(1, flags, crc, b"", payload))


# JSON that ripple's summary writes back with Python's json.dumps: key order,
# \\u escapes and non-ASCII text, floats, nesting, long values cut at 24 or 40
# characters; a payload that is no message and one that is no JSON.
CLIENT = b"".join(
    (
        _frame('{"type":"request","id":"1","op":"HELLO","params":{"protocol_version":1,"wire_modes":["binary_json"]}}'),
        _frame('{"type":"request","id":7,"op":"PUT","params":{"z":1e5,"a":0.1,"m":-0,"n":[1.50,{"k":"v"}],"q":2}}'),
        _frame(
            '{"type":"request","id":"2","op":"CREATE","params":{"name":"caf\\u00e9 \\ud83d\\ude00 \u00fcber","x":null}}'
        ),
        _frame('{"type":"request","id":"3","op":"' + "X" * 50 + '","params":{}}', flags=1 | 4),
        _frame('{"type":"request","id":"4","op":"F","params":{"a":1e16,"b":1.5e16,"c":1e-5}}'),
        _frame('{"type":"request","id":"5","op":"F","params":{"a":0.0001,"b":-2.50,"c":123.456e3}}'),
        _frame('{"type":"request","id":"6","op":"F","params":{"a":[1.50,{"k":"v"}],"b":"\\ "q"","c":"\t"}}'),
        _frame("[1, 2]"),
        _frame("not json"),
    )
)
SERVER = b"".join(
    (
        _frame('{"type":"response","id":"1","status":"ok","result":{}}'),
        _frame(
            '{"type":"response","id":7,"status":"error","error":{"code":"BAD_REQUEST","message":"' + "m" * 70 + '"}}'
        ),
        _frame('{"type":"event","subscription_id":"s","instance_id":"i-\\u00e9","from_state":"a","to_state":"b"}'),
        _frame('{"type":"response","id":"3","status":"ok","result":{"t":true,"f":false,"e":[]}}', flags=1 | 8 | 32),
    )
)


def test_info_of_varied_json(lua: Path, tmp_path: Path) -> None:
    pcap = tmp_path / "rcp-json.pcap"
    capture_conversation(pcap, [(CLIENT, SERVER)], seed=3, max_write=70)
    assert kit.assert_info_is_table(lua, pcap, "rcp") == 13
    filters = {
        'payload == "not json"': 'rcp.payload == "not json"',
        'op == "F"': 'rcp.op == "F"',
        'status == "error"': 'rcp.status == "error"',
        'error_code == "BAD_REQUEST"': 'rcp.error_code == "BAD_REQUEST"',
        "flags == 41": "rcp.flags == 41",
        "flag_names contains STREAM": 'rcp.flag_names == "STREAM"',
    }
    kit.assert_same_selection(lua, pcap, "rcp", filters)


def test_bad_crc_is_flagged_and_the_next_frame_decodes(lua: Path, tmp_path: Path) -> None:
    """The real rstmdb client's frames of examples/rstmdb.pcap, one payload
    byte of its CREATE_INSTANCE damaged in transit (instance "order-0" under
    the CRC of "order-1"), sent again over TCP: tshark flags that CRC as bad,
    with the CRC it calculates and an expert-info warning, and decodes every
    frame, those after it too, as ripple does, which reports the same CRCs."""
    (conn,) = read_capture(REPO / "examples" / "rstmdb.pcap").connections.values()
    sent = bytearray(conn.c2s.data)
    at = sent.index(b'"instance_id":"order-1"') + len(b'"instance_id":"order-')
    sent[at] ^= 0x01  # "1" -> "0"
    pcap = tmp_path / "bad-crc.pcap"
    (ex,) = capture_conversation(pcap, [(bytes(sent), bytes(conn.s2c.data))], seed=11, max_write=70)
    problems = [d for d in jsonl(pcap) if "problem" in d]
    assert [(d["problem"]["kind"], d["direction"]) for d in problems] == [("crc_mismatch", "c2s")]
    field, computed = problems[0]["problem"]["detail"].removeprefix("CRC mismatch: field ").split(", payload's CRC32C ")

    want = expected(pcap, problems=True)
    client = want[(ex.client_port, port_of(problems[0]["dst"]))]
    bad = [i for i, r in enumerate(client) if r["crc"] == "0"]
    assert bad == [2] and client[2]["op"] == "CREATE_INSTANCE"
    assert [r["crc"] for r in client[3:]] == ["1"] * (len(client) - 3) != []
    assert dissected(lua, pcap) == want
    assert kit.assert_info_is_table(lua, pcap, "rcp") == sum(len(v) for v in want.values())

    (e,) = [e for e in envelopes(tshark(lua, pcap, "-T", "pdml"), "rcp") if e.show("rcp.crc.status") == "0"]
    assert (e.show("rcp.crc"), e.show("rcp.crc.calculated"), e.show("rcp.crc_ok")) == (
        f"0x{field}",
        f"0x{computed}",
        "0",
    )
    (expert,) = [f for f in e.node.iter("field") if f.get("name") == "_ws.expert"]
    shown = {f.get("name"): f.get("showname") for f in expert}
    assert shown == {
        "rcp.crc.bad": f"Bad CRC-32C: 0x{field}, should be 0x{computed}",
        "_ws.expert.message": f"Message: Bad CRC-32C: 0x{field}, should be 0x{computed}",
        "_ws.expert.severity": "Severity level: Warning",
        "_ws.expert.group": "Group: Checksum",
    }
    # The display filter on the CRC selects ripple's crc_ok == false, the bad frame alone.
    kit.assert_same_selection(
        lua, pcap, "rcp", {"crc_ok == false": "rcp.crc_ok == 0", "crc_ok == true": "rcp.crc_ok == 1"}
    )
