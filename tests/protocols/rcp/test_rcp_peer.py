"""The real rstmdb client (PyPI rstmdb 0.2.1) against the test server
(rcppeer.py), over real sockets: every request and every response or event
decodes through ripple's RCP decoder to exactly the bytes that were sent,
in any chunking, and the connection rules find exactly the refused ops."""

from __future__ import annotations

import asyncio
import json
import random

import pytest
from rcpkit import DISSECTOR
from rcppeer import BinaryResults, RcpServer, Served, binary_session, jsonl_session

from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.base import DissectOptions, ProtoMessage
from ripple_cli.protocols.rcp.analysis import RcpAnalyzer
from ripple_cli.protocols.rcp.stream import RcpStream
from ripple_cli.sexp.parse import parse_one
from tests.protocols.dissector_kit import split


def payload_of(raw: bytes) -> bytes:
    """The JSON of one message as sent: a frame's payload, or a line without its newline."""
    if raw.startswith(b"RCPX"):
        return raw[18 + int.from_bytes(raw[8:10], "big") :]
    return raw[:-1]


def decode_direction(data: bytes, from_client: bool, seed: int) -> list[ProtoMessage]:
    stream = RcpStream(DissectOptions(), from_client)
    items = []
    for piece in split(data, random.Random(seed), 700):
        items += stream.feed(piece)
    items += stream.finish()
    assert [i for i in items if isinstance(i, Problem)] == []
    return [i for i in items if isinstance(i, ProtoMessage)]


def assert_decodes_exactly(conn: Served, seed: int) -> tuple[list[ProtoMessage], list[ProtoMessage]]:
    assert bytes(conn.c2s) == b"".join(conn.requests)
    assert bytes(conn.s2c) == b"".join(conn.answers)
    out = []
    for data, sent, from_client in ((conn.c2s, conn.requests, True), (conn.s2c, conn.answers, False)):
        msgs = decode_direction(bytes(data), from_client, seed)
        assert [DISSECTOR.encode(parse_one(m.line)) for m in msgs] == sent
        assert [m.fields["msg"] for m in msgs] == [json.loads(payload_of(raw)) for raw in sent]
        assert [m.size for m in msgs] == [len(raw) for raw in sent]
        out.append(msgs)
    return out[0], out[1]


def analyze(server: RcpServer) -> tuple[RcpAnalyzer, list[tuple[str, str]]]:
    """The connection rules over the server's log, in the order it read and wrote."""
    streams = {d: RcpStream(DissectOptions(), d) for d in (True, False)}
    analyzer = RcpAnalyzer()
    found = []
    for _number, from_client, raw in server.log:
        for item in streams[from_client].feed(raw):
            assert isinstance(item, ProtoMessage)
            found += analyzer.observe(from_client, item)
    found += analyzer.close()
    return analyzer, [(p.kind, p.detail) for p in found]


def test_binary_session_of_the_real_client() -> None:
    server = RcpServer()
    try:
        results = asyncio.run(binary_session(server.port))
    finally:
        server.close()
    assert results == BinaryResults(
        pong=True,
        info={
            "server_name": "ripple-test",
            "server_version": "0.0.1",
            "protocol_version": 1,
            "features": ["idempotency", "batch", "wal_read"],
            "max_frame_bytes": 16777216,
            "max_batch_ops": 100,
        },
        created=True,
        state="created",
        subscription="sub-1",
        to_state="paid",
        event_to_state="paid",
        event_subscription="sub-1",
        error_codes=["INVALID_TRANSITION", "INSTANCE_NOT_FOUND"],
    )
    (conn,) = server.connections
    for seed in range(5):
        requests, answers = assert_decodes_exactly(conn, seed)
    assert [m.fields["op"] for m in requests] == [
        "HELLO",
        "PING",
        "INFO",
        "PUT_MACHINE",
        "CREATE_INSTANCE",
        "WATCH_ALL",
        "APPLY_EVENT",
        "APPLY_EVENT",
        "GET_INSTANCE",
        "BYE",
    ]
    assert [m.fields["id"] for m in requests] == [str(k) for k in range(1, 11)]
    assert {m.type for m in requests} == {"Request"}
    assert [m.type for m in answers] == ["Response"] * 7 + ["Event"] + ["Response"] * 3
    assert [m.fields.get("status") for m in answers if m.type == "Response"] == ["ok"] * 7 + ["error", "error", "ok"]
    assert [m.fields.get("error_code") for m in answers if m.fields.get("status") == "error"] == [
        "INVALID_TRANSITION",
        "INSTANCE_NOT_FOUND",
    ]
    # The client's first frame, byte for byte as the facts record it.
    assert conn.requests[0][:18].hex() == "52435058000100010000000000a222a3d727"
    analyzer, problems = analyze(server)
    assert problems == [
        ("error_response", "APPLY_EVENT (id 8) failed with INVALID_TRANSITION: no transition from paid on pay"),
        ("error_response", "GET_INSTANCE (id 9) failed with INSTANCE_NOT_FOUND: instance not found: order-404"),
    ]
    stats = {s.op: s.to_json() for s in analyzer.stats()}
    assert stats["APPLY_EVENT"] == {
        "op": "APPLY_EVENT",
        "requests": 2,
        "answered": 2,
        "errors": {"INVALID_TRANSITION": 1},
        "unanswered": 0,
    }
    assert analyzer.events == 1


@pytest.mark.parametrize("hello_as_frame", [False, True], ids=["hello-as-line", "hello-as-frame"])
def test_jsonl_session(hello_as_frame: bool) -> None:
    server = RcpServer(hello_as_frame=hello_as_frame)
    try:
        results = asyncio.run(jsonl_session(server.port, hello_as_frame))
    finally:
        server.close()
    assert results.wire_mode == "jsonl"
    assert [r.status for r in results.responses] == ["ok"] * 6 + ["error", "ok"]
    assert [(e.subscription_id, e.to_state, e.ctx) for e in results.events] == [("sub-1", "paid", None)]
    (conn,) = server.connections
    for seed in range(5):
        requests, answers = assert_decodes_exactly(conn, seed)
    assert {m.type for m in requests} == {"Request"}
    first = "Response" if hello_as_frame else "JsonLine"
    assert [m.type for m in answers] == [first] + ["JsonLine"] * 8
    assert [m.fields["kind"] for m in answers] == ["response"] * 6 + ["event", "response", "response"]
    assert [m.fields["wire"] for m in answers] == ["frame" if hello_as_frame else "jsonl"] + ["jsonl"] * 8
    # The same bytes as one raw file: decided by content, no direction.
    raw = RcpStream(DissectOptions(), None)
    items = raw.feed(bytes(conn.s2c)) + raw.finish()
    assert [i.type for i in items if isinstance(i, ProtoMessage)] == [m.type for m in answers]
    _, problems = analyze(server)
    assert problems == [
        ("error_response", "GET_INSTANCE (id 7) failed with INSTANCE_NOT_FOUND: instance not found: door-404"),
    ]
