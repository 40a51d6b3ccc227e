"""The Lua dissector `ripple wireshark` writes, in the real tshark, against
`ripple decode --format jsonl` of the same capture, message for message.

The streams are the OCaml interop streams (ripple_gen: every field type,
nested records, lists, options of options, Int32, enums, NaN and the
infinities, strings past 64 KiB, Deltas of an undeclared schema), sent over
real TCP sockets on lo and captured with tcpdump; the server listens on an
ephemeral port, so the dissector is found by its heuristic.  tshark runs
once per capture and output form (module-scoped fixtures).  Sent one
envelope a packet (one CRC damaged), the stream also shows that display
filters on ripple.* fields, typed ones too, select what `ripple decode -Y`
selects, and the typed fields are checked to have the names
ripple-wireshark(1) gives them."""

from __future__ import annotations

import io
import random
import socket
import struct
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ripple_cli.cli.commands.schema import schemas_in_input
from ripple_cli.codec.envelope import HEADER, MAGIC, build_envelope
from ripple_cli.codec.schema import EnumOf, Field, FieldType, ListOf, OptionOf, Prim, RecordOf, Schema
from ripple_cli.sexp.tree import float_atom
from ripple_cli.terminal.environment import Environment
from tests.capture.livecap import DEMO, bound, capture_conversation, closed, listener, tcpdump
from tests.conftest import EXAMPLES
from tests.interop.conftest import ocaml_tools  # noqa: F401 - the session fixture that builds the OCaml tools
from tests.interop.ocamlkit import OcamlTools
from tests.wireshark import tsharkkit as kit
from tests.wireshark.tsharkkit import (
    Envelope,
    envelopes,
    field_types,
    handshake_view,
    jsonl,
    message,
    require_tshark,
    ripple,
    tshark,
    typed_fields,
)

COUNT = 300  # every field type and message type shows up (test_coverage)


@dataclass
class Captured:
    pcap: Path
    lua: Path
    schemas: dict[bytes, Schema]
    port: int
    decoded: list[dict[str, Any]]  # ripple decode --format jsonl
    envelopes: list[Envelope]  # tshark -T pdml


def captured(tmp: Path, stream: bytes, seed: int, max_write: int) -> Captured:
    require_tshark()
    pcap = tmp / "cap.pcap"
    exchanges = capture_conversation(pcap, [(stream, b"")], seed=seed, max_write=max_write)
    assert [e.sent for e in exchanges] == [stream]
    return dissected(tmp, pcap, stream)


def dissected(tmp: Path, pcap: Path, stream: bytes) -> Captured:
    """The capture of `stream`, its dissector written from it, and what
    ripple and tshark make of it."""
    lua = tmp / "ripple.lua"
    ripple("wireshark", pcap, "-o", lua)
    port = int(tshark(lua, pcap, "-T", "fields", "-e", "tcp.dstport", "-c", "1").strip())
    schemas = {s.fingerprint: s for _, s in schemas_in_input("-", Environment(stdin=io.BytesIO(stream)), 1 << 24)}
    pdml = tshark(lua, pcap, "-T", "pdml", in_any_order=True)
    return Captured(pcap, lua, schemas, port, jsonl(pcap), envelopes(pdml))


@pytest.fixture(scope="module")
def interop_stream(ocaml_tools: OcamlTools, tmp_path_factory: pytest.TempPathFactory) -> bytes:  # noqa: F811
    import subprocess

    out = tmp_path_factory.mktemp("ws-gen") / "stream.bin"
    subprocess.run(
        [ocaml_tools.gen, "-profile", "interop", "-seed", "1", "-count", str(COUNT), "-bin", out], check=True
    )
    return out.read_bytes()


@pytest.fixture(scope="module")
def whole(interop_stream: bytes, tmp_path_factory: pytest.TempPathFactory) -> Captured:
    """The stream in writes of up to 3000 bytes: several envelopes a segment."""
    return captured(tmp_path_factory.mktemp("ws-whole"), interop_stream, seed=1, max_write=3000)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Captured:
    """The bundled demo stream, whose strings print as they are."""
    return captured(tmp_path_factory.mktemp("ws-demo"), DEMO, seed=3, max_write=3000)


BAD = 5  # the envelope whose CRC is damaged


@pytest.fixture(scope="module")
def corrupt(tmp_path_factory: pytest.TempPathFactory) -> Captured:
    """The demo stream with the last CRC byte of envelope BAD flipped."""
    data = bytearray(DEMO)
    pos = 0
    for _ in range(BAD):
        (n,) = struct.unpack_from("<i", data, pos + 55)
        pos += 63 + n
    data[pos - 1] ^= 0xFF
    return captured(tmp_path_factory.mktemp("ws-corrupt"), bytes(data), seed=4, max_write=3000)


MALFORMED = 3  # the envelope whose payload does not decode (its CRC good)


@pytest.fixture(scope="module")
def malformed(tmp_path_factory: pytest.TempPathFactory) -> Captured:
    """The demo stream with envelope MALFORMED's payload replaced by one
    byte that is no message, under a correct CRC."""
    frames = frames_of(DEMO)
    _magic, _v, tag, flags, seq, time_ns, fp, _n = HEADER.unpack_from(frames[MALFORMED - 1])
    frames[MALFORMED - 1] = build_envelope(tag, seq, time_ns, fp.rstrip(b"\0"), b"\xfe", flags)
    return captured(tmp_path_factory.mktemp("ws-malformed"), b"".join(frames), seed=6, max_write=3000)


@pytest.fixture(scope="module")
def split(interop_stream: bytes, tmp_path_factory: pytest.TempPathFactory) -> Captured:
    """The whole stream in writes of 1 to 97 bytes, each a segment of its
    own (paced): segment boundaries fall anywhere, in headers, payloads and
    CRCs, and a 64 KiB envelope spans hundreds of segments."""
    require_tshark()
    tmp = tmp_path_factory.mktemp("ws-split")
    rng = random.Random(2)
    writes, pos = [], 0
    while pos < len(interop_stream):
        n = rng.randint(1, 97)
        writes.append(interop_stream[pos : pos + n])
        pos += n
    capture_paced(tmp / "cap.pcap", writes)
    return dissected(tmp, tmp / "cap.pcap", interop_stream)


def frames_of(stream: bytes) -> list[bytes]:
    out = []
    pos = 0
    while pos < len(stream):
        (n,) = struct.unpack_from("<i", stream, pos + 55)
        out.append(stream[pos : pos + 63 + n])
        pos += 63 + n
    return out


def capture_paced(pcap: Path, writes: Iterable[bytes]) -> None:
    """The writes sent over TCP on lo, each once the server has read every
    byte before it: with TCP_NODELAY each write is a segment of its own (two
    for one above lo's MTU; nothing coalesces them), so that, one envelope a
    write, the packets a display filter selects are its envelopes."""
    writes = list(writes)
    # Ring slots of the largest segment, not of loopback's 64 KiB: thousands
    # of small segments then fit in tcpdump's buffer even while a busy
    # machine keeps it from running (192 were dropped by the kernel once,
    # in CI, at the default snap length).
    snap = min(66000, max((len(w) for w in writes), default=0) + 256)
    read = 0
    progress = threading.Condition()
    client: list[int] = []

    def all_read(n: int) -> Callable[[], bool]:
        return lambda: read == n

    def serve(srv: socket.socket) -> None:
        nonlocal read
        conn, _ = srv.accept()
        with conn:
            while chunk := conn.recv(1 << 20):
                with progress:
                    read += len(chunk)
                    progress.notify_all()

    with (
        listener() as srv,
        tcpdump(pcap, f"tcp port {srv.getsockname()[1]}", extra=("-s", str(snap)), until=closed(lambda: client)),
    ):
        server = threading.Thread(target=serve, args=(srv,))
        server.start()
        with bound(client=True) as c:
            c.connect(srv.getsockname()[:2])
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            client.append(c.getsockname()[1])
            sent = 0
            for data in writes:
                c.sendall(data)
                sent += len(data)
                with progress:
                    assert progress.wait_for(all_read(sent), timeout=30), (read, sent)
            c.shutdown(socket.SHUT_WR)
            server.join(30)
            assert c.recv(1) == b""  # the server's FIN


@pytest.fixture(scope="module")
def paced(interop_stream: bytes, tmp_path_factory: pytest.TempPathFactory) -> Captured:
    """The stream one envelope a packet, the CRC of its first vwap Set with
    a price above 100 damaged (its last byte flipped)."""
    tmp = tmp_path_factory.mktemp("ws-paced")
    (tmp / "stream.bin").write_bytes(interop_stream)
    target = next(
        d
        for d in jsonl(tmp / "stream.bin")
        if d["schema"] == "vwap/v2"
        and d["type"] == "Delta"
        and d["msg"]["delta"]["op"] == "set"
        and isinstance(d["msg"]["delta"]["row"]["price"], float)
        and d["msg"]["delta"]["row"]["price"] > 100
    )
    data = bytearray(interop_stream)
    data[target["offset"] + target["size"] - 1] ^= 0xFF
    require_tshark()
    capture_paced(tmp / "cap.pcap", frames_of(bytes(data)))
    return dissected(tmp, tmp / "cap.pcap", bytes(data))


def envelope_view(e: Envelope) -> dict[str, Any]:
    return {
        "seq": int(e.show("ripple.seq") or ""),
        "time_ns": int(e.show("ripple.time_ns") or ""),
        "schema": e.show("ripple.schema"),
        "flags": int(e.show("ripple.flags") or "", 0),
        "type": e.show("ripple.type"),
        "size": int(e.show("ripple.size") or ""),
    }


def decoded_view(d: dict[str, Any]) -> dict[str, Any]:
    return {k: d[k] for k in ("seq", "time_ns", "schema", "flags", "type", "size")}


def assert_same_messages(c: Captured) -> None:
    assert [d for d in c.decoded if "problem" in d] == []
    assert_same(c.envelopes, c.decoded, c.schemas)


def assert_same(envs: list[Envelope], decoded: list[dict[str, Any]], schemas: dict[bytes, Schema]) -> None:
    """Every envelope: its header fields, a good CRC, and its message in
    jsonl's shape, typed Deltas field by field."""
    assert len(envs) == len(decoded)
    for n, (e, d) in enumerate(zip(envs, decoded, strict=True)):
        where = f"message {n + 1} (seq {d['seq']}, offset {d['offset']})"
        assert envelope_view(e) == decoded_view(d), where
        assert e.show("ripple.crc.status") == "1", where
        want = handshake_view(d["msg"]) if d["type"] == "Handshake" else d["msg"]
        assert message(e, schemas) == want, where


def test_every_message_decodes_as_ripple_decodes_it(whole: Captured) -> None:
    assert_same_messages(whole)


def test_segment_boundaries_anywhere(split: Captured) -> None:
    assert_same_messages(split)
    # The writes did split envelopes: most end in a later packet than they start.
    packets = [
        int(x) for x in tshark(split.lua, split.pcap, "-T", "fields", "-e", "frame.number", "-Y", "tcp.len > 0").split()
    ]
    assert len(packets) > 2 * len(split.envelopes)


def test_fields_message_for_message(whole: Captured) -> None:
    """-T fields, as a user would run it: seq, type and CRC status of each."""
    out = tshark(
        whole.lua,
        whole.pcap,
        "-T",
        "fields",
        "-e",
        "ripple.seq",
        "-e",
        "ripple.type",
        "-e",
        "ripple.crc.status",
        "-Y",
        "ripple",
    )
    got = []
    for line in out.splitlines():
        seqs, types, status = (col.split(",") for col in line.split("\t"))
        got += list(zip(map(int, seqs), types, status, strict=True))
    assert got == [(d["seq"], d["type"], "1") for d in whole.decoded]


def _kinds(t: FieldType, acc: set[str], depth: int = 0) -> None:
    if isinstance(t, Prim):
        acc.add(t.kind)
    elif isinstance(t, OptionOf):
        acc.add("Option(Option)" if isinstance(t.inner, OptionOf) else "Option")
        _kinds(t.inner, acc)
    elif isinstance(t, ListOf):
        acc.add("List")
        _kinds(t.inner, acc)
    elif isinstance(t, RecordOf):
        acc.add("Record")
        for f in t.fields:
            _kinds(f.typ, acc)
    elif isinstance(t, EnumOf):
        acc.add("Enum")


def test_coverage(whole: Captured) -> None:
    """What the comparison above went through: every message type, typed
    Deltas of every field type, Deltas of an unknown schema, and the floats
    ripple prints specially."""
    types = {d["type"] for d in whole.decoded}
    assert types == {"Handshake", "Delta", "Checkpoint_request", "Checkpoint_ack", "Heartbeat", "Schema_negotiation"}
    typed = {d["schema"] for d in whole.decoded if d["type"] == "Delta" and "schema_known" not in d["msg"]}
    unknown = {d["schema"] for d in whole.decoded if d["type"] == "Delta" and "schema_known" in d["msg"]}
    assert unknown and typed
    kinds: set[str] = set()
    for fp in typed:
        s = whole.schemas[fp.encode()]
        _kinds(s.key, kinds)
        for f in s.fields:
            _kinds(f.typ, kinds)
    assert kinds >= {
        "Int",
        "Int32",
        "Int64",
        "Float",
        "Bool",
        "String",
        "Option",
        "Option(Option)",
        "List",
        "Record",
        "Enum",
    }
    labels = {f.get("showname", "").split(": ", 1)[-1] for e in whole.envelopes for f in e.node.iter("field")}
    assert {"NAN", "INF", "-INF", "-0"} & labels, "no special float in the stream"
    assert float_atom(0.1).decode() in labels or any("." in x for x in labels)


def assert_info_is_the_table_summary(c: Captured) -> None:
    """Info of a packet: the summary line of each envelope that ends in it
    (type, schema, output, key, summary), escaped as the table's cells are."""
    from ripple_cli.codec.jsonview import type_name
    from ripple_cli.codec.messages import DeltaMode
    from ripple_cli.codec.schema import text
    from ripple_cli.codec.summary import key_text, output_text, summary
    from ripple_cli.protocols.ripple.decoder import StreamDecoder
    from ripple_cli.protocols.ripple.message import Message
    from ripple_cli.sexp.atoms import escape_text

    lines = []
    decoder = StreamDecoder(None, DeltaMode.DECODE, 1 << 24)
    for ev in decoder.feed(_stream_of(c)) + decoder.finish():
        assert isinstance(ev, Message)
        parts = [
            type_name(ev.frame.tag),
            text(ev.frame.fingerprint),
            output_text(ev.body),
            key_text(ev.body),
            summary(ev.body),
        ]
        lines.append(escape_text(" ".join(p for p in parts if p)))
    by_packet: dict[int, list[str]] = {}
    for e, line in zip(c.envelopes, lines, strict=True):
        by_packet.setdefault(e.packet, []).append(line)
    out = tshark(c.lua, c.pcap, "-T", "fields", "-e", "frame.number", "-e", "_ws.col.Info", "-Y", "ripple")
    got = dict(line.split("\t", 1) for line in out.splitlines())
    for packet, want in by_packet.items():
        assert got[str(packet)] == " | ".join(want), packet


def test_info_column_is_the_table_summary(demo: Captured) -> None:
    assert_info_is_the_table_summary(demo)


def _stream_of(c: Captured) -> bytes:
    """The client's bytes, as the capture holds them."""
    from tests.capture.livecap import read_capture

    (conn,) = read_capture(c.pcap).connections.values()
    data = bytes(conn.c2s.data)
    assert data[:4] == MAGIC
    return data


def test_bad_crc_is_flagged_and_the_next_envelope_decodes(corrupt: Captured) -> None:
    bad = [e for e in corrupt.envelopes if e.show("ripple.crc.status") != "1"]
    assert [(e.show("ripple.seq"), e.show("ripple.crc.status")) for e in bad] == [(str(BAD), "0")]
    names = {f.get("name") for f in bad[0].node.iter("field")}
    assert {"ripple.crc.bad", "ripple.crc.calculated"} <= names  # the expert info, as for TCP's checksum
    after = corrupt.envelopes[corrupt.envelopes.index(bad[0]) + 1]
    assert (after.show("ripple.seq"), after.show("ripple.crc.status")) == (str(BAD + 1), "1")
    # ripple reports the same envelope as a problem and decodes every other one as tshark does.
    problems = [d for d in corrupt.decoded if "problem" in d]
    assert [p["problem"]["kind"] for p in problems] == ["crc_mismatch"]
    good = [e for e in corrupt.envelopes if e is not bad[0]]
    assert_same(good, [d for d in corrupt.decoded if "problem" not in d], corrupt.schemas)


def _count(c: Captured, lua: Path, *prefs: str) -> int:
    out = tshark(
        lua, c.pcap, *(x for p in prefs for x in ("-o", p)), "-T", "fields", "-e", "ripple.seq", "-Y", "ripple"
    )
    return sum(len(line.split(",")) for line in out.splitlines())


def test_found_by_heuristic_on_any_port(demo: Captured) -> None:
    assert demo.port != 7077
    assert _count(demo, demo.lua) == len(demo.decoded)
    assert _count(demo, demo.lua, "ripple.heuristic:FALSE") == 0


def with_port(pcap: Path, old: int, new: int, out: Path) -> None:
    """The capture (lo: Ethernet, IPv4) with TCP port `old` renamed `new`
    (checksums left stale: tshark does not check them by default)."""
    data = bytearray(pcap.read_bytes())
    assert struct.unpack_from("<I", data, 20)[0] == 1  # LINKTYPE_ETHERNET
    pos = 24
    while pos < len(data):
        (caplen,) = struct.unpack_from("<I", data, pos + 8)
        ip = pos + 16 + 14
        tcp = ip + (data[ip] & 15) * 4
        for at in (tcp, tcp + 2):
            if struct.unpack_from(">H", data, at)[0] == old:
                struct.pack_into(">H", data, at, new)
        pos += 16 + caplen
    out.write_bytes(bytes(data))


def test_port_of_another_protocol_needs_heuristics_first(demo: Captured, tmp_path: Path) -> None:
    """ripple-wireshark(1): on a port Wireshark gives another protocol
    (57000: IRC) the connection is that protocol's unless heuristics go
    first or -d names Ripple."""
    irc = Captured(**{**vars(demo), "pcap": tmp_path / "irc.pcap"})
    with_port(demo.pcap, demo.port, 57000, irc.pcap)
    n = len(demo.decoded)
    assert "IRC" in tshark(demo.lua, irc.pcap, "-o", "tcp.try_heuristic_first:FALSE", "-c", "4")
    assert _count(irc, irc.lua, "tcp.try_heuristic_first:FALSE") == 0
    assert _count(irc, irc.lua, "tcp.try_heuristic_first:TRUE") == n
    seqs = tshark(
        irc.lua,
        irc.pcap,
        "-o",
        "tcp.try_heuristic_first:FALSE",
        "-d",
        "tcp.port==57000,ripple",
        "-T",
        "fields",
        "-e",
        "ripple.seq",
        "-Y",
        "ripple",
    )
    assert sum(len(line.split(",")) for line in seqs.splitlines()) == n


def test_preferred_port(demo: Captured, tmp_path: Path) -> None:
    """The port preference, set with -o, and its default, set by --port."""
    n = len(demo.decoded)
    assert _count(demo, demo.lua, "ripple.heuristic:FALSE", f"ripple.port:{demo.port}") == n
    lua = tmp_path / "port.lua"
    ripple("wireshark", "--schemas", "examples/schemas", "--port", str(demo.port), "-o", lua)
    assert _count(demo, lua, "ripple.heuristic:FALSE") == n


def test_malformed_payload_is_flagged_and_the_next_envelope_decodes(malformed: Captured) -> None:
    bad = [e for e in malformed.envelopes if any(f.get("name") == "ripple.malformed" for f in e.node.iter("field"))]
    assert [(e.show("ripple.seq"), e.show("ripple.crc.status")) for e in bad] == [(str(MALFORMED), "1")]
    after = malformed.envelopes[malformed.envelopes.index(bad[0]) + 1]
    assert after.show("ripple.seq") == str(MALFORMED + 1)
    # ripple reports it as a problem in place and decodes every other envelope as tshark does.
    problems = [d["problem"] for d in malformed.decoded if "problem" in d]
    assert [(p["kind"], p["seq"]) for p in problems] == [("bad_payload", MALFORMED)]
    good = [e for e in malformed.envelopes if e is not bad[0]]
    assert_same(good, [d for d in malformed.decoded if "problem" not in d], malformed.schemas)


# ---------------------------------------------------------------- display filters

# Each `ripple decode -Y` expression, and the display filter on the same
# fields (ripple-wireshark(1)).  A typed field's filter is on Sets: in a
# Patch that updates a field twice, ripple's field is the last update and
# the display filter matches either (test_patch_updates_match_each).
FILTERS = {
    'type == "Checkpoint_ack"': 'ripple.type == "Checkpoint_ack"',
    "type in {Heartbeat, Schema_negotiation}": 'ripple.type in {"Heartbeat", "Schema_negotiation"}',
    "seq > 250": "ripple.seq > 250",
    "seq >= 100 and seq < 120": "ripple.seq >= 100 and ripple.seq < 120",
    "time_ns <= 5000": "ripple.time_ns <= 5000",
    "worker == feu": 'ripple.worker == "feu"',
    "output == vwap": 'ripple.output == "vwap"',
    "delta == remove": 'ripple.delta == "remove"',
    'schema == "orders/v3"': 'ripple.schema == "orders/v3"',
    "key == -1": 'ripple.key == "-1"',
    'schema == "positions_by_account_and_desk/v1" and key == -127': "ripple.key.positions_by_account_and_desk == -127",
    'key == "((symbol Remove)(venue XNAS))"': 'ripple.key.book.symbol == "Remove" and ripple.key.book.venue == "XNAS"',
    'schema == "vwap/v2" and delta == set and field.price > 100': (
        'ripple.delta.vwap.price > 100 and ripple.delta == "set"'
    ),
    "delta == set and field.stats.last.px > 100": 'ripple.delta.book.stats.last.px > 100 and ripple.delta == "set"',
    "delta == set and field.bid.px < 0": 'ripple.delta.book.bid.px < 0 and ripple.delta == "set"',
    'schema == "trades/v1" and field.venue == j': 'ripple.delta.trades.venue == "j"',
    "field.tags contains ZY2t1mH": 'ripple.delta.positions_by_account_and_desk.tags == "ZY2t1mH"',
}


def _bad_crc(e: Envelope) -> bool:
    return e.show("ripple.crc.status") == "0"


def test_one_envelope_a_packet(paced: Captured) -> None:
    """What makes the packets a display filter selects its envelopes."""
    ends = [e.packet for e in paced.envelopes]
    assert len(ends) == len(set(ends)) == COUNT
    (problem,) = [d["problem"] for d in paced.decoded if "problem" in d]
    assert problem["kind"] == "crc_mismatch"
    good = [e for e in paced.envelopes if not _bad_crc(e)]
    assert_same(good, [d for d in paced.decoded if "problem" not in d], paced.schemas)


def test_display_filters_select_what_ripple_selects(paced: Captured) -> None:
    """Each filter, with `ripple.crc.status == 1`: ripple's -Y selects among
    the envelopes whose CRC is good, the one whose CRC is bad being a
    problem, which tshark dissects all the same (a vwap Set with a price
    above 100, which the price filter would take)."""
    filters = {k: f"({v}) and ripple.crc.status == 1" for k, v in FILTERS.items()}
    counts = kit.assert_same_selection(paced.lua, paced.pcap, "ripple", filters, unshown=_bad_crc)
    assert counts == {
        'type == "Checkpoint_ack"': 8,
        "type in {Heartbeat, Schema_negotiation}": 42,
        "seq > 250": 50,
        "seq >= 100 and seq < 120": 20,
        "time_ns <= 5000": 9,
        "worker == feu": 1,
        "output == vwap": 41,
        "delta == remove": 37,
        'schema == "orders/v3"': 46,
        "key == -1": 3,
        'schema == "positions_by_account_and_desk/v1" and key == -127': 2,
        'key == "((symbol Remove)(venue XNAS))"': 1,
        'schema == "vwap/v2" and delta == set and field.price > 100': 3,
        "delta == set and field.stats.last.px > 100": 9,
        "delta == set and field.bid.px < 0": 5,
        'schema == "trades/v1" and field.venue == j': 1,
        "field.tags contains ZY2t1mH": 1,
    }


def test_crc_status_selects_the_damaged_envelope(paced: Captured) -> None:
    """`ripple.crc.status == 0` selects the packet of the one envelope ripple
    reports as a CRC problem: its place in the connection (tcp.seq counts
    from 1 at the first byte), its size, the stored and computed CRCs
    ripple names, and the seq between those of its neighbours, which
    both decode."""
    at = next(i for i, d in enumerate(paced.decoded) if "problem" in d)
    before, problem, after = paced.decoded[at - 1 : at + 2]
    p = problem["problem"]
    stored, computed = p["detail"].removeprefix("CRC mismatch: stored ").split(", computed ")
    fields = ("ripple.seq", "tcp.seq", "tcp.len", "ripple.crc", "ripple.crc.calculated", "ripple.delta.vwap.price")
    out = tshark(
        paced.lua,
        paced.pcap,
        "-T",
        "fields",
        *(x for f in fields for x in ("-e", f)),
        "-Y",
        "ripple.crc.status == 0",
    )
    seq = before["seq"] + 1
    assert after["seq"] == seq + 1
    want = [str(seq), str(problem["offset"] + 1), str(p["skipped"]), f"0x{stored}", f"0x{computed}", "246955.8"]
    assert out.splitlines() == ["\t".join(want)]


def _seqs(c: Captured, display: str) -> list[int]:
    """The seq of each envelope in the packets a display filter selects."""
    out = tshark(c.lua, c.pcap, "-T", "fields", "-e", "ripple.seq", "-Y", display)
    return [int(x) for line in out.splitlines() for x in line.split(",")]


def _values(d: dict[str, Any], name: str) -> list[Any]:
    """Each value a typed Delta gives its row field `name`: the Set's, or
    each Patch update's, in order."""
    delta = d["msg"].get("delta", {})
    if delta.get("op") == "set":
        return [delta["row"][name]]
    return [u["value"] for u in delta.get("updates", []) if u["field"] == name]


def test_patch_updates_match_each(paced: Captured) -> None:
    """A Patch may update a field more than once: ripple's `field.price` is
    the last update (the row it leaves), while a display filter matches
    any of the field's items, as Wireshark's do (ripple-wireshark(1))."""
    patches = [
        d for d in paced.decoded if d.get("schema") == "vwap/v2" and d["msg"].get("delta", {}).get("op") == "patch"
    ]
    above = {d["seq"]: [isinstance(x, float) and x > 100 for x in _values(d, "price")] for d in patches}
    last = [seq for seq, xs in above.items() if xs and xs[-1]]
    some = [seq for seq, xs in above.items() if any(xs)]
    chosen = jsonl(paced.pcap, "-Y", 'schema == "vwap/v2" and delta == patch and field.price > 100')
    assert [d["seq"] for d in chosen if "problem" not in d] == last == [87, 92, 114, 132, 284, 298]
    assert _seqs(paced, 'ripple.delta.vwap.price > 100 and ripple.delta == "patch"') == some == [83, *last]


def test_typed_field_names_are_the_documented_ones(whole: Captured) -> None:
    """The fields tshark registers for the typed leaves of every schema the
    streams declare (nested records, lists, options of options, names with
    bytes an abbrev cannot hold) are those ripple-wireshark(1) names, with
    tshark's type of each leaf's type; `assert_same` checks each Delta's
    items carry them."""
    registered = field_types(whole.lua)
    typed = {k: v for k, v in registered.items() if k.startswith(("ripple.delta.", "ripple.key."))}
    assert typed.pop("ripple.delta.update") == "FT_STRING"
    want = {name: ft for leaves in typed_fields(whole.schemas.values()).values() for name, ft in leaves.values()}
    assert typed == want
    spelled = {
        "ripple.delta.vwap.price": "FT_DOUBLE",
        "ripple.key.vwap": "FT_STRING",
        "ripple.key.trades": "FT_INT64",
        "ripple.delta.trades.qty": "FT_INT32",
        "ripple.delta.trades.side": "FT_STRING",  # an enum
        "ripple.delta.trades.venue": "FT_STRING",  # an option of an option
        "ripple.delta.trades.fees": "FT_DOUBLE",  # a list of options
        "ripple.delta.trades.parties.role": "FT_STRING",  # a record in a list
        "ripple.key.book.venue": "FT_STRING",  # a record key
        "ripple.delta.book.bid.px": "FT_DOUBLE",  # a record in an option
        "ripple.delta.book.levels.orders": "FT_INT32",
        "ripple.delta.book.stats.last.at_ns": "FT_INT64",  # a record in a record
        "ripple.delta.positions_by_account_and_desk.limits": "FT_INT32",  # a list in an option
        "ripple.delta.positions_by_account_and_desk.matrix": "FT_INT64",  # a list of lists
        "ripple.delta.positions_by_account_and_desk.deep": "FT_INT64",  # an option of an option of an option
        "ripple.delta.positions_by_account_and_desk.flags": "FT_BOOLEAN",
        "ripple.delta._.fYpB.daD": "FT_INT64",  # schema "\t"
        "ripple.delta.__.knW_MhJkjaePn": "FT_STRING",  # schema "\xff\xfe"
        "ripple.key._lk_Qu__-_UukB.q1H": "FT_BOOLEAN",  # schema "=lk^Qu*?-]UukB"
        "ripple.delta.mw.uMF84ZRRC2eR4jM_Mvf3L_Oj17zJgBZp": "FT_BOOLEAN",  # field "uMF84ZRRC2eR4jM_Mvf3L'Oj17zJgBZp"
    }
    assert {k: typed.get(k) for k in spelled} == spelled


def test_filters_on_nested_fields(paced: Captured) -> None:
    """A display filter on a leaf inside lists, records and options selects
    the Deltas whose value, as ripple decodes it, holds a match there."""
    typed = [d for d in paced.decoded if "problem" not in d and "delta" in d["msg"]]

    def having(schema: str, name: str, match: Any) -> list[int]:
        return [d["seq"] for d in typed if d["schema"] == schema and any(match(v) for v in _values(d, name))]

    cases = {
        'ripple.delta.trades.parties.role == "Maker"': having(
            "trades/v1", "parties", lambda v: any(p["role"] == "Maker" for p in v)
        ),
        "ripple.delta.trades.venue": having("trades/v1", "venue", lambda v: v is not None and v[0] is not None),
        "ripple.delta.trades.fees < 0": having(
            "trades/v1", "fees", lambda v: any(isinstance(x, float) and x < 0 for x in v)
        ),
        "ripple.delta.positions_by_account_and_desk.deep == -127": having(
            "positions_by_account_and_desk/v1", "deep", lambda v: v is not None and v[0] is not None and v[0][0] == -127
        ),
        "ripple.delta.positions_by_account_and_desk.matrix == 0": having(
            "positions_by_account_and_desk/v1", "matrix", lambda v: any(0 in row for row in v)
        ),
        "ripple.delta.book.levels.orders < 0": having("book/v4", "levels", lambda v: any(x["orders"] < 0 for x in v)),
        "ripple.delta.book.stats.last.at_ns == 803": having("book/v4", "stats", lambda v: v["last"]["at_ns"] == 803),
        'ripple.key.book.venue == "BATS"': [
            d["seq"] for d in typed if d["schema"] == "book/v4" and d["msg"]["key"]["venue"] == "BATS"
        ],
    }
    got = {display: _seqs(paced, display) for display in cases}
    assert got == cases
    assert {k: len(v) for k, v in got.items()} == {
        'ripple.delta.trades.parties.role == "Maker"': 14,
        "ripple.delta.trades.venue": 13,
        "ripple.delta.trades.fees < 0": 14,
        "ripple.delta.positions_by_account_and_desk.deep == -127": 1,
        "ripple.delta.positions_by_account_and_desk.matrix == 0": 4,
        "ripple.delta.book.levels.orders < 0": 12,
        "ripple.delta.book.stats.last.at_ns == 803": 2,
        'ripple.key.book.venue == "BATS"': 13,
    }


def test_names_two_types_share_follow_the_order_of_the_schemas(tmp_path: Path) -> None:
    """Schemas whose names become the same abbrev part (`s.0`, `s_0`): the
    leaf of the schema given first keeps the name, the other gets _2, the
    same on every run (the order of the --schemas, not of a Lua table's
    hash); and names that are empty, or bytes an abbrev cannot hold, still
    give fields the dissector can register (an empty one would stop the
    whole file from loading)."""
    from ripple_cli.codec.schema import BOOL, FLOAT, INT, STRING, Field, sexp_of_schema
    from ripple_cli.sexp.write import to_string

    schemas = []
    for i in range(8):
        dotted = Schema(b"s.%d" % i, 1, INT, (Field(b"a", INT),))
        plain = Schema(b"s_%d" % i, 1, STRING, (Field(b"a", FLOAT),))
        schemas += [dotted, plain] if i % 2 == 0 else [plain, dotted]
    schemas.append(Schema(b"", 1, BOOL, (Field(b"", INT), Field(b"\xc3\xa9", RecordOf((Field(b"", BOOL),))))))
    args: list[str | Path] = []
    for n, s in enumerate(schemas):
        path = tmp_path / f"{n:02d}.sexp"
        path.write_bytes(to_string(sexp_of_schema(s)))
        args += ["--schemas", path]
    lua = tmp_path / "ripple.lua"
    ripple("wireshark", *args, "-o", lua)
    registered = field_types(lua)
    typed = {
        k: v
        for k, v in registered.items()
        if k.startswith(("ripple.delta.", "ripple.key.")) and k != "ripple.delta.update"
    }
    assert typed == {name: ft for leaves in typed_fields(schemas).values() for name, ft in leaves.values()}
    assert typed == {
        **{
            name: ft
            for i in range(8)
            for name, ft in (
                (f"ripple.key.s_{i}", "FT_INT64" if i % 2 == 0 else "FT_STRING"),
                (f"ripple.key.s_{i}_2", "FT_STRING" if i % 2 == 0 else "FT_INT64"),
                (f"ripple.delta.s_{i}.a", "FT_INT64" if i % 2 == 0 else "FT_DOUBLE"),
                (f"ripple.delta.s_{i}.a_2", "FT_DOUBLE" if i % 2 == 0 else "FT_INT64"),
            )
        },
        "ripple.key._": "FT_BOOLEAN",
        "ripple.delta._._": "FT_INT64",
        "ripple.delta._.__._": "FT_BOOLEAN",
    }
    assert field_types(lua) == registered  # and again


@pytest.mark.parametrize("max_write", [23, 3000])
def test_damage_is_skipped_to_the_next_envelope(tmp_path: Path, max_write: int) -> None:
    """The bundled damaged stream over a real connection, in writes small
    (the damage spans segments) and large: tshark shows every envelope
    ripple frames (its messages, and seq 4 of the bad CRC), and the 14
    bytes of garbage as one expert item, as ripple reports them."""
    stream = (EXAMPLES / "damaged.ripple").read_bytes()
    cap = captured(tmp_path, stream, seed=17, max_write=max_write)
    out = tshark(cap.lua, cap.pcap, "-T", "fields", "-e", "ripple.seq")
    shown = sorted(int(s) for line in out.split() for s in line.split(","))
    decoded = sorted([m["seq"] for m in cap.decoded if "problem" not in m] + [4])
    assert len(decoded) == 299 and shown == decoded
    experts = tshark(cap.lua, cap.pcap, "-q", "-z", "expert,error")
    assert [line.split(None, 3)[3] for line in experts.splitlines() if "no envelope" in line] == [
        "14 bytes that are no envelope, skipped"
    ]


def _bp_string(s: bytes) -> bytes:
    assert len(s) < 0x80
    return bytes([len(s)]) + s


@pytest.mark.parametrize("depth", [65, 100_000])
def test_a_schema_nested_too_deeply_is_malformed(tmp_path: Path, depth: int) -> None:
    """A Handshake whose key type is a List of a List ... `depth` deep: ripple
    refuses it past 64 (bad_payload), and so does the dissector, which
    used to recurse until Lua's stack overflowed (a Lua error at 100,000).
    The envelopes after it decode in both."""
    frames = frames_of(DEMO)
    _magic, _v, tag, flags, seq, time_ns, fp, _n = HEADER.unpack_from(frames[0])  # the demo's Handshake
    key = b"\x07" * depth + b"\x05"  # List (List (... String))
    payload = _bp_string(b"w1") + b"\x01" + _bp_string(b"o") + _bp_string(b"deep") + b"\x01" + key + b"\x00" + b"\x01"
    stream = build_envelope(tag, seq, time_ns, fp.rstrip(b"\0"), payload, flags) + b"".join(frames[1:])
    cap = captured(tmp_path, stream, seed=21, max_write=3000)
    problems = [(d["problem"]["kind"], d["problem"]["seq"]) for d in cap.decoded if "problem" in d]
    assert problems == [("bad_payload", seq)]
    first = cap.envelopes[0]
    assert first.show("ripple.seq") == str(seq)
    malformed = [f.get("showname", "") for f in first.node.iter("field") if f.get("name") == "ripple.malformed"]
    assert len(malformed) == 1 and "field type nested too deeply" in malformed[0], malformed
    assert "Lua Error" not in tshark_text(cap)
    assert [e.show("ripple.seq") for e in cap.envelopes[1:3]] == [str(seq + 1), str(seq + 2)]


def test_lists_of_empty_records_are_held_to_the_budget_in_both(tmp_path: Path) -> None:
    """A list of records of no fields takes its count's bytes alone: two of
    them at the end of a Delta decode (ripple refused them once, the count
    being over the bytes left, though encode writes them so); a count over
    the buffer's budget is malformed in both, worded alike."""
    from tests.hostile.bombs import EMPTY, delta, handshake

    schema = Schema(b"e", 1, Prim("String"), (Field(b"xs", ListOf(EMPTY)),))
    two = delta(schema, b"\x01k", b"\x00\x02", 2)  # Set, xs = [{}; {}]
    bomb = delta(schema, b"\x01k", b"\x00\xfe\xe8\x03", 3, sequence_no=2)  # Set, xs of 1000 in 4 bytes
    tail = frames_of(DEMO)[1:3]  # two envelopes after it, which decode in both
    cap = captured(tmp_path, handshake([schema]) + two + bomb + b"".join(tail), seed=23, max_write=3000)
    deltas = [d for d in cap.decoded if d.get("type") == "Delta"]
    assert deltas[0]["msg"]["delta"] == {"op": "set", "row": {"xs": [{}, {}]}}
    problems = [(p["kind"], p["seq"], p["detail"]) for d in cap.decoded if (p := d.get("problem"))]
    budget = "list of 1000 empty elements over the decode budget (4 of 4 left)"
    assert [(k, q) for k, q, _ in problems] == [("bad_delta", 3)]
    assert budget in problems[0][2]

    def shown(env: Envelope, name: str) -> list[str]:
        return [f.get("showname", "") for f in env.node.iter("field") if f.get("name") == name]

    assert shown(cap.envelopes[1], "ripple.value.list") == ["xs: 2 items"]
    malformed = shown(cap.envelopes[2], "ripple.malformed")
    assert len(malformed) == 1 and budget in malformed[0], malformed
    assert "Lua Error" not in tshark_text(cap)
    assert len(cap.envelopes) == 5


def tshark_text(cap: Captured) -> str:
    return kit.tshark(cap.lua, cap.pcap, "-V")


@pytest.mark.parametrize(("checkpoint_id", "ok"), [(2**62 - 1, True), (2**62, False), (-(2**62) - 1, False)])
def test_an_ocaml_int_past_63_bits_is_malformed(tmp_path: Path, checkpoint_id: int, ok: bool) -> None:
    """checkpoint_id is an OCaml int (63 bits): an 8-byte value past it does
    not decode in ripple (bad_payload), and the dissector showed it as a
    number; it is malformed there too now.  The same for sequence_no,
    versions and positions (one reader)."""
    from ripple_cli.codec.messages import CHECKPOINT_REQUEST, FIXED_FINGERPRINTS

    frames = frames_of(DEMO)
    *_, last_seq, last_time, _fp, _n = HEADER.unpack_from(frames[-1])
    payload = b"\xfc" + struct.pack("<q", checkpoint_id) + b"\x07"  # the id, then requested_at_ns 7
    extra = build_envelope(CHECKPOINT_REQUEST, last_seq + 1, last_time, FIXED_FINGERPRINTS[CHECKPOINT_REQUEST], payload)
    cap = captured(tmp_path, DEMO + extra, seed=22, max_write=3000)
    problems = [(d["problem"]["kind"], d["problem"]["seq"]) for d in cap.decoded if "problem" in d]
    env = cap.envelopes[-1]
    assert env.show("ripple.seq") == str(last_seq + 1)
    malformed = [f.get("showname", "") for f in env.node.iter("field") if f.get("name") == "ripple.malformed"]
    if ok:
        assert (problems, malformed, env.show("ripple.checkpoint_id")) == ([], [], str(checkpoint_id))
    else:
        assert problems == [("bad_payload", last_seq + 1)]
        assert len(malformed) == 1 and "int out of range" in malformed[0], malformed


def test_info_escapes_what_does_not_print_as_the_table_does(tmp_path: Path) -> None:
    """Worker ids, outputs and errors holding ESC, NUL, CR, bytes that are
    not UTF-8 and characters that do not print: tshark's Info showed them
    raw (a terminal acted on ESC[2J; NUL cut the column).  Info is now the
    table's row, escaped the same way (UTF-8 letters kept)."""
    odd = '"w\\027[2J\\000x\\r\\195\\169\\226\\128\\168\\255"'  # ESC [2J, NUL, CR, é, U+2028, a lone 0xff
    text = f"""((seq 1)(time_ns 1)(schema ripple.handshake/v1)(msg(Handshake((source_worker_id {odd})
 (output_schemas(({odd}((name v)(version 1)(key String)(fields(((name p)(typ Int)(default()))))))))
 (protocol_version 1)))))
((seq 2)(time_ns 2)(schema ripple.heartbeat/v1)(msg(Heartbeat((worker_id {odd})(timestamp_ns 2)(load 0.5)))))
((seq 3)(time_ns 3)(schema v/v1)(msg(Delta((source_output {odd})(key {odd})(delta(Set((p 1))))
 (sequence_no 1)(watermark_ns())))))
((seq 4)(time_ns 4)(schema ripple.schema_negotiation/v1)(msg(Schema_negotiation((ok false)(errors({odd}))))))
"""
    (tmp_path / "odd.sexp").write_text(text)
    ripple("encode", tmp_path / "odd.sexp", "-o", tmp_path / "odd.ripple")
    stream = (tmp_path / "odd.ripple").read_bytes()
    cap = captured(tmp_path, stream, seed=23, max_write=3000)
    assert len(cap.envelopes) == 4
    assert_info_is_the_table_summary(cap)
    info = tshark(cap.lua, cap.pcap, "-T", "fields", "-e", "_ws.col.Info", "-Y", "ripple")
    assert "\x1b" not in info and "\r" not in info and "\\027[2J\\000x\\ré\\u{2028}\\255" in info
