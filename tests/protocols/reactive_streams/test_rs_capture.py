"""Detection, and Reactive Streams in real captures: real sockets on
127.0.0.1 captured by tcpdump, mixed with a Ripple connection and a plain
HTTP one, decoded with --protocol auto; verify on a capture whose two sides
break a rule; `ripple tap` as a proxy between two peers.  (No Reactive Streams implementation exists to run as a peer:
each side writes its half of the conversation with ripple's convention.)"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from pathlib import Path

import pytest
from rs_bytes import (
    CONVERSATION,
    DISSECTOR,
    cancel,
    client_hello,
    decode,
    goodbye,
    goodbye_ack,
    int32,
    last_part,
    lp,
    on_complete,
    on_next,
    on_next_packed,
    on_subscribe,
    part,
    request,
    server_hello,
    subscribe,
)

from ripple_cli.protocols.base import Detection
from tests.capture.livecap import DEMO, closed, converse, listener, tcpdump
from tests.conftest import run_cli
from tests.protocols.dissector_kit import messages
from tests.tap.tapkit import run_tap, wait_for

# One conversation, step by step (True: the client writes): the client
# subscribes to two publishers of the server, the server to one of the
# client's.  Each step is read by the other side before the next is written,
# so that the capture shows them in a causal order, as real peers would.
C, S = True, False
STEPS: list[tuple[bool, bytes]] = [
    (C, client_hello(0, [1]) + subscribe(b"trades", 1, 2) + subscribe(b"ticks", 2, 0)),  # pipelined
    (S, server_hello(0, [1]) + on_subscribe(1, 0) + on_subscribe(2, 4)),
    (S, subscribe(b"logs", 1, 1)),
    (C, on_subscribe(1, 0) + request(2, 4)),
    (S, on_next(1, b'{"px":1}') + part(1, 3, b"x" * 3000)),  # a split element across TCP segments
    (C, on_next(1, b"from the client")),
    (S, last_part(1, 3, b"y" * 3000) + on_next_packed(2, [int32(1), int32(2), int32(3), int32(4)])),
    (C, cancel(2)),
    (S, on_complete(1)),
    (C, goodbye(b"done")),
    (S, goodbye_ack(b"bye")),
]
CLIENT = b"".join(d for side, d in STEPS if side)
SERVER = b"".join(d for side, d in STEPS if not side)
HTTP = (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"", Detection.MORE),
        (b"\x01", Detection.MORE),
        (b"\x01\x00", Detection.MORE),
        (b"\x01\x00\x00", Detection.YES),
        (b"\x02\x00\x02\x01", Detection.MORE),
        (b"\x02\x00\x02\x01\xac\x02", Detection.YES),
        (client_hello(0, [1]) + subscribe(b"trades", 1, 2)[:3], Detection.YES),  # a partial message waits
        (CONVERSATION, Detection.YES),
        (b"\x01\x01\x00", Detection.NO),  # version 1: not taken (strict)
        (b"\x01\x00\x80\x00", Detection.NO),  # non-minimal count
        (b"\x01\x00" + bytes([65]) + bytes(65), Detection.NO),  # 65 extensions
        (b"\x01\x00\x01\x80\x80\x80\x80\x10", Detection.NO),  # extension Id of 2^32
        (b"\x01\x00\x00\x63", Detection.NO),  # then no message
        (b"\x01\x00\x00\x07\x01\x05", Detection.YES),  # then an OnNext still arriving
        (client_hello() + b"\x04\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", Detection.NO),  # bad Long
        (b"\x00\x00\x00\x00", Detection.NO),
        (b"\x03" + lp(b"trades"), Detection.NO),  # not a hello first
        (DEMO[:64], Detection.NO),  # Ripple
        (b"2W\x00\x00\x00\x01", Detection.NO),  # Lumberjack v2 window
        (b"\xff\xff\xff\x81\x00\x00\x00\x10", Detection.NO),  # Pravega Hello
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", Detection.NO),  # TLS
        (HTTP[0], Detection.NO),
    ],
)
def test_detect(head: bytes, expected: Detection) -> None:
    assert DISSECTOR.detect(head) is expected


@dataclass
class Capture:
    path: Path
    client_ports: list[int]
    server_port: int


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, "the other side closed early"
        data += chunk
    return data


def play(srv: socket.socket, steps: list[tuple[bool, bytes]], via: tuple[str, int] | None = None) -> int:
    """One connection to `srv` (or through `via`, a proxy to it) playing the
    steps in turn, each read whole by the other side; the client's port."""
    with socket.create_connection(via or srv.getsockname()[:2]) as client:
        server, _addr = srv.accept()
        with server:
            for from_client, data in steps:
                writer, reader = (client, server) if from_client else (server, client)
                writer.sendall(data)
                assert _read_exactly(reader, len(data)) == data
            port = client.getsockname()[1]
            client.shutdown(socket.SHUT_WR)
            server.shutdown(socket.SHUT_WR)
            assert client.recv(1) == b"" and server.recv(1) == b""
    return port


def capture(path: Path, conversations: list[list[tuple[bool, bytes]] | tuple[bytes, bytes]], seed: int) -> Capture:
    """Each conversation on its own connection, one after the other, under
    tcpdump: scripted steps, or (client bytes, server bytes) written at once."""
    ports: list[int] = []
    until = closed(lambda: ports)
    with listener() as srv, tcpdump(path, f"tcp port {srv.getsockname()[1]}", until=until):
        port = srv.getsockname()[1]
        for k, conv in enumerate(conversations):
            if isinstance(conv, list):
                ports.append(play(srv, conv))
            else:
                ports += [e.client_port for e in converse(srv, [conv], seed=seed + k)]
    return Capture(path, ports, port)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Capture:
    path = tmp_path_factory.mktemp("rs") / "mixed.pcap"
    return capture(path, [STEPS, (DEMO[:20000], b""), HTTP], seed=11)


def test_mixed_capture_is_recognised(mixed: Capture) -> None:
    r = run_cli(["decode", "-F", "jsonl", str(mixed.path)])
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    by_conn: dict[int, set[str]] = {}
    for row in rows:
        by_conn.setdefault(row["connection"], set()).add(row.get("protocol", "ripple"))
    assert by_conn == {1: {"reactive-streams"}, 2: {"ripple"}}  # the HTTP connection is left undecoded
    rs = [row for row in rows if row["connection"] == 1]
    for direction, half in (("c2s", CLIENT), ("s2c", SERVER)):
        got = [(row["offset"], row["type"]) for row in rs if row["direction"] == direction]
        assert got == [(m.offset, m.type) for m in messages(decode([half]))]
    last = next(row for row in rs if row["type"] == "OnNextLastPart")
    assert last["element"] == "x" * 3000 + "y" * 3000 and last["parts"] == 2


def test_mixed_capture_text_equals_each_halfs_decode(mixed: Capture) -> None:
    r = run_cli(["decode", "--stream", "1", str(mixed.path)])
    lines = r.stdout.splitlines()
    expected = [m.line for m in messages(decode([CLIENT]))] + [m.line for m in messages(decode([SERVER]))]
    assert sorted(lines) == sorted(expected)
    assert len(lines) == 18


def test_verify_clean_conversation(mixed: Capture) -> None:
    r = run_cli(["verify", "--stream", "1", str(mixed.path)])
    assert r.code == 0, r.stdout + r.stderr.encode()


def test_verify_demand_broken_across_directions(tmp_path: Path) -> None:
    # The client asks for 1 element; the server sends 2, then completes.
    steps = [
        (C, client_hello() + subscribe(b"p", 1, 1)),
        (S, server_hello() + on_subscribe(1) + on_next(1, b"a") + on_next(1, b"b") + on_complete(1)),
    ]
    cap = capture(tmp_path / "demand.pcap", [steps], seed=5)
    r = run_cli(["verify", "-F", "json", "--protocol", "reactive-streams", str(cap.path)])
    assert r.code == 1
    report = json.loads(r.stdout)
    c2s, s2c = report["streams"]
    assert c2s["problems"] == []
    assert [(p["kind"], p["offset"], p["extra"]) for p in s2c["problems"]] == [
        ("demand_exceeded", 3 + 3 + 4, {"subscriber": 1})  # the second OnNext
    ]
    assert _problems(report) == s2c["problems"]


def _problems(report: object) -> list[dict[str, object]]:
    """Every problem object in verify's JSON report, wherever it nests."""
    out: list[dict[str, object]] = []
    if isinstance(report, dict):
        if "kind" in report and "offset" in report:
            out.append(report)
        for v in report.values():
            out += _problems(v)
    elif isinstance(report, list):
        for v in report:
            out += _problems(v)
    return out


def test_version_mismatch_detected_by_the_other_side(tmp_path: Path) -> None:
    # The client's hello (version 1) is not taken by detection; the server's
    # (version 0) is, and decides for the connection.  The server answers
    # with a goodbye, as the draft says: verify passes with a warning.
    steps = [(C, client_hello(1)), (S, server_hello(0) + goodbye(b"version 0 only"))]
    cap = capture(tmp_path / "mismatch.pcap", [steps], seed=1)
    r = run_cli(["decode", "-F", "jsonl", str(cap.path)])
    assert [(row["direction"], row["type"]) for row in map(json.loads, r.stdout.splitlines())] == [
        ("c2s", "ClientHello"),
        ("s2c", "ServerHello"),
        ("s2c", "Goodbye"),
    ]
    r = run_cli(["verify", str(cap.path)])
    assert r.code == 0, r.text
    assert "warning: offset 0: unsupported_version: ClientHello of version 1" in r.text


def test_decode_as_for_a_connection_detection_does_not_take(tmp_path: Path) -> None:
    steps = [(C, client_hello(1)), (S, server_hello(1))]
    cap = capture(tmp_path / "v1.pcap", [steps], seed=2)
    assert run_cli(["decode", str(cap.path)]).stdout == b""
    r = run_cli(["decode", "--decode-as", f"{cap.server_port}=reactive-streams", str(cap.path)])
    assert r.text.splitlines() == [
        "(reactive-streams(ClientHello((version 1)(extensions()))))",
        "(reactive-streams(ServerHello((version 1)(extensions()))))",
    ]


def test_tap_between_two_peers(tmp_path: Path) -> None:
    # The peers check that every step arrives unaltered (play); the tap shows
    # each direction's messages as it goes.
    with listener() as srv:
        args = ["--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{srv.getsockname()[1]}", "-F", "jsonl"]
        # --nice 0: this test is about what the tap shows, not about yielding the
        # CPU; at nice 19 busy processes beside it starve its decoding.
        with run_tap([*args, "--nice", "0"], tmp_path) as tap:
            play(srv, STEPS, via=("127.0.0.1", tap.port))
            wait_for(lambda: len(tap.stdout().splitlines()) >= 18, timeout=30, what="the tap's 18 messages")
            assert tap.interrupt() == 130
            rows = [json.loads(line) for line in tap.stdout().splitlines()]
    for direction, half in (("c2s", CLIENT), ("s2c", SERVER)):
        got = [(row["protocol"], row["offset"], row["type"]) for row in rows if row["direction"] == direction]
        assert got == [("reactive-streams", m.offset, m.type) for m in messages(decode([half]))]
