"""Pravega through the commands, as a user meets it: raw fixture files with
`ripple decode`/`verify`/`encode`, and a real tcpdump capture of real
sockets mixing Pravega with other protocols (auto-detection)."""

from __future__ import annotations

import json
import re
import socket
import threading
from pathlib import Path

import pytest
from pv_bytes import W1, data_appended, decode, lines
from pv_fixtures import (
    CLEAN,
    GOLDEN,
    PRAVEGA_CLIENT,
    PRAVEGA_SERVER,
    PRAVEGA_STEPS,
    STREAM_VIOLATIONS,
    VIOLATIONS,
    WARNINGS,
)

from tests.capture.livecap import closed, listener, require_tcpdump, tcpdump
from tests.conftest import EXAMPLES, golden, run_cli
from tests.conftest import GOLDEN as GOLDEN_DIR
from tests.protocols.dissector_kit import decode_then_encode, golden_stream, messages
from tests.tap.tapkit import run_tap, wait_for

DIR = "protocols/pravega"
ALL_VIOLATIONS = {**VIOLATIONS, **STREAM_VIOLATIONS}
PROBLEM = re.compile(r"  (?:error|warning): (?:offset \d+: )?(\w+): ")


@pytest.mark.parametrize("name", sorted(ALL_VIOLATIONS))
def test_verify_fails_on_each_rule(name: str) -> None:
    data, kinds = ALL_VIOLATIONS[name]
    path = golden_stream(DIR, f"verify-{name}", data)
    strict = [k for k in kinds if k in WARNINGS] == kinds  # only warnings: they fail under --strict
    r = run_cli(["verify", "--protocol", "pravega", *(["--strict"] if strict else []), str(path)])
    assert r.code == 1, r.text + r.stderr
    golden(f"{DIR}/verify-{name}.verify", r.stdout)
    reported = [m.group(1) for m in map(PROBLEM.match, r.text.splitlines()) if m]
    assert reported == kinds
    if strict:
        assert run_cli(["verify", "--protocol", "pravega", str(path)]).code == 0


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_verify_passes_clean_conversations(name: str) -> None:
    path = golden_stream(DIR, name, CLEAN[name])
    r = run_cli(["verify", "--strict", str(path)])  # recognised without --protocol
    assert r.code == 0, r.text
    assert r.text.splitlines()[-1].endswith(" 0 problems")


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_decode_prints_the_golden_text_and_encode_gives_the_bytes_back(name: str, tmp_path: Path) -> None:
    path = golden_stream(DIR, name, GOLDEN[name])
    r, back = decode_then_encode(["--protocol", "pravega", str(path)])
    assert r.stdout == (GOLDEN_DIR / DIR / f"{name}.sexp").read_bytes()
    # decode's exit status counts errors, not warnings (like verify without --strict)
    errors = (GOLDEN_DIR / DIR / f"{name}.problems").read_text().count("error ")
    assert r.code == (1 if errors else 0)
    assert back.code == 0, back.stderr
    if name != "damaged":
        assert back.stdout == GOLDEN[name]


def test_json_and_filters(tmp_path: Path) -> None:
    path = golden_stream(DIR, "java-batching", GOLDEN["java-batching"])
    r = run_cli(["decode", "-F", "jsonl", "-Y", "data.event_count >= 2", str(path)])
    (block,) = [json.loads(line) for line in r.text.splitlines()]
    assert block["type"] == "AppendBlock" and block["size"] == 102
    assert [rec["kind"] for rec in block["data"]["records"]] == ["Event", "Event", "PartialEvent"]
    acks = run_cli(["decode", "--type", "DataAppended", "-Y", "previous_event_number > 0", str(path)])
    assert acks.stdout.count(b"\n") == 1 and b"(event_number 4)(previous_event_number 3)" in acks.stdout
    by_writer = run_cli(["decode", "-Y", f'writer_id == "{W1}"', str(path)])
    assert by_writer.stdout.count(b"\n") == 8


def test_list_protocols_names_pravega() -> None:
    r = run_cli(["decode", "--list-protocols"], width=200)
    (row,) = [line for line in r.text.splitlines() if line.startswith("pravega ")]
    assert row.split()[:2] == ["pravega", "12345"]
    assert "ripple-pravega(7)" in row


# ------------------------------------------------------------ a real capture

RS_HELLOS = (b"\x01\x00\x00", b"\x02\x00\x00")  # Reactive Streams hellos (ripple's convention)
BAD_STEPS = [*PRAVEGA_STEPS[:3], (PRAVEGA_STEPS[3][0], data_appended(W1, 9, 3, 1, 91)), *PRAVEGA_STEPS[4:]]


def serve_steps(srv: socket.socket, steps: list[tuple[bytes, bytes]]) -> threading.Thread:
    """A scripted segment store for one connection: it reads each request
    whole, then sends its answer."""

    def serve() -> None:
        conn, _ = srv.accept()
        with conn:
            for sent, answer in steps:
                got = b""
                while len(got) < len(sent) and (chunk := conn.recv(len(sent) - len(got))):
                    got += chunk
                conn.sendall(answer)
            while conn.recv(65536):
                pass

    server = threading.Thread(target=serve)
    server.start()
    return server


def client_steps(port: int, steps: list[tuple[bytes, bytes]]) -> tuple[int, bytes]:
    """The client of `serve_steps`: each request, then its whole answer.
    Its local port, and all it received."""
    received = b""
    with socket.create_connection(("127.0.0.1", port)) as c:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for sent, answer in steps:
            c.sendall(sent)
            got = b""
            while len(got) < len(answer) and (chunk := c.recv(65536)):
                got += chunk
            received += got
        c.shutdown(socket.SHUT_WR)
        while chunk := c.recv(65536):
            received += chunk
        return c.getsockname()[1], received


def converse_in_steps(srv: socket.socket, conversations: list[list[tuple[bytes, bytes]]]) -> list[int]:
    """One connection after the other, each request answered once read
    whole: the capture order is causal, as with a real segment store."""
    ports = []
    for steps in conversations:
        server = serve_steps(srv, steps)
        port, received = client_steps(srv.getsockname()[1], steps)
        assert received == b"".join(answer for _sent, answer in steps)
        ports.append(port)
        server.join(10)
    return ports


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, str]]:
    """Two Pravega connections (the second server acks an event never
    sent), a Ripple one and a Reactive Streams one, on one port, captured
    by tcpdump on lo."""
    require_tcpdump()
    path = tmp_path_factory.mktemp("pravega") / "mixed.pcap"
    demo = (EXAMPLES / "demo.ripple").read_bytes()
    names = ["pravega", "pravega-bad", "ripple", "reactive-streams"]
    conversations = [PRAVEGA_STEPS, BAD_STEPS, [(demo, b"")], [RS_HELLOS]]
    ports: list[int] = []
    with listener() as srv, tcpdump(path, f"tcp port {srv.getsockname()[1]}", until=closed(lambda: ports)):
        ports += converse_in_steps(srv, conversations)
    return path, dict(zip(ports, names, strict=True))


def streams(path: Path) -> dict[int, tuple[str, str]]:
    """--list-streams: client port -> (c2s protocol, s2c protocol)."""
    r = run_cli(["decode", "--list-streams", str(path)], width=200)
    out: dict[int, list[str]] = {}
    for row in [line.split() for line in r.text.splitlines()[1:]]:
        client = row[2] if row[0].endswith("c2s") else row[3]
        out.setdefault(int(client.rsplit(":", 1)[1]), []).append(row[1])
    return {port: (p[0], p[1]) for port, p in out.items()}


def test_auto_detection_in_a_mixed_capture(mixed: tuple[Path, dict[int, str]]) -> None:
    path, by_port = mixed
    found = streams(path)
    assert {by_port[port]: protos for port, protos in found.items()} == {
        "pravega": ("pravega", "pravega"),
        "pravega-bad": ("pravega", "pravega"),
        "ripple": ("ripple", "ripple"),
        "reactive-streams": ("reactive-streams", "reactive-streams"),
    }


def interleaved(steps: list[tuple[bytes, bytes]]) -> list[bytes]:
    """The lines of a causal conversation, in capture order."""
    return [line for sent, answer in steps for line in lines(sent) + lines(answer)]


def test_a_captured_connection_decodes_like_its_raw_sides(mixed: tuple[Path, dict[int, str]]) -> None:
    path, by_port = mixed
    r = run_cli(["decode", "-F", "jsonl", "-Y", 'protocol == "pravega"', str(path)])
    got: dict[tuple[str, str], list[str]] = {}
    for obj in map(json.loads, r.text.splitlines()):
        client = obj["src"] if obj["direction"] == "c2s" else obj["dst"]
        got.setdefault((by_port[int(client.rsplit(":", 1)[1])], obj["direction"]), []).append(obj["type"])
    assert got[("pravega", "c2s")] == [
        "Hello",
        "SetupAppend",
        "AppendBlock",
        "AppendBlockEnd",
        "AppendBlock",
        "AppendBlockEnd",
        "ReadSegment",
        "KeepAlive",
    ]
    assert got[("pravega", "s2c")] == [
        "Hello",
        "AppendSetup",
        "DataAppended",
        "DataAppended",
        "SegmentRead",
        "KeepAlive",
    ]
    # The text, in capture order: each request, then its answer.
    sexp = run_cli(["decode", "-Y", 'protocol == "pravega"', str(path)]).stdout.splitlines()
    assert sexp == interleaved(PRAVEGA_STEPS) + interleaved(BAD_STEPS)
    assert lines(PRAVEGA_CLIENT + PRAVEGA_SERVER) == [line for s in PRAVEGA_STEPS for line in lines(s[0])] + [
        line for s in PRAVEGA_STEPS for line in lines(s[1])
    ]


def test_verify_on_the_capture_applies_the_rules_per_connection(mixed: tuple[Path, dict[int, str]]) -> None:
    path, by_port = mixed
    r = run_cli(["verify", "-Y", 'protocol == "pravega"', str(path)])
    assert r.code == 1
    problems = [line.strip() for line in r.text.splitlines() if line.startswith(("  error", "  warning"))]
    assert problems == [f"error: offset 140: ack_unknown_event: writer {W1}: ack of #9, up to #4 sent"]
    bad = next(port for port, name in by_port.items() if name == "pravega-bad")
    headers = [line for line in r.text.splitlines() if line.endswith(" 1 problem") and "[" in line]
    assert len(headers) == 1 and f":{bad}]" in headers[0]
    # The connection summary, on the client's side of each connection.
    writers = [line for line in r.text.splitlines() if line.startswith("  connection: writers ")]
    assert writers == [
        f"  connection: writers {W1}: segment examples/trades/0.#epoch.0, appends 2, events 4, "
        f"last_event_number 4, acked {acked}, max_ack_latency_ns {latency}"
        for acked, latency in ((4, writers[0].rsplit(" ", 1)[1]), (9, writers[1].rsplit(" ", 1)[1]))
    ]


def test_tap_between_a_client_and_a_segment_store(tmp_path: Path) -> None:
    # The tap relays every byte unchanged and shows both directions.
    with listener() as srv:
        server = serve_steps(srv, PRAVEGA_STEPS)
        upstream = srv.getsockname()[1]
        args = [
            "--protocol",
            "pravega",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            f"127.0.0.1:{upstream}",
            "-F",
            "jsonl",
        ]
        # --nice 0: this test is about what the tap shows, not about yielding the
        # CPU; at nice 19 busy processes beside it starve its decoding.
        with run_tap([*args, "--nice", "0"], tmp_path) as tap:
            _port, received = client_steps(tap.port, PRAVEGA_STEPS)
            wait_for(lambda: len(tap.stdout().splitlines()) >= 14, timeout=30, what="the tap's 14 messages")
            assert tap.interrupt() == 130
            out = [json.loads(line) for line in tap.stdout().splitlines()]
        server.join(10)
    assert received == PRAVEGA_SERVER
    for direction, data in (("c2s", PRAVEGA_CLIENT), ("s2c", PRAVEGA_SERVER)):
        mine = [o for o in out if o["direction"] == direction]
        assert [(o["offset"], o["size"]) for o in mine] == [(m.offset, m.size) for m in messages(decode([data]))]
        assert {o["protocol"] for o in mine} == {"pravega"}
    joined = [o for o in out if o.get("completes_partial_event")]
    assert [o["completes_partial_event"][0]["data"] for o in joined] == ['{"sym":"NVDA","qty":7}']
