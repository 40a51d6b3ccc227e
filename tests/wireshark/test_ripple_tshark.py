"""The Lua dissector `ripple wireshark` writes, in the real tshark, against
`ripple decode --format jsonl` of the same capture, message for message.

The streams are the OCaml interop streams (ripple_gen: every field type,
nested records, lists, options of options, Int32, enums, NaN and the
infinities, strings past 64 KiB, Deltas of an undeclared schema), sent over
real TCP sockets on lo and captured with tcpdump; the server listens on an
ephemeral port, so the dissector is found by its heuristic.  tshark runs
once per capture and output form (module-scoped fixtures)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ripple_cli.cli.commands.schema import schemas_in_bytes
from ripple_cli.codec.envelope import HEADER, MAGIC, build_envelope
from ripple_cli.codec.schema import EnumOf, FieldType, ListOf, OptionOf, Prim, RecordOf, Schema
from ripple_cli.sexp.tree import float_atom
from tests.capture.livecap import DEMO, capture_conversation
from tests.interop.conftest import ocaml_tools  # noqa: F401 - the session fixture that builds the OCaml tools
from tests.interop.ocamlkit import OcamlTools
from tests.wireshark.tsharkkit import (
    Envelope,
    envelopes,
    handshake_view,
    jsonl,
    message,
    require_tshark,
    ripple,
    tshark,
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


def cut(stream: bytes, limit: int) -> bytes:
    """The envelopes of `stream` that end within its first `limit` bytes."""
    pos = 0
    while pos + 59 <= len(stream):
        (n,) = struct.unpack_from("<i", stream, pos + 55)
        if pos + 63 + n > limit:
            break
        pos += 63 + n
    return stream[:pos]


def captured(tmp: Path, stream: bytes, seed: int, max_write: int) -> Captured:
    require_tshark()
    pcap = tmp / "cap.pcap"
    exchanges = capture_conversation(pcap, [(stream, b"")], seed=seed, max_write=max_write)
    assert [e.sent for e in exchanges] == [stream]
    lua = tmp / "ripple.lua"
    ripple("wireshark", pcap, "-o", lua)
    port = int(tshark(lua, pcap, "-T", "fields", "-e", "tcp.dstport", "-c", "1").strip())
    schemas = {s.fingerprint: s for _, s in schemas_in_bytes(stream, 1 << 24)}
    return Captured(pcap, lua, schemas, port, jsonl(pcap), envelopes(tshark(lua, pcap, "-T", "pdml")))


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
    frames = []
    pos = 0
    while pos < len(DEMO):
        (n,) = struct.unpack_from("<i", DEMO, pos + 55)
        frames.append(DEMO[pos : pos + 63 + n])
        pos += 63 + n
    _magic, _v, tag, flags, seq, time_ns, fp, _n = HEADER.unpack_from(frames[MALFORMED - 1])
    frames[MALFORMED - 1] = build_envelope(tag, seq, time_ns, fp.rstrip(b"\0"), b"\xfe", flags)
    return captured(tmp_path_factory.mktemp("ws-malformed"), b"".join(frames), seed=6, max_write=3000)


@pytest.fixture(scope="module")
def split(interop_stream: bytes, tmp_path_factory: pytest.TempPathFactory) -> Captured:
    """A prefix of the stream in writes of 1 to 97 bytes (TCP_NODELAY): segment
    boundaries fall anywhere, in headers, payloads and CRCs."""
    return captured(tmp_path_factory.mktemp("ws-split"), cut(interop_stream, 40000), seed=2, max_write=97)


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


def test_info_column_is_the_table_summary(demo: Captured) -> None:
    """Info of a packet: the summary line of each envelope that ends in it."""
    from ripple_cli.codec.jsonview import type_name
    from ripple_cli.codec.messages import DeltaMode
    from ripple_cli.codec.schema import text
    from ripple_cli.codec.summary import key_text, output_text, summary
    from ripple_cli.protocols.ripple.decoder import StreamDecoder
    from ripple_cli.protocols.ripple.message import Message

    lines = []
    decoder = StreamDecoder(None, DeltaMode.DECODE, 1 << 24)
    for ev in decoder.feed(_stream_of(demo)) + decoder.finish():
        assert isinstance(ev, Message)
        parts = [
            type_name(ev.frame.tag),
            text(ev.frame.fingerprint),
            output_text(ev.body),
            key_text(ev.body),
            summary(ev.body),
        ]
        lines.append(" ".join(p for p in parts if p))
    by_packet: dict[int, list[str]] = {}
    for e, line in zip(demo.envelopes, lines, strict=True):
        by_packet.setdefault(e.packet, []).append(line)
    out = tshark(demo.lua, demo.pcap, "-T", "fields", "-e", "frame.number", "-e", "_ws.col.Info", "-Y", "ripple")
    got = dict(line.split("\t", 1) for line in out.splitlines())
    for packet, want in by_packet.items():
        assert got[str(packet)] == " | ".join(want), packet


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
