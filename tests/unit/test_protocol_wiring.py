"""The generic dissector path, end to end through the commands, with a tiny
line protocol registered for the test (tests/unit/lineproto.py): detection,
--protocol, --decode-as, renderers, -Y, verify's analyzer, encode."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ripple_cli.protocols import registry
from tests.conftest import EXAMPLES, run_cli
from tests.replay.pcap import Connection, build_pcap

LINES = b"HELLO alice\nMSG 1 one\nMSG 2 two words\nMSG 4 four\n"
ANSWER = b"HELLO bob\nMSG 1 ack\n"


@pytest.fixture(autouse=True)
def lines_protocol(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(registry.PROTOCOLS, "lines", "tests.unit.lineproto:LinesDissector")
    registry.get.cache_clear()
    yield
    registry.get.cache_clear()


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """A Ripple connection, a lines connection, an HTTP one: in that order."""
    ripple = (EXAMPLES / "demo.ripple").read_bytes()
    conns = [
        Connection(ripple, client_port=40001, server_port=9000),
        Connection(LINES, ANSWER, client_port=40002, server_port=6000),
        Connection(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"HTTP/1.1 200 OK\r\n\r\n", 40003, 80),
    ]
    path = tmp_path / "mixed.pcap"
    path.write_bytes(build_pcap(conns))
    return path


def test_a_raw_file_of_another_protocol_is_recognised(tmp_path: Path) -> None:
    path = tmp_path / "lines.bin"
    path.write_bytes(LINES)
    r = run_cli(["decode", str(path)])
    assert r.stdout.decode().splitlines() == [
        "(lines(Hello((name alice))))",
        "(lines(Msg((n 1)(text one))))",
        '(lines(Msg((n 2)(text"two words"))))',
        "(lines(Msg((n 4)(text four))))",
    ]
    assert r.code == 0  # decode does not apply the connection rules


def test_text_form_reads_back_to_the_same_bytes(tmp_path: Path) -> None:
    path = tmp_path / "lines.bin"
    path.write_bytes(LINES)
    text = run_cli(["decode", str(path)]).stdout
    assert run_cli(["encode"], stdin=text).stdout == LINES
    bad = run_cli(["encode"], stdin=b"(lines(Nope()))\n")
    assert bad.code == 1 and bad.stderr == "ripple: <stdin>: line 1: lines: unknown message b'Nope'\n"


def test_capture_connections_get_their_own_protocols(mixed: Path) -> None:
    r = run_cli(["decode", "--format", "jsonl", "-Y", "protocol == lines", str(mixed)])
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(x["connection"], x["direction"], x["type"], x.get("n")) for x in rows] == [
        (2, "c2s", "Hello", None),
        (2, "c2s", "Msg", 1),
        (2, "c2s", "Msg", 2),
        (2, "c2s", "Msg", 4),
        (2, "s2c", "Hello", None),
        (2, "s2c", "Msg", 1),
    ]
    assert list(rows[0])[:2] == ["v", "source"]
    assert rows[0] == {
        "v": 1,
        "source": str(mixed),
        "connection": 2,
        "direction": "c2s",
        "src": "10.0.0.1:40002",
        "dst": "10.0.0.2:6000",
        "community_id": "1:fD7Zr3tEJmQCjac6oMBDoja8HrE=",
        "capture_time_ns": rows[0]["capture_time_ns"],
        "capture_time": rows[0]["capture_time"],
        "protocol": "lines",
        "offset": 0,
        "size": 12,
        "type": "Hello",
        "name": "alice",
    }
    ripple = run_cli(["decode", "-Y", "connection == 1", str(mixed)]).stdout
    assert ripple == (EXAMPLES / "demo.sexp").read_bytes()


def test_list_streams_names_each_protocol(mixed: Path) -> None:
    text = run_cli(["decode", "--list-streams", str(mixed)], width=200).text
    cells = [line.split()[:2] for line in text.splitlines()[1:]]
    assert cells == [
        ["1:c2s", "ripple"],
        ["1:s2c", "ripple"],
        ["2:c2s", "lines"],
        ["2:s2c", "lines"],
        ["3:c2s", "10.0.0.1:40003"],
        ["3:s2c", "10.0.0.2:80"],
    ]
    assert text.count("no protocol recognised") == 2


def test_protocol_option_restricts_detection(mixed: Path) -> None:
    r = run_cli(["decode", "--protocol", "lines", "--format", "jsonl", str(mixed)])
    assert {json.loads(x)["protocol"] for x in r.stdout.splitlines()} == {"lines"}
    r = run_cli(["decode", "--protocol", "nope", str(mixed)])
    assert r.code == 2 and "'nope' is not a protocol (known: auto, ripple" in r.stderr


def test_decode_as_overrides_detection(mixed: Path) -> None:
    # Port 80 read as lines: its bytes are not, so every line is a problem.
    r = run_cli(["decode", "--decode-as", "80=lines", "-Y", "connection == 3", str(mixed)])
    assert r.code == 1
    assert "bad_line" in r.stderr or "not a line of this protocol" in r.stderr
    r = run_cli(["decode", "--decode-as", "80", str(mixed)])
    assert r.code == 2 and "'80': expected PORT=PROTOCOL" in r.stderr


def test_filter_reads_the_protocol_fields(tmp_path: Path) -> None:
    path = tmp_path / "lines.bin"
    path.write_bytes(LINES)
    r = run_cli(["decode", "-Y", "n >= 2 and text contains o", str(path)])
    assert r.stdout == b'(lines(Msg((n 2)(text"two words"))))\n(lines(Msg((n 4)(text four))))\n'
    assert run_cli(["decode", "-Y", "type == Hello", str(path)]).stdout == b"(lines(Hello((name alice))))\n"
    assert run_cli(["decode", "--type", "msg", "-c", "1", str(path)]).stdout == b"(lines(Msg((n 1)(text one))))\n"
    assert run_cli(["decode", "-Y", "lines and n == 1", str(path)]).stdout == b"(lines(Msg((n 1)(text one))))\n"
    assert run_cli(["decode", "-Y", "ripple", str(path)]).stdout == b""
    r = run_cli(["decode", "-Y", "nn > 1", str(path)])
    assert r.code == 2 and "unknown field 'nn' (did you mean 'n'?)" in r.stderr


def test_verify_runs_the_connection_rules(tmp_path: Path, mixed: Path) -> None:
    path = tmp_path / "lines.bin"
    path.write_bytes(LINES)
    r = run_cli(["verify", "--format", "json", str(path)])
    report = json.loads(r.stdout)
    assert r.code == 1
    (stream,) = report["streams"]
    assert stream["messages"] == 4 and stream["by_type"] == {"Hello": 1, "Msg": 3}
    assert [(p["offset"], p["kind"], p["detail"]) for p in stream["problems"]] == [
        (38, "n_order", "n 4 after 2"),
        (None, "summary", "4 total"),
    ]
    assert stream["analysis"] == {"protocol": "lines", "last": {"file": 4}, "sides": 1}
    # In a capture: a problem of close() goes to the direction it names, the
    # summary to the client's side.
    r = run_cli(["verify", "--stream", "2", str(mixed)])
    assert r.text.replace(str(mixed), "CAP").splitlines() == [
        "CAP [2 10.0.0.1:40002 -> 10.0.0.2:6000]: 4 messages (1 Hello, 3 Msg), 49 bytes: 1 problem",
        "  error: offset 38: n_order: n 4 after 2",
        "  connection: last: client 4, server 1",
        "  connection: sides: 2",
        "CAP [2 10.0.0.2:6000 -> 10.0.0.1:40002]: 2 messages (1 Hello, 1 Msg), 20 bytes: 2 problems",
        "  error: summary: 5 total",
        "  error: server_last: server's last n 1",
        "verify: 2 streams, 6 messages, 3 problems",
    ]


def test_table_shows_type_and_summary(tmp_path: Path) -> None:
    path = tmp_path / "lines.bin"
    path.write_bytes(LINES)
    text = run_cli(["decode", "--format", "table", str(path)], width=100).text
    rows = [line.split() for line in text.splitlines()[2:]]
    assert text.splitlines()[0].split() == ["offset", "time", "(UTC)", "protocol", "type", "summary"]
    assert rows[0] == ["0", "lines", "Hello", "alice"]
    assert rows[2] == ["22", "lines", "Msg", "two", "words"]


def test_list_protocols() -> None:
    text = run_cli(["decode", "--list-protocols"], width=200).text
    names = [line.split()[0] for line in text.splitlines()[1:]]
    assert names[0] == "ripple" and "lines" in names
