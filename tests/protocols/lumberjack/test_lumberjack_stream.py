"""The Lumberjack stream decoder on hand-built bytes: partial frames,
bounds (payload, inflate, nesting, frame count), decompression bombs,
capture holes and resync, detection, and the encoder's errors."""

from __future__ import annotations

import json
import tracemalloc
import zlib
from pathlib import Path

import pytest
from ljkit import DISSECTOR, GOLDEN, A, C, D, J, W, decode, events, u32

from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.base import DEFAULT_MAX_INFLATE, Detection, DissectOptions, EncodeError, ProtoMessage
from ripple_cli.protocols.lumberjack import detect
from ripple_cli.protocols.lumberjack.stream import MAX_INNER_FRAMES, MAX_NESTING, LumberjackStream
from ripple_cli.sexp.parse import parse_one
from tests.conftest import run_cli
from tests.protocols.dissector_kit import bytewise, kinds, messages, problems, read_hex

# ---------------------------------------------------------------- frames arriving in pieces


def test_a_partial_frame_waits_for_the_rest() -> None:
    s = LumberjackStream(DissectOptions(), True)
    frame = J(1, b'{"message":"x"}')
    assert s.feed(W(1) + frame[:7]) != []  # the W
    assert s.buffered == 7
    assert s.feed(frame[7:12]) == []
    assert s.buffered == 12
    (msg,) = s.feed(frame[12:])
    assert isinstance(msg, ProtoMessage) and msg.fields["event"] == {"message": "x"}
    assert s.buffered == 0 and s.finish() == []


def test_a_data_frame_fed_byte_by_byte_is_read_pair_by_pair() -> None:
    pairs = [(b"k%d" % i, b"v" * i) for i in range(200)]
    items = decode(D(1, pairs), pieces=bytewise(D(1, pairs)))
    (msg,) = messages(items)
    assert msg.fields["pairs"] == 200 and msg.fields["event"]["k199"] == "v" * 199


def test_the_end_of_the_stream_inside_a_frame_is_truncated() -> None:
    items = decode(W(2) + J(1, b"{}") + J(2, b'{"a":1}')[:9])
    assert [(p.offset, p.kind, p.detail, p.skipped) for p in problems(items)] == [
        (18, "truncated", "the stream ends inside a J frame: it needs 10 bytes, 9 remain", 9)
    ]
    items = decode(D(1, [(b"line", b"hello")])[:16])
    assert problems(items)[0].detail == "the stream ends inside a D frame (16 bytes of it, its pairs incomplete)"


# ---------------------------------------------------------------- bounds


def test_lengths_above_max_payload_are_problems_not_allocations() -> None:
    opts = DissectOptions(max_payload=100)
    cases = [
        (J(1, b"x" * 101), "J frame length 101 above the maximum 100 (--max-payload)"),
        (C(b"x" * 101), "C frame length 101 above the maximum 100 (--max-payload)"),
        (b"1D" + u32(1) + u32(13), "D frame with 13 pairs: more than 100 bytes (--max-payload)"),
        (D(1, [(b"k" * 93, b"")]), "D frame key length 93: pairs above 100 bytes (--max-payload)"),
        (
            D(1, [(b"k", b"v" * 50), (b"k", b"v" * 50)]),
            "D frame value length 50: pairs above 100 bytes (--max-payload)",
        ),
    ]
    for frame, detail in cases:
        items = decode(frame + W(1), options=opts)
        (p,) = problems(items)
        assert (p.kind, p.detail, p.skipped) == ("bad_length", detail, len(frame))
        assert [m.type for m in messages(items)] == ["Window"]


def test_a_frame_at_the_bound_is_accepted() -> None:
    opts = DissectOptions(max_payload=100)
    assert kinds(decode(J(1, b"[" + b" " * 98 + b"]"), options=opts)) == []
    assert kinds(decode(D(1, [(b"k" * 46, b"v" * 46)]), options=opts)) == []


def test_inflating_exactly_to_the_bound_is_fine_one_byte_more_is_not() -> None:
    inner = J(1, b'{"pad":"' + b"x" * 1000 + b'"}')
    fits = DissectOptions(max_inflate=len(inner))
    assert kinds(decode(C(zlib.compress(inner)), options=fits)) == []
    short = DissectOptions(max_inflate=len(inner) - 1)
    items = decode(C(zlib.compress(inner)), options=short)
    assert [(p.offset, p.kind, p.detail) for p in problems(items)] == [
        (0, "inflate_limit", f"the C frame at offset 0 inflates to more than {len(inner) - 1} bytes (--max-inflate)")
    ]
    (c,) = messages(items)
    assert c.fields["inflated_size"] is None and c.fields["frames"] is None
    assert DISSECTOR.encode(parse_one(c.line)) == C(zlib.compress(inner))  # still shown, still re-encodable


def _bomb(size: int) -> bytes:
    z = zlib.compressobj(9)
    zeros = bytes(1 << 20)
    return b"".join(z.compress(zeros) for _ in range(size >> 20)) + z.flush()


def test_a_decompression_bomb_stops_at_the_default_bound_within_bounded_memory() -> None:
    bomb = C(_bomb(DEFAULT_MAX_INFLATE + (16 << 20)), b"2")  # 80 MiB of zeros in ~80 KB
    assert len(bomb) < 100_000
    tracemalloc.start()
    try:
        items = decode(W(1) + bomb + W(2))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [(p.offset, p.kind, p.detail, p.extra) for p in problems(items)] == [
        (6, "inflate_limit", "the C frame at offset 6 inflates to more than 67108864 bytes (--max-inflate)",
         {"limit": 67108864})
    ]  # fmt: skip
    assert [m.type for m in messages(items)] == ["Window", "Compressed", "Window"]
    assert peak < DEFAULT_MAX_INFLATE + (8 << 20)  # never the whole 80 MiB


def test_nested_c_frames_share_one_inflate_budget() -> None:
    # Each inner C inflates to 600 bytes; three of them exceed a 1500-byte budget.
    inner = C(zlib.compress(J(1, b'"' + b"x" * 588 + b'"')))
    outer = C(zlib.compress(inner * 3))
    items = decode(outer, options=DissectOptions(max_inflate=1500))
    assert kinds(items) == [(0, "inflate_limit")]
    assert problems(items)[0].detail == (
        "the C frame at offset 0 (nested 1 deep) inflates to more than 1500 bytes (--max-inflate)"
    )
    assert [m.type for m in messages(items)] == ["Compressed"] + ["Compressed", "Json"] * 2 + ["Compressed"]


def test_nesting_and_frame_count_are_bounded() -> None:
    frame = J(1, b"{}")
    for _ in range(MAX_NESTING + 1):
        frame = C(zlib.compress(frame))
    items = decode(frame)
    assert [(p.kind, p.detail) for p in problems(items)] == [
        ("inflate_limit", f"the C frame at offset 0 (nested {MAX_NESTING} deep): C frames nested more than 16 deep")
    ]
    assert len(messages(items)) == MAX_NESTING + 1  # the C frames down to the limit

    many = C(zlib.compress(W(1) * (MAX_INNER_FRAMES + 1)))
    items = decode(many)
    assert [(p.kind, p.detail) for p in problems(items)] == [
        ("inflate_limit", "the C frame at offset 0 holds more than 65536 frames")
    ]
    assert len(messages(items)) == 1 + MAX_INNER_FRAMES


# ---------------------------------------------------------------- damage and resync


def test_a_capture_hole_is_reported_and_decoding_resumes_at_the_next_frame() -> None:
    s = LumberjackStream(DissectOptions(), True)
    stream = W(2) + J(1, b'{"a":1}') + J(2, b'{"b":2}') + W(1) + J(1, b'{"c":3}')
    out = s.feed(stream[:10])  # the W, and the first 4 bytes of J 1
    out += s.gap(20)  # the rest of J 1 (13 bytes) and the first 7 of J 2
    out += s.feed(stream[30:])
    out += s.finish()
    # The damage runs from J 1 to the W after J 2, the hole included.
    assert [(p.offset, p.kind, p.detail, p.skipped) for p in problems(out)] == [
        (6, "gap", "20 bytes missing from the stream at offset 10", 34)
    ]
    msgs = messages(out)
    assert [(m.offset, m.type) for m in msgs] == [(0, "Window"), (40, "Window"), (46, "Json")]
    assert msgs[1].fields["after_damage"] is True and "after_damage" not in msgs[2].fields


def test_a_hole_between_frames_skips_only_the_hole() -> None:
    s = LumberjackStream(DissectOptions(), True)
    out = s.feed(W(1)) + s.gap(5) + s.feed(W(2)) + s.finish()
    assert [(p.offset, p.kind, p.skipped) for p in problems(out)] == [(6, "gap", 5)]
    assert [m.offset for m in messages(out)] == [0, 11]


def test_resync_looks_for_the_kinds_of_frame_the_direction_carries() -> None:
    # Garbage holding "2A" + 4 bytes (a well-formed ack) on the writer's side
    # is not taken for a frame; nor is a J whose payload is no JSON start.
    garbage = b"\xff2A\0\0\0\x012J\0\0\0\1\0\0\0\2ab"
    items = decode(W(1) + garbage + J(1, b"{}"), from_client=True)
    assert [(p.offset, p.kind, p.skipped) for p in problems(items)] == [(6, "bad_frame", len(garbage))]
    assert [m.type for m in messages(items)] == ["Window", "Json"]
    # On the reader's side only acks are looked for.
    items = decode(A(1) + b"\x00" + W(1) + A(2), from_client=False)
    assert [(p.offset, p.kind, p.skipped) for p in problems(items)] == [(6, "bad_frame", 7)]
    assert [m.fields["seq"] for m in messages(items)] == [1, 2]


def test_resync_keeps_the_writers_version() -> None:
    items = decode(W(1, b"1") + b"\x00" + W(1, b"2") + W(1, b"1"), from_client=True)
    assert [(p.offset, p.skipped) for p in problems(items)] == [(6, 7)]
    assert [m.fields["version"] for m in messages(items)] == [1, 1]


def test_problems_inside_a_c_frame_name_the_frame_and_inflated_byte() -> None:
    items = decode(W(1) + C(zlib.compress(J(1, b"{}") + b"9W\0\0\0\1")))
    (p,) = problems(items)
    assert (p.offset, p.kind, p.detail) == (
        6,
        "bad_frame",
        "the C frame at offset 6, inflated byte 12: bad version byte 0x39 (expected 0x31 or 0x32, ASCII 1 or 2); "
        "the last 6 inflated bytes are skipped",
    )


# ---------------------------------------------------------------- JSON


def test_json_payloads_are_parsed_strictly() -> None:
    cases = {
        b'{"a":[1,2.5,"\\u00e9",null,true]}': None,
        b"  7 ": None,
        b'{"a":1} x': "Extra data at byte 8",
        b"\xff": "not UTF-8 (byte 0)",
        b"[Infinity]": "Infinity is not JSON",
        b"[" * 100_000: "nested too deeply to parse",
        b'"\\udc00"': "a \\u escape gives a lone surrogate",
        b'"\\ud83d\\ude00"': None,  # a surrogate pair is one character
        # JSON's grammar, past a double's range: no value to show (JSON output was exit 70)
        b'{"x":1e400}': "number 1e400 out of range",
        b"[1,[-1e999]]": "number -1e999 out of range",
        b"[1e308, 4.9e-324, 1e-400]": None,  # the largest, the least, and an underflow to 0.0
    }
    for payload, why in cases.items():
        items = decode(J(1, payload))
        (msg,) = messages(items)
        if why is None:
            assert problems(items) == [], payload
            assert "payload" not in msg.fields
        else:
            assert [p.detail for p in problems(items)] == [f"J frame seq 1: invalid JSON: {why}"], payload
            assert msg.fields["event"] is None and "payload" in msg.fields
    assert events(decode(J(1, b'"\\ud83d\\ude00"'))) == [(1, "\U0001f600")]


def test_a_number_past_a_double_s_range_is_bad_json_in_every_format(tmp_path: Path) -> None:
    """The frame and the problem, in JSON too (it was an internal error,
    exit 70, and everything after the frame lost)."""
    path = tmp_path / "inf.lj"
    path.write_bytes(W(2) + J(1, b'{"x":1e400}') + J(2, b'{"x":1}'))
    for form in ("jsonl", "json", "sexp", "table"):
        r = run_cli(["decode", "-P", "lumberjack", "-F", form, str(path)])
        assert r.code == 1, (form, r.stderr)
        assert "J frame seq 1: invalid JSON: number 1e400 out of range" in r.text + r.stderr, form
    r = run_cli(["decode", "-P", "lumberjack", "-F", "jsonl", str(path)])
    rows = [json.loads(line) for line in r.text.splitlines()]
    assert [row.get("event", "-") for row in rows if "type" in row] == ["-", None, {"x": 1}]


# ---------------------------------------------------------------- detection


def test_detection_on_real_writers_and_readers() -> None:
    for name in ("v2-client", "v1-protocol", "v2-json", "v1-compressed", "acks"):
        data = read_hex(GOLDEN / f"{name}.hex")
        assert detect(data) is Detection.YES, name
        assert detect(data[:1]) is Detection.MORE
        assert detect(data[: 6 if name != "v2-client" else 8]) is Detection.YES, name


def test_detection_refuses_other_protocols_and_implausible_frames() -> None:
    from tests.conftest import EXAMPLES

    no = {
        "ripple": (EXAMPLES / "demo.ripple").read_bytes()[:4096],
        "rcp": bytes.fromhex("52435058 0001 0001 0000 00000027 15f193b1"),
        "http": b"GET / HTTP/1.1\r\n",
        "tls": bytes.fromhex("160301020001"),
        "huge window": W(1 << 21),
        "C, not zlib": C(b"\x1f\x8b\x08\x00" + bytes(20)),
        "J, not JSON": J(1, b"hello"),
        "D, no pairs": D(1, []),
        "versions mixed": W(1, b"1") + J(1, b"{}", b"2"),
        "acks after a W": W(1) + A(1),
        "an unknown type next": W(1) + b"2X",
    }
    for what, head in no.items():
        assert detect(head) is Detection.NO, what
    assert detect(b"2") is Detection.MORE and detect(b"2J\0\0\0\1\0\0\0") is Detection.MORE


# ---------------------------------------------------------------- encoding


def test_encode_names_what_is_wrong() -> None:
    cases = {
        b"(ripple(Window((version 2)(count 1))))": "expected (lumberjack(CONSTRUCTOR(FIELDS...)))",
        b"(lumberjack(Frob((version 2))))": "unknown Lumberjack message 'Frob' (expected one of "
        "Window, Ack, Data, Json, Compressed)",
        b"(lumberjack(Window((version 3)(count 1))))": "Window: version 3 (expected 1 or 2)",
        b"(lumberjack(Window((version 2))))": "Window: missing field 'count'",
        b"(lumberjack(Window((version 2)(count 1)(count 2))))": "Window: field 'count' given twice",
        b"(lumberjack(Window((version 2)(count -1))))": "Window: count -1 outside 0..4294967295",
        b"(lumberjack(Window((version 2)(count 4294967296))))": "Window: count 4294967296 outside 0..4294967295",
        b"(lumberjack(Ack((version 2)(seq x))))": "Ack: seq x is not a number",
        b"(lumberjack(Ack((version 2)(seq 1)(extra 1))))": "Ack: unknown field 'extra' (expected version, seq, "
        "in_compressed)",
        b"(lumberjack(Json((version 2)(seq 1)(json(a)))))": "Json: json must be an atom (a byte string), found a list",
        b"(lumberjack(Data((version 1)(seq 1)(pairs((a b c))))))": "Data: expected a pair (key value) of atoms, "
        "found (a b c)",
    }
    for text, message in cases.items():
        with pytest.raises(EncodeError) as e:
            DISSECTOR.encode(parse_one(text))
        assert str(e.value) == message, text


def test_encode_accepts_any_field_order_and_the_inner_marker() -> None:
    text = b'(lumberjack(Json((in_compressed 6)(json"{}")(seq 0x10)(version 2))))'
    assert DISSECTOR.encode(parse_one(text)) == J(16, b"{}")
    assert DISSECTOR.encode(parse_one(b"(lumberjack(Data((version 1)(seq 1)(pairs()))))")) == D(1, [])


def test_problem_and_message_types() -> None:
    items = decode(read_hex(GOLDEN / "odd.hex"))
    assert all(isinstance(i, ProtoMessage | Problem) for i in items)
    assert {p.kind for p in problems(items)} <= set(DISSECTOR.problem_kinds)
    assert {m.type for m in messages(items)} <= set(DISSECTOR.type_styles)


def test_after_damage_marks_the_frame_of_the_stream_not_the_frames_inside() -> None:
    s = LumberjackStream(DissectOptions(), True)
    out = s.feed(W(1)) + s.gap(3) + s.feed(C(zlib.compress(J(1, b"{}")))) + s.finish()
    assert [(m.type, m.fields.get("after_damage")) for m in messages(out)] == [
        ("Window", None),
        ("Compressed", True),
        ("Json", None),
    ]


def test_the_table_escapes_pairs_as_the_sexp_form_does(tmp_path: Path) -> None:
    """ESC, BEL, C1 and bytes that are not UTF-8 in a D pair: `\\027`,
    `\\007`, `\\155`, `\\255`, as Ripple's cells and the sexp form show
    them (it was Python's `\\x1b`)."""
    path = tmp_path / "ctrl.lj"
    path.write_bytes(W(1, b"1") + D(1, [(b"k\x1b[2J", b"v\x07"), (b"\xff", b"x\x9b31m")]))
    r = run_cli(["decode", "-P", "lumberjack", "-F", "table", str(path)])
    assert r.code == 0, r.stderr
    assert r.text.splitlines()[3].split()[-2:] == ["k\\027[2J=v\\007", "\\255=x\\15531m"]
    sexp = run_cli(["decode", "-P", "lumberjack", str(path)]).text
    assert '"k\\027[2J"' in sexp and '"\\255"' in sexp
