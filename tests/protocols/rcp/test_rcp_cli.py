"""rstmdb RCP through the commands: decode, verify and encode of raw files;
captures of the real client by tcpdump decoded by `ripple decode`; a
capture mixing Ripple, Lumberjack and RCP connections, recognised by
content; and `ripple tap` between the real client and the test server."""

from __future__ import annotations

import asyncio
import json
import struct
from collections import defaultdict
from pathlib import Path
from typing import Any

from rcpkit import GOLDEN, error, frame, ok, request
from rcppeer import RcpServer, Served, binary_session, jsonl_session

from tests.capture.livecap import DEMO, capture_conversation, closed, require_tcpdump, tcpdump
from tests.conftest import run_cli
from tests.protocols.dissector_kit import decode_then_encode, read_hex
from tests.tap.tapkit import run_tap, wait_for


def payload_of(raw: bytes) -> bytes:
    if raw.startswith(b"RCPX"):
        return raw[18 + int.from_bytes(raw[8:10], "big") :]
    return raw[:-1]


def by_direction(out: bytes) -> dict[tuple[int, str], list[dict[str, Any]]]:
    """`decode -F jsonl` lines of a capture by (connection, direction)."""
    groups: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    for line in out.splitlines():
        obj = json.loads(line)
        groups[(obj["connection"], obj["direction"])].append(obj)
    return groups


def connection_of(groups: dict[tuple[int, str], list[dict[str, Any]]], conn: Served) -> int:
    (number,) = {n for (n, d), objs in groups.items() if d == "c2s" and objs[0]["src"].endswith(f":{conn.client_port}")}
    return number


def assert_json_is_what_was_sent(groups: dict[tuple[int, str], list[dict[str, Any]]], conn: Served) -> None:
    number = connection_of(groups, conn)
    for direction, sent in (("c2s", conn.requests), ("s2c", conn.answers)):
        objs = [o for o in groups[(number, direction)] if "problem" not in o]
        assert [o["msg"] for o in objs] == [json.loads(payload_of(raw)) for raw in sent]
        assert [o["size"] for o in objs] == [len(raw) for raw in sent]
        assert {o["protocol"] for o in objs} == {"rcp"}
        assert [o for o in groups[(number, direction)] if "problem" in o] == []


# ---------------------------------------------------------------- raw files


def test_decode_a_raw_file_recognises_rcp_and_prints_the_golden_text(tmp_path: Path) -> None:
    path = tmp_path / "conversation.rcp"
    names = ("hello", "ping", "error_response")
    path.write_bytes(b"".join(read_hex(GOLDEN / f"{n}.hex") for n in names))
    r, back = decode_then_encode([str(path)])
    assert (r.code, r.stderr) == (0, "")
    assert r.stdout == b"".join((GOLDEN / f"{n}.sexp").read_bytes() for n in names)
    # encode reads it back to the same bytes.
    assert (back.code, back.stdout) == (0, path.read_bytes())


def test_filters_on_rcp_fields(tmp_path: Path) -> None:
    path = tmp_path / "conversation.rcp"
    frames = [
        frame(request("1", "APPLY_EVENT", {"instance_id": "o-1", "event": "ship"})),
        frame(error("1", "INVALID_TRANSITION", "no")),
        frame(request("2", "PING"), crc=7),
        frame(ok("2", {"pong": True})),
    ]
    path.write_bytes(b"".join(frames))
    offsets = [sum(len(f) for f in frames[:k]) for k in range(len(frames))]
    cases = {
        'status == "error"': [1],
        'op == "APPLY_EVENT"': [0],
        'msg.params.instance_id == "o-1"': [0],
        'error_code == "INVALID_TRANSITION"': [1],
        "crc_ok == false": [2],
        'kind == "response" and msg.result.pong == true': [3],
        'flag_names contains "CRC_PRESENT"': [0, 1, 2, 3],
    }
    for expr, wanted in cases.items():
        r = run_cli(["decode", "-P", "rcp", "-F", "jsonl", "-Y", expr, str(path)])
        objs = [json.loads(line) for line in r.stdout.splitlines()]
        assert [offsets.index(o["offset"]) for o in objs if "problem" not in o] == wanted, expr


def test_edited_text_is_encoded_with_a_new_crc(tmp_path: Path) -> None:
    path = tmp_path / "ping.rcp"
    path.write_bytes(read_hex(GOLDEN / "ping.hex"))
    text = run_cli(["decode", "-P", "rcp", str(path)]).stdout
    edited = text.replace(b"PING", b"INFO")
    r = run_cli(["encode"], stdin=edited)
    assert r.code == 0
    assert r.stdout == frame(request("1", "INFO")) + frame(ok("1", {"pong": True}))


def test_verify_a_raw_file(tmp_path: Path) -> None:
    path = tmp_path / "damaged.rcp"
    path.write_bytes(read_hex(GOLDEN / "error_response.hex") + read_hex(GOLDEN / "crc_mismatch.hex"))
    r = run_cli(["verify", "-P", "rcp", str(path)])
    assert r.code == 1
    assert r.stdout.decode().splitlines() == [
        f"{path}: 3 messages (2 Request, 1 Response), {path.stat().st_size} bytes: 2 problems, 1 warning",
        "  warning: offset 114: error_response: APPLY_EVENT (id 7) failed with INVALID_TRANSITION: "
        "no transition from created on ship",
        "  error: offset 292: crc_mismatch: CRC mismatch: field 12345678, payload's CRC32C a77f011b",
        "  error: offset 292: unanswered: request INFO (id 5) never answered",
        "  connection: requests: 2",
        '  connection: ops APPLY_EVENT: requests 1, answered 1, errors {"INVALID_TRANSITION":1}, unanswered 0',
        "  connection: ops INFO: requests 1, answered 0, errors {}, unanswered 1",
        "  connection: events: 0",
        "verify: 1 stream, 3 messages, 2 problems, 1 warning",
    ]


def test_list_protocols_names_rcp() -> None:
    r = run_cli(["decode", "--list-protocols"])
    line = next(x for x in r.text.splitlines() if x.startswith("rcp "))
    assert line.split() == [
        "rcp",
        "7401",
        "rstmdb",
        "RCP",
        "(binary",
        "frames",
        "with",
        "JSON,",
        "and",
        "JSON",
        "lines)",
        "ripple-rcp(7)",
    ]


# ---------------------------------------------------------------- live captures


def test_a_capture_of_the_real_client_decodes_to_what_was_sent(tmp_path: Path) -> None:
    require_tcpdump()
    server = RcpServer()
    path = tmp_path / "rcp.pcap"
    try:
        with tcpdump(
            path, f"tcp port {server.port}", until=closed(lambda: [c.client_port for c in server.connections])
        ):
            asyncio.run(binary_session(server.port))
            asyncio.run(jsonl_session(server.port, hello_as_frame=False))
    finally:
        server.close()
    binary, jsonl = server.connections
    r = run_cli(["decode", "--format", "jsonl", str(path)])
    assert (r.code, r.stderr) == (0, "")
    groups = by_direction(r.stdout)
    assert len(groups) == 4
    assert_json_is_what_was_sent(groups, binary)
    assert_json_is_what_was_sent(groups, jsonl)
    assert [o["type"] for o in groups[(connection_of(groups, jsonl), "s2c")]] == ["JsonLine"] * 9

    # The text of each direction encodes back to its bytes.
    r = run_cli(["decode", "--show-connection", str(path)])
    texts: dict[str, list[bytes]] = defaultdict(list)
    for line in r.stdout.splitlines():
        text, _, label = line.rpartition(b" ; ")
        texts[label.decode()].append(text)
    for conn in (binary, jsonl):
        for direction, sent in (("c2s", conn.requests), ("s2c", conn.answers)):
            (label,) = [
                k for k in texts if f":{conn.client_port}" in k and direction_of(k, conn.client_port) == direction
            ]
            back = run_cli(["encode"], stdin=b"\n".join(texts[label]) + b"\n")
            assert back.stdout == b"".join(sent)

    r = run_cli(["verify", str(path)])
    assert r.code == 0
    warnings = [line.strip() for line in r.text.splitlines() if line.startswith("  warning: ")]
    summaries = [line.strip() for line in r.text.splitlines() if line.startswith("  connection: requests: ")]
    assert sorted(summaries) == ["connection: requests: 10", "connection: requests: 8"]
    assert warnings == [
        "warning: offset 1389: error_response: APPLY_EVENT (id 8) failed with INVALID_TRANSITION: "
        "no transition from paid on pay",
        "warning: offset 1551: error_response: GET_INSTANCE (id 9) failed with INSTANCE_NOT_FOUND: "
        "instance not found: order-404",
        "warning: offset 954: error_response: GET_INSTANCE (id 7) failed with INSTANCE_NOT_FOUND: "
        "instance not found: door-404",
    ]
    assert r.text.splitlines()[-1] == "verify: 4 streams, 38 messages, 0 problems, 3 warnings"


def direction_of(label: str, client_port: int) -> str:
    """c2s when the label's first address is the client's."""
    first = label.split("->")[0]
    return "c2s" if first.rstrip().endswith(f":{client_port}") else "s2c"


def lumberjack_batch() -> tuple[bytes, bytes]:
    """A Lumberjack v2 batch of two JSON events and its ack (facts.md section 1)."""
    events = [json.dumps({"message": f"line {k}"}).encode() for k in (1, 2)]
    sent = b"2W" + struct.pack(">I", 2)
    for seq, ev in enumerate(events, 1):
        sent += b"2J" + struct.pack(">II", seq, len(ev)) + ev
    return sent, b"2A" + struct.pack(">I", 2)


def test_auto_detection_on_a_capture_mixing_ripple_lumberjack_and_rcp(tmp_path: Path) -> None:
    require_tcpdump()
    hello_ok = ok(
        "1",
        {"protocol_version": 1, "wire_mode": "binary_json", "server_name": "s", "server_version": "1", "features": []},
    )
    requests = [request("1", "HELLO", {"protocol_version": 1, "wire_modes": ["binary_json"]}), request("2", "PING")]
    answers = [hello_ok, ok("2", {"pong": True})]
    rcp_sent = b"".join(frame(p) for p in requests)
    rcp_answer = b"".join(frame(p) for p in answers)
    lj_sent, lj_answer = lumberjack_batch()
    # All on one server port: only the bytes tell the protocols apart.
    path = tmp_path / "mixed.pcap"
    payloads = [(DEMO, b""), (lj_sent, lj_answer), (rcp_sent, rcp_answer)]
    # Each connection gets its own protocol's answer (accept order is not connect order).
    answers_by_start = {DEMO[:4]: b"", lj_sent[:4]: lj_answer, rcp_sent[:4]: rcp_answer}
    exchanges = capture_conversation(path, payloads, seed=6, answer_for=lambda first: answers_by_start[first[:4]])
    r = run_cli(["decode", "--format", "jsonl", str(path)])
    assert (r.code, r.stderr) == (0, "")
    groups = by_direction(r.stdout)
    number_of = {}
    for (number, direction), objs in groups.items():
        if direction == "c2s":
            number_of[int(objs[0]["src"].rsplit(":", 1)[1])] = number
    by_sent = {ex.sent: number_of[ex.client_port] for ex in exchanges}
    ripple, lumberjack, rcp = by_sent[DEMO], by_sent[lj_sent], by_sent[rcp_sent]
    assert {o.get("protocol") for o in groups[(lumberjack, "c2s")] + groups[(lumberjack, "s2c")]} == {"lumberjack"}
    assert [o["msg"] for o in groups[(rcp, "c2s")]] == [json.loads(p) for p in requests]
    assert [o["msg"] for o in groups[(rcp, "s2c")]] == [json.loads(p) for p in answers]
    assert {o["protocol"] for o in groups[(rcp, "c2s")] + groups[(rcp, "s2c")]} == {"rcp"}
    # The Ripple connection decodes as the raw stream does.
    raw = run_cli(["decode", "--format", "jsonl", "-"], stdin=DEMO)
    strip = ("source", "connection", "direction", "src", "dst", "community_id", "capture_time_ns", "capture_time")
    assert [{k: v for k, v in o.items() if k not in strip} for o in groups[(ripple, "c2s")]] == [
        {k: v for k, v in json.loads(line).items() if k not in strip} for line in raw.stdout.splitlines()
    ]
    assert (ripple, "s2c") not in groups


# ---------------------------------------------------------------- the tap


def test_tap_between_the_real_client_and_the_server(tmp_path: Path) -> None:
    server = RcpServer(hello_as_frame=True)
    try:
        args = ["--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{server.port}", "-F", "jsonl"]
        # --nice 0: this test is about what the tap shows, not about yielding the
        # CPU; at nice 19 busy processes beside it starve its decoding.
        with run_tap([*args, "--nice", "0"], tmp_path) as tap:
            results = asyncio.run(binary_session(tap.port))
            asyncio.run(jsonl_session(tap.port, hello_as_frame=True))
            wait_for(lambda: len(tap.stdout().splitlines()) >= 38, timeout=30, what="the tap's 38 messages")
            assert tap.interrupt() == 130
            out = tap.stdout()
    finally:
        server.close()
    assert results.error_codes == ["INVALID_TRANSITION", "INSTANCE_NOT_FOUND"]
    groups = by_direction(out)
    # The tap numbers connections as it accepts them, as the server did.
    assert sorted(groups) == [(1, "c2s"), (1, "s2c"), (2, "c2s"), (2, "s2c")]
    for number, conn in enumerate(server.connections, 1):
        for direction, sent in (("c2s", conn.requests), ("s2c", conn.answers)):
            objs = groups[(number, direction)]
            assert [o["msg"] for o in objs] == [json.loads(payload_of(raw)) for raw in sent]
            assert [o["size"] for o in objs] == [len(raw) for raw in sent]
            assert {o["protocol"] for o in objs} == {"rcp"}
    assert [o["type"] for o in groups[(2, "s2c")]] == ["Response"] + ["JsonLine"] * 8
