"""The Reactive Streams dissector of `ripple wireshark --protocol
reactive-streams` in the real tshark, against `ripple decode --format
jsonl`: both halves of a conversation holding every message type (fixed
and length-prefixed elements, packed elements, split elements, unbounded
demand, a non-ASCII error) written over real sockets in random pieces and
captured with tcpdump, decoded as Reactive Streams on the server's port
with the port preference; and the bundled examples/streams.pcap on the
default port 7373."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ripple_cli.codec.values import bytes_to_json
from tests.capture.livecap import capture_conversation
from tests.protocols.reactive_streams.rs_bytes import (
    UNBOUNDED,
    cancel,
    client_hello,
    goodbye,
    goodbye_ack,
    int32,
    last_part,
    on_complete,
    on_error,
    on_next,
    on_next_packed,
    on_subscribe,
    part,
    request,
    server_hello,
    subscribe,
)
from tests.wireshark import tsharkkit as kit
from tests.wireshark.tsharkkit import REPO, Envelope, dissector, envelopes, jsonl, port_of, tshark

CLIENT = b"".join(
    (
        client_hello(0, [1, 300]),
        subscribe(b"trades", 1),
        request(1, 3),
        subscribe(b"ticks", 2, 8),
        cancel(2),
        request(1, UNBOUNDED),
        subscribe(b"trades?from=2", 3, 5),
        goodbye(b"done"),
    )
)
SERVER = b"".join(
    (
        server_hello(0, [1]),
        on_subscribe(1, 0),
        on_next(1, b'{"px":101.5}'),
        on_next(1, b""),
        part(1, 7, b"hello, "),
        part(1, 7, b"split "),
        last_part(1, 7, b"world"),
        on_subscribe(2, 4),
        on_next(2, int32(42), fixed=True),
        on_next_packed(2, [int32(1), int32(2), int32(3)]),
        on_next(1, b"x" * 5000),
        on_complete(1),
        on_subscribe(3, 0),
        on_error(3, "publisher gone \u2014 restart".encode()),
        goodbye_ack(b"bye"),
    )
)
INTS = ("version", "subscriber", "initial_demand", "demand", "element_size", "count", "element_id")
BYTES = ("publisher", "error", "reason", "message", "data")


# `ripple decode -Y` expressions and the display filters on the same fields.
FILTERS = {
    'type == "OnNext"': 'rs.type == "OnNext"',
    "subscriber == 2": "rs.subscriber == 2",
    'publisher == "trades"': 'rs.publisher == "trades"',
    "version == 0": "rs.version == 0",
    "initial_demand == 0": "rs.initial_demand == 0",
}


@pytest.fixture(scope="module")
def lua(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return dissector("reactive-streams", tmp_path_factory)


def expected(pcap: Path, *args: str) -> dict[tuple[int, int], list[dict[str, Any]]]:
    out: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for d in jsonl(pcap, *args):
        assert "problem" not in d, d
        row = {k: v for k, v in d.items() if k in ("type", "extensions", "elements", *INTS, *BYTES)}
        if d["type"] == "OnNext":
            row["elements"] = [d["element"]]
        out.setdefault((port_of(d["src"]), port_of(d["dst"])), []).append(row)
    return out


def shown(e: Envelope) -> dict[str, Any]:
    row: dict[str, Any] = {"type": e.show("rs.type")}
    for f in e.node.iter("field"):
        name = f.get("name", "").removeprefix("rs.")
        if name in INTS:
            row[name] = int(f.get("show", ""))
        elif name in BYTES:
            row[name] = bytes_to_json(bytes.fromhex(f.get("value", "")))
        elif name == "extensions":
            row.setdefault("extensions", []).append(int(f.get("show", "")))
        elif name == "element":
            row.setdefault("elements", []).append(bytes_to_json(bytes.fromhex(f.get("value", ""))))
    if row["type"] in ("ClientHello", "ServerHello"):
        row.setdefault("extensions", [])
    if row["type"] == "OnNextPacked" and "elements" not in row:
        row["elements"] = []
    return row


def dissected(lua: Path, pcap: Path, *args: str) -> dict[tuple[int, int], list[dict[str, Any]]]:
    out: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for e in envelopes(tshark(lua, pcap, *args, "-T", "pdml"), "rs"):
        out.setdefault(e.ports, []).append(shown(e))
    return out


def test_conversation_message_for_message(lua: Path, tmp_path: Path) -> None:
    pcap = tmp_path / "rs.pcap"
    (exchange,) = capture_conversation(pcap, [(CLIENT, SERVER)], seed=5, max_write=50)
    port = _port_of_server(lua, pcap, exchange.client_port)
    want = expected(pcap, "--decode-as", f"{port}=reactive-streams")
    assert sum(len(v) for v in want.values()) == 23
    assert dissected(lua, pcap, "-o", f"rs.port:{port}") == want
    n = kit.assert_info_is_table(lua, pcap, "rs", "-o", f"rs.port:{port}", decode_as={port: "reactive-streams"})
    assert n == 23
    filters = {
        **FILTERS,
        "parts == 3": "rs.parts == 3",
        "element_id == 7": "rs.element_id == 7",
        "extensions contains 300": "rs.extensions == 300",
        "demand == 9223372036854775807": "rs.demand == 9223372036854775807",
    }
    decode = ("--decode-as", f"{port}=reactive-streams")
    kit.assert_same_selection(lua, pcap, "rs", filters, "-o", f"rs.port:{port}", decode=decode)


def _port_of_server(lua: Path, pcap: Path, client_port: int) -> int:
    ports = {int(p) for p in tshark(lua, pcap, "-T", "fields", "-e", "tcp.dstport").split()}
    (port,) = ports - {client_port}
    return port


def test_bundled_capture_on_the_default_port(lua: Path) -> None:
    pcap = REPO / "examples" / "streams.pcap"
    want = expected(pcap)
    assert dissected(lua, pcap) == want


def test_info_column_is_the_table_summary_on_the_bundled_capture(lua: Path) -> None:
    assert kit.assert_info_is_table(lua, REPO / "examples" / "streams.pcap", "rs") > 10


def test_display_filters_select_what_ripple_selects(lua: Path) -> None:
    kit.assert_same_selection(lua, REPO / "examples" / "streams.pcap", "rs", FILTERS)
