"""FrameDecoder and StreamDecoder: envelopes found in a byte stream, every
problem kind with its exact offset and skipped count, and decoding going on
after each of them."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c

from ripple_cli.codec.delta import CompiledSchema, Patch, SetRow
from ripple_cli.codec.envelope import DEFAULT_MAX_PAYLOAD, HEADER, MAGIC, Frame, build_envelope, frame_bytes
from ripple_cli.codec.framing import FrameDecoder
from ripple_cli.codec.messages import (
    CHECKPOINT_ACK,
    CHECKPOINT_REQUEST,
    DELTA,
    FIXED_FINGERPRINTS,
    HANDSHAKE,
    HEARTBEAT,
    SCHEMA_NEGOTIATION,
    CheckpointAck,
    CheckpointRequest,
    DeltaMode,
    DeltaMsg,
    DeltaView,
    Handshake,
    Heartbeat,
    SchemaNegotiation,
    UnknownPayload,
    write_payload,
)
from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.codec.registry import SchemaRegistry
from ripple_cli.codec.schema import FLOAT, INT, STRING, Field, OptionOf, Schema
from ripple_cli.codec.text import envelope_of_sexp
from ripple_cli.protocols.ripple.decoder import StreamDecoder
from ripple_cli.protocols.ripple.message import Message
from ripple_cli.sexp import parse_one

VWAP_V2 = Schema(
    b"vwap",
    2,
    STRING,
    (Field(b"price", FLOAT), Field(b"volume", INT), Field(b"venue", OptionOf(STRING), b"()")),
)
VWAP = CompiledSchema(VWAP_V2)
KEY = VWAP.write_key(b"AAPL")
PATCH = VWAP.write_delta(Patch(((0, 101.25), (2, (b"XNYS",)))))


def env(body, seq: int, time_ns: int = 0, flags: int = 0, fp: bytes | None = None, version: int = 1) -> bytes:  # type: ignore[no-untyped-def]
    payload = write_payload(body)
    tag = body.tag if isinstance(body, UnknownPayload) else _tag(body)
    if fp is None:
        fp = b"vwap/v2" if tag == DELTA else FIXED_FINGERPRINTS.get(tag, b"x")
    return build_envelope(tag, seq, time_ns, fp, payload, flags=flags, version=version)


def _tag(body) -> int:  # type: ignore[no-untyped-def]
    return {
        Handshake: HANDSHAKE,
        DeltaMsg: DELTA,
        DeltaView: DELTA,
        CheckpointRequest: CHECKPOINT_REQUEST,
        CheckpointAck: CHECKPOINT_ACK,
        Heartbeat: HEARTBEAT,
        SchemaNegotiation: SCHEMA_NEGOTIATION,
    }[type(body)]


def heartbeat(seq: int) -> bytes:
    return env(Heartbeat(b"w1", seq, 0.5), seq, time_ns=seq)  # 75 bytes


def delta(seq: int, key: bytes = KEY, delta_bytes: bytes = PATCH) -> bytes:
    return env(DeltaMsg(b"vwap", key, delta_bytes, seq, None), seq)


def handshake(seq: int) -> bytes:
    return env(Handshake(b"worker-1", ((b"vwap", VWAP_V2),), 1), seq)


def raw_envelope(tag: int, seq: int, payload: bytes, length: int | None = None, fp: bytes = b"x") -> bytes:
    """An envelope with any length field and a correct CRC."""
    n = len(payload) if length is None else length
    body = HEADER.pack(MAGIC, 1, tag, 0, seq, 0, fp.ljust(32, b"\0"), n) + payload
    return body + struct.pack("<I", crc32c(body))


def events_of(data: bytes, **kw) -> list[Message | Problem]:  # type: ignore[no-untyped-def]
    dec = StreamDecoder(**kw)
    return [*dec.feed(data), *dec.finish()]


def frames_of(data: bytes, **kw) -> list[Frame | Problem]:  # type: ignore[no-untyped-def]
    dec = FrameDecoder(**kw)
    return [*dec.feed(data), *dec.finish()]


def shape(events: list) -> list:  # type: ignore[type-arg]
    """(offset, what) for each event: a message's body class or a problem's kind."""
    return [(e.offset, type(e.body).__name__ if isinstance(e, Message) else (e.kind, e.skipped)) for e in events]


def fed_in_chunks(data: bytes, size: int, **kw) -> list:  # type: ignore[no-untyped-def,type-arg]
    dec = StreamDecoder(**kw)
    out = []
    for i in range(0, len(data), size):
        out += dec.feed(data[i : i + size])
    return out + dec.finish()


def lines(events: list) -> list:  # type: ignore[type-arg]
    return [e.line if isinstance(e, Message) else e for e in events]


# ---------------------------------------------------------------- clean streams


def test_clean_stream_of_every_type() -> None:
    parts = [
        handshake(1),
        delta(2),
        env(CheckpointRequest(7, 123), 3),
        env(CheckpointAck(b"w1", 7, ((b"vwap", 2),)), 4),
        heartbeat(5),
        env(SchemaNegotiation(True, ()), 6),
    ]
    data = b"".join(parts)
    offsets = [sum(len(p) for p in parts[:i]) for i in range(len(parts))]
    events = events_of(data)
    assert all(isinstance(e, Message) for e in events)
    assert [e.offset for e in events] == offsets
    assert [type(e.body) for e in events] == [
        Handshake,
        DeltaView,
        CheckpointRequest,
        CheckpointAck,
        Heartbeat,
        SchemaNegotiation,
    ]
    assert [frame_bytes(e.frame) for e in events] == parts
    assert events[2].body == CheckpointRequest(7, 123)
    assert events[3].body == CheckpointAck(b"w1", 7, ((b"vwap", 2),))
    assert events[5].body == SchemaNegotiation(True, ())
    # every chunking gives the same
    for size in (1, 2, 3, 7, 59, 63, 64, 100, 1000):
        assert lines(fed_in_chunks(data, size)) == lines(events)


def test_empty_stream() -> None:
    assert events_of(b"") == []


def test_start_offset_shifts_every_offset() -> None:
    data = heartbeat(1) + b"junk" + heartbeat(2)
    events = events_of(data, start_offset=1000)
    assert shape(events) == [(1000, "Heartbeat"), (1075, ("bad_magic", 4)), (1079, "Heartbeat")]


def test_frame_fields() -> None:
    (frame,) = frames_of(env(Heartbeat(b"w", 1, 0.0), 9, time_ns=-5, flags=3, fp=b"abc"))
    assert isinstance(frame, Frame)
    assert (frame.offset, frame.version, frame.tag, frame.flags, frame.seq, frame.time_ns, frame.fingerprint) == (
        0,
        1,
        HEARTBEAT,
        3,
        9,
        -5,
        b"abc",
    )
    assert frame.size == 63 + len(frame.payload)


# ---------------------------------------------------------------- framing problems

BAD_MAGIC = "bad magic {} (expected 52 49 50 50, RIPP)"


def test_garbage_at_start() -> None:
    data = b"garbage!" + heartbeat(1)
    events = events_of(data)
    assert events[0] == Problem(0, "bad_magic", BAD_MAGIC.format("67 61 72 62"), skipped=8)
    assert shape(events) == [(0, ("bad_magic", 8)), (8, "Heartbeat")]


def test_garbage_between_envelopes() -> None:
    g = b"\x00RIP\x00RIPQ" + b"x" * 100
    data = heartbeat(1) + g + heartbeat(2) + heartbeat(3)
    events = events_of(data)
    assert events[1] == Problem(75, "bad_magic", BAD_MAGIC.format("00 52 49 50"), skipped=len(g))
    assert shape(events) == [(0, "Heartbeat"), (75, ("bad_magic", 109)), (184, "Heartbeat"), (259, "Heartbeat")]


def test_garbage_only_and_short_garbage() -> None:
    assert events_of(b"hello") == [Problem(0, "bad_magic", BAD_MAGIC.format("68 65 6c 6c"), skipped=5)]
    assert events_of(b"x" * 500) == [Problem(0, "bad_magic", BAD_MAGIC.format("78 78 78 78"), skipped=500)]
    # garbage after the last envelope, shorter than a header
    assert shape(events_of(heartbeat(1) + b"zz")) == [(0, "Heartbeat"), (75, ("bad_magic", 2))]


def test_bad_version() -> None:
    bad = env(Heartbeat(b"w1", 2, 0.5), 2, version=2)
    data = heartbeat(1) + bad + heartbeat(3)
    events = events_of(data)
    assert events[1] == Problem(
        75, "bad_version", "unsupported protocol version 2 (only 1 is supported)", skipped=len(bad)
    )
    assert shape(events) == [(0, "Heartbeat"), (75, ("bad_version", 75)), (150, "Heartbeat")]


def test_negative_length() -> None:
    bad = raw_envelope(HEARTBEAT, 2, b"\x00" * 12, length=-1)
    data = heartbeat(1) + bad + heartbeat(3)
    events = events_of(data)
    assert events[1] == Problem(75, "bad_length", "payload length -1 outside 0..16777216", skipped=len(bad))
    assert shape(events)[2] == (150, "Heartbeat")


def test_length_above_default_max() -> None:
    bad = raw_envelope(HEARTBEAT, 2, b"\x00" * 12, length=DEFAULT_MAX_PAYLOAD + 1)
    events = events_of(bad + heartbeat(3))
    assert events[0] == Problem(0, "bad_length", "payload length 16777217 outside 0..16777216", skipped=75)
    assert shape(events)[1] == (75, "Heartbeat")


def test_length_above_configured_max() -> None:
    small = env(CheckpointRequest(1, 2), 2)  # payload of 2 bytes
    big = heartbeat(1)  # payload of 12 bytes
    events = events_of(big + small + big, max_payload=10)
    assert events == [
        Problem(0, "bad_length", "payload length 12 outside 0..10", skipped=75),
        events[1],
        Problem(140, "bad_length", "payload length 12 outside 0..10", skipped=75),
    ]
    assert isinstance(events[1], Message) and events[1].offset == 75
    # the maximum itself is allowed
    assert shape(events_of(big, max_payload=12)) == [(0, "Heartbeat")]
    assert shape(events_of(big, max_payload=11)) == [(0, ("bad_length", 75))]


def test_crc_mismatch() -> None:
    good = heartbeat(2)
    bad = bytearray(good)
    bad[65] ^= 0x01  # a payload byte
    stored = struct.unpack("<I", good[-4:])[0]
    computed = crc32c(bytes(bad[:-4]))
    data = heartbeat(1) + bytes(bad) + heartbeat(3)
    events = events_of(data)
    assert events[1] == Problem(
        75, "crc_mismatch", f"CRC mismatch: stored {stored:08x}, computed {computed:08x}", skipped=75
    )
    assert shape(events) == [(0, "Heartbeat"), (75, ("crc_mismatch", 75)), (150, "Heartbeat")]
    # a damaged CRC field itself
    bad = bytearray(good)
    bad[-1] ^= 0x80
    assert shape(events_of(bytes(bad) + good)) == [(0, ("crc_mismatch", 75)), (75, "Heartbeat")]


def test_truncated_tail() -> None:
    data = heartbeat(1) + heartbeat(2)[:-5]
    events = events_of(data)
    assert events[1] == Problem(
        75, "truncated", "stream ends inside an envelope: it needs 75 bytes, 70 remain", skipped=70
    )
    data = heartbeat(1) + heartbeat(2)[:10]
    assert events_of(data)[1] == Problem(
        75, "truncated", "stream ends inside an envelope header (10 of 59 bytes)", skipped=10
    )
    assert events_of(b"RI") == [
        Problem(0, "truncated", "stream ends inside an envelope header (2 of 59 bytes)", skipped=2)
    ]
    # nothing is reported before the end: more bytes could still come
    dec = StreamDecoder()
    assert [e.offset for e in dec.feed(data)] == [0]
    assert dec.frames.buffered == 10
    assert [e.kind for e in dec.finish()] == ["truncated"]  # type: ignore[union-attr]


def test_corrupted_length_field_followed_by_intact_messages() -> None:
    parts = [heartbeat(i) for i in range(1, 6)]
    # length 1000: more than what follows, so only the end of the stream tells
    bad = bytearray(parts[0])
    bad[55:59] = struct.pack("<i", 1000)
    data = bytes(bad) + b"".join(parts[1:])
    events = events_of(data)
    assert events[0] == Problem(
        0,
        "bad_length",
        f"payload length runs past the end of the stream (it needs 1063 bytes, {len(data)} remain), "
        "yet a whole envelope follows: the length is wrong",
        skipped=75,
    )
    assert shape(events)[1:] == [(75 * i, "Heartbeat") for i in range(1, 5)]
    assert [frame_bytes(e.frame) for e in events[1:]] == parts[1:]  # type: ignore[union-attr]
    # length 100: the claimed envelope ends inside the next one, whose CRC position is read
    bad[55:59] = struct.pack("<i", 100)
    data = bytes(bad) + b"".join(parts[1:])
    stored = struct.unpack("<I", data[159:163])[0]
    computed = crc32c(data[:159])
    events = events_of(data)
    assert events[0] == Problem(
        0, "crc_mismatch", f"CRC mismatch: stored {stored:08x}, computed {computed:08x}", skipped=75
    )
    assert shape(events)[1:] == [(75 * i, "Heartbeat") for i in range(1, 5)]
    # length 0 and a shorter claimed envelope
    bad[55:59] = struct.pack("<i", 0)
    assert shape(events_of(bytes(bad) + b"".join(parts[1:])))[1:] == [(75 * i, "Heartbeat") for i in range(1, 5)]


def test_damage_inside_a_region_reports_once() -> None:
    # several damaged envelopes in a row are one region, reported where it starts
    bad1 = bytearray(heartbeat(2))
    bad1[70] ^= 0xFF
    bad2 = env(Heartbeat(b"w1", 3, 0.5), 3, version=7)
    data = heartbeat(1) + bytes(bad1) + b"zzz" + bad2 + heartbeat(4)
    events = events_of(data)
    assert shape(events) == [(0, "Heartbeat"), (75, ("crc_mismatch", 153)), (228, "Heartbeat")]


def test_envelope_inside_damaged_region_is_found() -> None:
    # a magic inside the damaged bytes is tried and passed over, byte by byte
    data = b"RIPP" + b"\x01" * 60 + heartbeat(1)
    events = events_of(data)
    assert shape(events) == [(0, ("bad_length", 64)), (64, "Heartbeat")]


def test_envelope_after_a_long_claim_is_found_in_any_chunking() -> None:
    """A candidate after damage claiming a long payload (its CRC from the
    prefix marks, crcrange.py) reaches past an intact envelope's start; the
    buffer, made room for between chunks, must keep the bytes from the mark
    before that envelope (it kept them only from the last mark, so a chunk
    ending inside the envelope lost it)."""
    good = build_envelope(5, 1, 0, b"x", b"A" * 2000)
    claim = HEADER.pack(MAGIC, 1, 5, 0, 1, 0, b"x".ljust(32, b"\0"), 1500)
    data = b"\x00" + claim + b"j" * (500 - 1 - len(claim)) + good + b"z" * 100
    for cut in range(1600, 500 + len(good), 97):
        dec = FrameDecoder()
        items = dec.feed(data[:cut]) + dec.feed(data[cut:]) + dec.finish()
        frames = [i for i in items if isinstance(i, Frame)]
        assert [f.offset for f in frames] == [500], cut


# ---------------------------------------------------------------- payload problems


def test_payload_bytes_left_over_is_bad_payload_then_decoding_goes_on() -> None:
    payload = write_payload(Heartbeat(b"w1", 2, 0.5)) + b"\x00"
    bad = build_envelope(HEARTBEAT, 2, 0, b"ripple.heartbeat/v1", payload)
    data = heartbeat(1) + bad + heartbeat(3)
    events = events_of(data)
    assert events[1] == Problem(
        75, "bad_payload", "payload does not decode: 1 byte left over after the payload at byte 12", seq=2
    )
    assert shape(events) == [(0, "Heartbeat"), (75, ("bad_payload", 0)), (151, "Heartbeat")]


@pytest.mark.parametrize(
    ("tag", "payload", "detail"),
    [
        (SCHEMA_NEGOTIATION, b"\x02\x00", "bad bool 0x02 at byte 0"),
        (DELTA, b"\x01a\x00\x00\x01\x02", "bad option tag 0x02 at byte 5"),
        (HANDSHAKE, b"\x00\x01\x01v\x01v\x02\x0a\x00\x00", "bad field_type tag 10 at byte 7"),
        (CHECKPOINT_REQUEST, b"\x01", "truncated: need an integer at byte 1"),
        (CHECKPOINT_ACK, b"\x00\x01\x05", "list of 5 elements cannot fit in 0 bytes at byte 2"),
        (HEARTBEAT, b"", "truncated: need a length at byte 0"),
        (DELTA, b"\x00\x00\x00\xff\x05\x00", "bad negative int8 5 at byte 3"),
    ],
)
def test_bad_payloads(tag: int, payload: bytes, detail: str) -> None:
    bad = build_envelope(tag, 2, 0, b"x", payload)
    events = events_of(bad + heartbeat(3))
    assert events[0] == Problem(0, "bad_payload", f"payload does not decode: {detail}", seq=2)
    assert shape(events)[1] == (len(bad), "Heartbeat")


def test_delta_that_does_not_fit_its_schema_is_bad_delta_and_shown_raw() -> None:
    reg = SchemaRegistry()
    reg.add(VWAP_V2)
    bad = delta(2, delta_bytes=PATCH + b"\x00")
    events = events_of(bad + delta(3), registry=reg)
    assert events[0] == Problem(
        0, "bad_delta", "Delta does not decode with schema vwap/v2: delta: 1 byte left over at byte 18", seq=2
    )
    assert isinstance(events[1], Message) and events[1].body == DeltaMsg(b"vwap", KEY, PATCH + b"\x00", 2, None)
    assert isinstance(events[2], Message) and isinstance(events[2].body, DeltaView)
    bad_key = delta(4, key=b"\x05AAPL")
    events = events_of(bad_key, registry=reg)
    assert events[0] == Problem(
        0,
        "bad_delta",
        "Delta does not decode with schema vwap/v2: truncated: string of 5 bytes, 4 left at byte 1",
        seq=4,
    )


# ---------------------------------------------------------------- warnings


def test_unknown_message_type() -> None:
    body = UnknownPayload(9, b"\x01\x02(")
    e = build_envelope(9, 2, 3, b"future/v1", body.payload)
    events = events_of(heartbeat(1) + e + heartbeat(3))
    assert events[1] == Problem(
        75, "unknown_type", "unknown message type 9, shown raw", severity=Severity.WARNING, seq=2
    )
    msg = events[2]
    assert isinstance(msg, Message) and msg.offset == 75
    assert msg.body == body
    line = msg.line
    assert line == b'((seq 2)(time_ns 3)(schema future/v1)(msg(Unknown((tag 9)(payload"\\001\\002(")))))'
    assert envelope_of_sexp(parse_one(line), SchemaRegistry()).to_bytes() == e
    assert shape(events)[3] == (75 + len(e), "Heartbeat")


def test_nonzero_flags() -> None:
    e = env(Heartbeat(b"w1", 2, 0.5), 2, time_ns=2, flags=5)
    events = events_of(e)
    assert events[0] == Problem(0, "flags", "non-zero reserved flags 0x05", severity=Severity.WARNING, seq=2)
    msg = events[1]
    assert isinstance(msg, Message) and msg.frame.flags == 5
    line = msg.line
    assert line == (
        b"((seq 2)(time_ns 2)(schema ripple.heartbeat/v1)(flags 5)(msg(Heartbeat((worker_id w1)(timestamp_ns 2)"
        b"(load 0.5)))))"
    )
    spec = envelope_of_sexp(parse_one(line), SchemaRegistry())
    assert spec.flags == 5
    assert spec.to_bytes() == e


def test_flags_and_unknown_type_together_and_in_order() -> None:
    e = build_envelope(200, 2, 0, b"", b"", flags=255)
    events = events_of(e)
    assert [(x.kind, x.severity) for x in events[:2]] == [  # type: ignore[union-attr]
        ("flags", Severity.WARNING),
        ("unknown_type", Severity.WARNING),
    ]
    assert isinstance(events[2], Message)
    line = events[2].line
    assert line == b'((seq 2)(time_ns 0)(schema"")(flags 255)(msg(Unknown((tag 200)(payload"")))))'
    assert envelope_of_sexp(parse_one(line), SchemaRegistry()).to_bytes() == e


# ---------------------------------------------------------------- schemas and modes


def test_handshake_schemas_apply_to_later_deltas_only() -> None:
    data = delta(1) + handshake(2) + delta(3)
    events = events_of(data)
    assert [type(e.body) for e in events] == [DeltaMsg, Handshake, DeltaView]  # type: ignore[union-attr]
    view = events[2].body  # type: ignore[union-attr]
    assert view.key == b"AAPL"
    assert view.delta == Patch(((0, 101.25), (2, (b"XNYS",))))
    assert view.schema.schema == VWAP_V2


def test_handshake_of_one_connection_does_not_serve_another() -> None:
    parent = SchemaRegistry()
    first = StreamDecoder(parent)
    assert [type(e.body) for e in first.feed(handshake(1) + delta(2))] == [Handshake, DeltaView]  # type: ignore[union-attr]
    second = StreamDecoder(parent)
    assert [type(e.body) for e in second.feed(delta(1))] == [DeltaMsg]  # type: ignore[union-attr]
    assert b"vwap/v2" not in parent


def test_registry_schema_is_used_and_a_handshake_replaces_it() -> None:
    other = Schema(b"vwap", 2, STRING, (Field(b"price", FLOAT),))
    reg = SchemaRegistry()
    reg.add(other)
    set_price = CompiledSchema(other).write_delta(SetRow({"price": 1.0}))
    data = delta(1, delta_bytes=set_price) + handshake(2) + delta(3)
    events = events_of(data, registry=reg)
    assert isinstance(events[0].body, DeltaView)  # type: ignore[union-attr]
    assert events[0].body.delta == SetRow({"price": 1.0})  # type: ignore[union-attr]
    assert events[2].body.schema.schema == VWAP_V2  # type: ignore[union-attr]


def test_raw_mode_applies_no_schema() -> None:
    reg = SchemaRegistry()
    reg.add(VWAP_V2)
    data = handshake(1) + delta(2) + delta(3, delta_bytes=b"\x07")
    events = events_of(data, registry=reg, delta_mode=DeltaMode.RAW)
    assert [type(e.body) for e in events] == [Handshake, DeltaMsg, DeltaMsg]  # type: ignore[union-attr]
    assert all(isinstance(e, Message) for e in events)
    assert events[1].line.startswith(
        b'((seq 2)(time_ns 0)(schema vwap/v2)(msg(Delta((source_output vwap)(key"\\004AAPL")(delta_bytes"'
    )


def test_validate_mode_checks_but_keeps_raw() -> None:
    data = handshake(1) + delta(2) + delta(3, delta_bytes=PATCH + b"\x00") + delta(4, delta_bytes=b"\x01\x01\x03")
    events = events_of(data, delta_mode=DeltaMode.VALIDATE)
    assert shape(events) == [
        (0, "Handshake"),
        (events[1].offset, "DeltaMsg"),
        (events[2].offset, ("bad_delta", 0)),
        (events[2].offset, "DeltaMsg"),
        (events[4].offset, ("bad_delta", 0)),
        (events[4].offset, "DeltaMsg"),
    ]
    assert events[2].detail == "Delta does not decode with schema vwap/v2: delta: 1 byte left over at byte 18"  # type: ignore[union-attr]
    assert events[4].detail == "Delta does not decode with schema vwap/v2: bad update tag 3 at byte 2"  # type: ignore[union-attr]
    # and what VALIDATE accepts, DECODE decodes
    decoded = events_of(data)
    assert [e.kind for e in decoded if isinstance(e, Problem)] == ["bad_delta", "bad_delta"]


def test_buffered_stays_small_while_scanning_garbage() -> None:
    dec = FrameDecoder()
    for _ in range(100):
        dec.feed(b"x" * 1000)
        assert dec.buffered <= 3
    out = dec.feed(heartbeat(1)) + dec.finish()
    assert [type(x).__name__ for x in out] == ["Problem", "Frame"]
    assert out[0] == Problem(0, "bad_magic", BAD_MAGIC.format("78 78 78 78"), skipped=100000)  # type: ignore[comparison-overlap]


@pytest.mark.parametrize("garbage", [b"\x00", b"RI", b"PP\x01", b"RIPP", b"RIPP\x01"])
def test_a_few_garbage_bytes_before_an_envelope(garbage: bytes) -> None:
    data = heartbeat(1) + garbage + heartbeat(2)
    events = events_of(data)
    assert shape(events) == [(0, "Heartbeat"), (75, (events[1].kind, len(garbage))), (75 + len(garbage), "Heartbeat")]  # type: ignore[union-attr]


def test_magic_split_across_chunks_after_damage() -> None:
    data = b"garbage" + heartbeat(1) + b"x" + heartbeat(2)
    expected = lines(events_of(data))
    assert shape(events_of(data)) == [
        (0, ("bad_magic", 7)),
        (7, "Heartbeat"),
        (82, ("bad_magic", 1)),
        (83, "Heartbeat"),
    ]
    for cut in range(len(data) + 1):
        dec = StreamDecoder()
        got = dec.feed(data[:cut]) + dec.feed(data[cut:]) + dec.finish()
        assert lines(got) == expected, cut
