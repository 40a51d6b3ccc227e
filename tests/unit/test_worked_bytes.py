"""The worked bytes of reference section 7, and the canonical text of section 5.

The first dump of section 7 (the Delta) is printed with 102 bytes: two of the
fingerprint's zero padding bytes are missing.  With the fingerprint padded to
32 bytes it is the announced 104 bytes and its CRC (1e 92 31 9b) matches, so
the tests use those 104 bytes; `test_readme_dump_as_printed_is_102_bytes`
documents the misprint.
"""

from __future__ import annotations

from crc32c import crc32c

from ripple_cli.codec.delta import REMOVE, CompiledSchema, Patch, SetRow
from ripple_cli.codec.envelope import OVERHEAD, build_envelope, frame_bytes
from ripple_cli.codec.messages import DELTA, DeltaMsg, DeltaView, Heartbeat, read_delta_msg, write_payload
from ripple_cli.codec.problems import Problem
from ripple_cli.codec.registry import SchemaRegistry
from ripple_cli.codec.schema import FLOAT, INT, STRING, Field, OptionOf, Schema, schema_of_sexp
from ripple_cli.codec.text import envelope_of_sexp
from ripple_cli.protocols.ripple.decoder import StreamDecoder
from ripple_cli.protocols.ripple.message import Message
from ripple_cli.sexp import parse_one

# Section 7, as printed (102 bytes).
DUMP_AS_PRINTED = """
52 49 50 50 01 01 00 2a 00 00 00 00 00 00 00 7b 00 2a 36 fe 9c 97 17 76
77 61 70 2f 76 32 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
00 00 00 00 00 29 00 00 00 04 76 77 61 70 05 04 41 41 50 4c 12 01 02 00
00 00 00 00 00 50 59 40 02 01 04 58 4e 59 53 2a 01 fc 00 00 2a 36 fe 9c
97 17 1e 92 31 9b
"""

# The same, with the fingerprint padded to 32 bytes: the 104 bytes the OCaml code writes.
DELTA_104 = bytes.fromhex(
    "52 49 50 50 01 01 00"  # magic, version 1, type 1 (Delta), flags 0
    "2a 00 00 00 00 00 00 00"  # seq 42
    "7b 00 2a 36 fe 9c 97 17"  # time 1700000000000000123
    "76 77 61 70 2f 76 32"
    + " 00"
    * 25  # "vwap/v2", zero-padded to 32
    + "29 00 00 00"  # payload length 41
    "04 76 77 61 70"  # source_output "vwap"
    "05 04 41 41 50 4c"  # key: a string holding the key's bin_prot bytes
    "12 01 02 00 00 00 00 00 00 50 59 40 02 01 04 58 4e 59 53"  # delta_bytes
    "2a"  # sequence_no 42
    "01 fc 00 00 2a 36 fe 9c 97 17"  # watermark Some 1700000000000000000
    "1e 92 31 9b"  # CRC-32C
)

HEARTBEAT_75 = bytes.fromhex(
    """
52 49 50 50 01 04 00 01 00 00 00 00 00 00 00 05 00 00 00 00 00 00 00 72
69 70 70 6c 65 2e 68 65 61 72 74 62 65 61 74 2f 76 31 00 00 00 00 00 00
00 00 00 00 00 00 00 0c 00 00 00 02 77 31 05 00 00 00 00 00 00 e0 3f a5
d7 5b 81
"""
)

VWAP_V2_FILE = b"""((name vwap) (version 2) (key String)
 (fields
  (((name price) (typ Float) (default ()))
   ((name volume) (typ Int) (default ()))
   ((name venue) (typ (Option String)) (default ("()"))))))
"""

DELTA_LINE = (
    b"((seq 42)(time_ns 1700000000000000123)(schema vwap/v2)(msg(Delta((source_output vwap)(key AAPL)"
    b"(delta(Patch((Price 101.25)(Venue(XNYS)))))(sequence_no 42)(watermark_ns(1700000000000000000))))))"
)
RAW_LINE = (
    b"((seq 42)(time_ns 1700000000000000123)(schema vwap/v2)(msg(Delta((source_output vwap)"
    b'(key"\\004AAPL")(delta_bytes"\\001\\002\\000\\000\\000\\000\\000\\000PY@\\002\\001\\004XNYS")'
    b"(sequence_no 42)(watermark_ns(1700000000000000000))))))"
)
HEARTBEAT_LINE = (
    b"((seq 1)(time_ns 5)(schema ripple.heartbeat/v1)(msg(Heartbeat((worker_id w1)(timestamp_ns 5)(load 0.5)))))"
)

KEY_BYTES = bytes.fromhex("04 41 41 50 4c")
PATCH_BYTES = bytes.fromhex("01 02 00 00 00 00 00 00 50 59 40 02 01 04 58 4e 59 53")
SET_BYTES = bytes.fromhex("00 00 00 00 00 00 00 59 40 fe 2c 01 00")
REMOVE_BYTES = bytes.fromhex("02")

VWAP_V2 = Schema(
    b"vwap",
    2,
    STRING,
    (Field(b"price", FLOAT), Field(b"volume", INT), Field(b"venue", OptionOf(STRING), b"()")),
)


def vwap_registry() -> SchemaRegistry:
    reg = SchemaRegistry()
    reg.add(schema_of_sexp(parse_one(VWAP_V2_FILE)))
    return reg


def decode_all(data: bytes, registry: SchemaRegistry | None = None) -> list[Message | Problem]:
    dec = StreamDecoder(registry)
    return [*dec.feed(data), *dec.finish()]


def test_schema_file_of_section_4_is_vwap_v2() -> None:
    schema = schema_of_sexp(parse_one(VWAP_V2_FILE))
    assert schema == VWAP_V2
    assert schema.fingerprint == b"vwap/v2"


def test_crc32c_check_value() -> None:
    assert crc32c(b"123456789") == 0xE3069283


def test_delta_is_104_bytes_with_matching_crc() -> None:
    assert len(DELTA_104) == 104
    assert DELTA_104[55:59] == bytes.fromhex("29 00 00 00")
    assert len(DELTA_104) == OVERHEAD + 41
    assert crc32c(DELTA_104[:-4]).to_bytes(4, "little") == DELTA_104[-4:]
    assert DELTA_104[23:55] == b"vwap/v2".ljust(32, b"\0")


def test_readme_dump_as_printed_is_102_bytes() -> None:
    printed = bytes.fromhex(DUMP_AS_PRINTED)
    assert len(printed) == 102
    # exactly two zero bytes of the fingerprint's padding are missing
    assert printed[:30] + b"\0\0" + printed[30:] == DELTA_104
    # its length field is then read from the shifted bytes 00 00 04 76
    events = decode_all(printed, vwap_registry())
    assert events == [
        Problem(0, "bad_length", "payload length 1979973632 outside 0..16777216", skipped=102),
    ]


def test_decode_delta_with_schema_prints_section_5_line() -> None:
    events = decode_all(DELTA_104, vwap_registry())
    assert len(events) == 1
    msg = events[0]
    assert isinstance(msg, Message)
    assert msg.frame.offset == 0
    assert (msg.frame.tag, msg.frame.flags, msg.frame.seq, msg.frame.time_ns) == (DELTA, 0, 42, 1700000000000000123)
    assert msg.frame.fingerprint == b"vwap/v2"
    assert msg.frame.crc == 0x9B31921E
    assert frame_bytes(msg.frame) == DELTA_104
    body = msg.body
    assert isinstance(body, DeltaView)
    assert body.key == b"AAPL"
    assert body.delta == Patch(((0, 101.25), (2, (b"XNYS",))))
    assert body.sequence_no == 42
    assert body.watermark_ns == 1700000000000000000
    assert msg.line == DELTA_LINE


def test_decode_delta_without_schema_prints_raw_line() -> None:
    events = decode_all(DELTA_104)
    assert len(events) == 1
    msg = events[0]
    assert isinstance(msg, Message)
    assert isinstance(msg.body, DeltaMsg)
    assert msg.body == DeltaMsg(b"vwap", KEY_BYTES, PATCH_BYTES, 42, 1700000000000000000)
    assert msg.line == RAW_LINE


def test_encode_section_5_line_gives_the_104_bytes() -> None:
    spec = envelope_of_sexp(parse_one(DELTA_LINE), vwap_registry())
    assert (spec.seq, spec.time_ns, spec.fingerprint, spec.flags, spec.tag) == (
        42,
        1700000000000000123,
        b"vwap/v2",
        0,
        DELTA,
    )
    assert spec.to_bytes() == DELTA_104


def test_encode_raw_line_gives_the_104_bytes_without_a_schema() -> None:
    spec = envelope_of_sexp(parse_one(RAW_LINE), SchemaRegistry())
    assert spec.to_bytes() == DELTA_104


def test_key_and_delta_bytes_of_section_7() -> None:
    c = CompiledSchema(VWAP_V2)
    assert c.write_key(b"AAPL") == KEY_BYTES
    assert c.read_key(KEY_BYTES) == b"AAPL"
    patch = Patch(((0, 101.25), (2, (b"XNYS",))))
    assert c.write_delta(patch) == PATCH_BYTES
    assert c.read_delta(PATCH_BYTES) == patch
    msg = read_delta_msg(DELTA_104[59:-4])
    assert (msg.key, msg.delta_bytes) == (KEY_BYTES, PATCH_BYTES)


def test_set_and_remove_bytes_of_section_7() -> None:
    c = CompiledSchema(VWAP_V2)
    row = SetRow({"price": 100.0, "volume": 300, "venue": None})
    assert c.write_delta(row) == SET_BYTES
    assert c.read_delta(SET_BYTES) == row
    assert c.write_delta(REMOVE) == REMOVE_BYTES
    assert c.read_delta(REMOVE_BYTES) == REMOVE
    from ripple_cli.sexp import to_string

    assert to_string(c.delta_to_sexp(row)) == b"(Set((price 100)(volume 300)(venue())))"
    assert to_string(c.delta_to_sexp(REMOVE)) == b"Remove"
    assert c.delta_of_sexp(parse_one(b"(Set((price 100)(volume 300)(venue())))"), "") == row
    assert c.delta_of_sexp(b"Remove", "") == REMOVE


def test_build_envelope_of_the_delta_payload() -> None:
    body = DeltaView(
        b"vwap", b"AAPL", Patch(((0, 101.25), (2, (b"XNYS",)))), 42, 1700000000000000000, CompiledSchema(VWAP_V2)
    )
    payload = write_payload(body)
    assert payload == DELTA_104[59:-4]
    assert build_envelope(DELTA, 42, 1700000000000000123, b"vwap/v2", payload) == DELTA_104


def test_heartbeat_75_bytes() -> None:
    assert len(HEARTBEAT_75) == 75
    events = decode_all(HEARTBEAT_75)
    assert len(events) == 1
    msg = events[0]
    assert isinstance(msg, Message)
    assert msg.body == Heartbeat(b"w1", 5, 0.5)
    assert msg.frame.fingerprint == b"ripple.heartbeat/v1"
    assert msg.line == HEARTBEAT_LINE
    assert envelope_of_sexp(parse_one(HEARTBEAT_LINE), SchemaRegistry()).to_bytes() == HEARTBEAT_75


def test_both_messages_in_one_stream_at_their_offsets() -> None:
    events = decode_all(HEARTBEAT_75 + DELTA_104 + HEARTBEAT_75, vwap_registry())
    assert [e.offset for e in events] == [0, 75, 179]
    assert [e.line for e in events if isinstance(e, Message)] == [
        HEARTBEAT_LINE,
        DELTA_LINE,
        HEARTBEAT_LINE,
    ]
