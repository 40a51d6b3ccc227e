"""The per-direction decoder at its edges: partial messages, the size bound
(skipping without buffering), lost framing (unknown codes, endless
varints, gaps) shown raw, the elementSize state, joining split elements."""

from __future__ import annotations

import pytest
from rs_bytes import (
    DISSECTOR,
    cancel,
    client_hello,
    decode,
    int32,
    last_part,
    leb,
    lp,
    on_complete,
    on_next,
    on_next_packed,
    on_subscribe,
    part,
    request,
    subscribe,
)

from ripple_cli.protocols.base import DissectOptions, Item, ProtoMessage
from ripple_cli.protocols.reactive_streams import stream as rs_stream
from ripple_cli.protocols.reactive_streams.stream import ReactiveStreamsStream
from tests.protocols.dissector_kit import chunkings, messages, problems

SMALL = DissectOptions(max_payload=16)


def lines(items: list[Item]) -> list[str]:
    """Messages as their text, problems as `kind@offset`."""
    return [i.line.decode() if isinstance(i, ProtoMessage) else f"{i.kind}@{i.offset}" for i in items]


def test_partial_message_waits() -> None:
    s = ReactiveStreamsStream(DissectOptions())
    data = subscribe(b"trades", 1, 300)
    for k in range(len(data) - 1):
        assert s.feed(data[k : k + 1]) == []
    (m,) = s.feed(data[-1:])
    assert isinstance(m, ProtoMessage) and (m.offset, m.size, m.type) == (0, len(data), "Subscribe")
    assert s.finish() == []


def test_truncated_at_the_end() -> None:
    data = client_hello() + request(1, 5)[:2]
    items = decode([data])
    (p,) = problems(items)
    assert (p.offset, p.kind, p.skipped) == (3, "truncated", 2)
    assert p.detail == "the stream ends inside a Request message (2 bytes of it)"


def test_too_long_element_is_skipped_not_buffered() -> None:
    big = on_next(1, bytes(range(20)))  # 22 bytes, element above 16
    data = client_hello() + big + cancel(1)
    for chunks in chunkings(data):
        s = ReactiveStreamsStream(SMALL)
        items = []
        for c in chunks:
            items += s.feed(c)
            assert s.buffered <= 16 + 64
        items += s.finish()
        assert [(type(i).__name__, i.offset) for i in items] == [
            ("ProtoMessage", 0),
            ("Problem", 3),
            ("ProtoMessage", 3 + len(big)),
        ]
        (p,) = problems(items)
        assert (p.kind, p.skipped) == ("too_long", len(big))
        assert p.detail == "OnNext element of 20 bytes is above the maximum of 16"
        assert messages(items)[1].type == "Cancel"


def test_too_long_publisher_skips_the_trailing_varints_too() -> None:
    big = subscribe(b"p" * 40, 300, 1 << 40)
    data = big + request(300, 1)
    for chunks in chunkings(data):
        items = decode(chunks, SMALL)
        assert [(type(i).__name__, i.offset) for i in items] == [("Problem", 0), ("ProtoMessage", len(big))]
        assert problems(items)[0].skipped == len(big)


def test_too_long_fixed_size_element() -> None:
    data = on_subscribe(1, 100) + on_next(1, bytes(100), fixed=True) + cancel(1)
    items = decode([data], SMALL)
    assert [i.type if isinstance(i, ProtoMessage) else i.kind for i in items] == ["OnSubscribe", "too_long", "Cancel"]
    assert problems(items)[0].skipped == 102


def test_packed_above_ripples_element_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    from ripple_cli.protocols.reactive_streams import wire

    monkeypatch.setattr(wire, "MAX_PACKED", 4)
    data = on_subscribe(1, 1) + on_next_packed(1, [b"a"] * 5) + on_next_packed(1, [b"b"] * 4)
    items = decode([data])
    assert [i.type if isinstance(i, ProtoMessage) else i.kind for i in items] == [
        "OnSubscribe",
        "too_long",
        "OnNextPacked",
    ]
    assert problems(items)[0].detail == "OnNextPacked of 5 elements is above ripple's bound of 4"


def test_gap_inside_a_skipped_message_keeps_the_framing() -> None:
    big = on_next(1, bytes(40))
    s = ReactiveStreamsStream(SMALL)
    items = s.feed(big[:10]) + s.gap(20) + s.feed(big[30:] + cancel(1)) + s.finish()
    assert [i.type if isinstance(i, ProtoMessage) else (i.kind, i.offset) for i in items] == [
        ("gap", 10),
        ("too_long", 0),
        "Cancel",
    ]


def test_unknown_type_code_then_raw_blocks() -> None:
    data = client_hello() + b"\x63" + bytes(10000)
    for chunks in chunkings(data, seed=3):
        items = decode(chunks)
        assert [i.kind for i in problems(items)] == ["unknown_type"]
        ms = messages(items)
        assert [(m.type, m.offset, m.size) for m in ms] == [
            ("ClientHello", 0, 3),
            ("Raw", 3, 4096),
            ("Raw", 4099, 4096),
            ("Raw", 8195, 1809),
        ]
        assert b"".join(DISSECTOR.encode(m.text) for m in ms) == data


def test_gap_stops_decoding() -> None:
    s = ReactiveStreamsStream(DissectOptions())
    items = s.feed(client_hello() + request(1, 5)[:2])
    items += s.gap(7)
    items += s.feed(cancel(1))
    items += s.finish()
    assert lines(items) == [
        "(reactive-streams(ClientHello((version 0)(extensions()))))",
        '(reactive-streams(Raw((data"\\004\\001"))))',
        "gap@5",
        '(reactive-streams(Raw((data"\\005\\001"))))',
    ]
    assert problems(items)[0].detail == (
        "7 bytes missing from the stream; no framing to resynchronise on: the rest of this direction is shown raw"
    )
    assert messages(items)[-1].offset == 12


def test_varint_past_ten_bytes_loses_the_framing() -> None:
    data = client_hello() + b"\x05" + b"\xff" * 10 + b"\x01" + cancel(2)
    items = decode([data])
    assert lines(items) == [
        "(reactive-streams(ClientHello((version 0)(extensions()))))",
        "bad_varint@3",
        '(reactive-streams(Raw((data"\\005\\255\\255\\255\\255\\255\\255\\255\\255\\255\\255\\001\\005\\002"))))',
    ]
    assert problems(items)[0].detail == (
        "Cancel subscriber: a varint runs past 10 bytes; the rest of this direction is shown raw"
    )


def test_varint_of_ten_bytes_above_64_bits() -> None:
    # Ten bytes end the varint (its extent is known): the message is raw, decoding goes on.
    data = b"\x05" + b"\xff" * 9 + b"\x7f" + cancel(2)
    items = decode([data])
    assert lines(items) == ["bad_varint@0", '(reactive-streams(Raw((data"\\005' + "\\255" * 9 + '\\127"))))',
                            "(reactive-streams(Cancel((subscriber 2))))"]  # fmt: skip
    assert problems(items)[0].detail == f"Cancel subscriber {(1 << 70) - 1} does not fit 64 bits"


def test_hello_listing_too_many_extensions() -> None:
    data = b"\x01\x00" + leb(65537) + b"\x01" * 10
    items = decode([data])
    assert lines(items)[0] == "bad_count@0"
    assert problems(items)[0].detail == (
        "ClientHello lists 65537 extensions, above ripple's bound of 65536; the rest of this direction is shown raw"
    )


def test_packed_without_element_size() -> None:
    data = on_next_packed(1, [b"ab", b"cd"]) + cancel(1)
    items = decode([data])
    assert lines(items)[0] == "no_element_size@0"
    assert [m.type for m in messages(items)] == ["Raw"]
    # An empty pack needs no size.
    assert lines(decode([on_next_packed(1, [])])) == [
        "(reactive-streams(OnNextPacked((subscriber 1)(element_size 0)(count 0)(elements()))))"
    ]


def test_element_size_per_subscription_and_its_end() -> None:
    data = b"".join(
        (
            on_subscribe(1, 4),
            on_subscribe(2, 0),
            on_next(1, int32(7), fixed=True),
            on_next(2, b"prefixed"),
            on_complete(1),  # subscription 1 over: its size is forgotten
            on_next(1, b"xy"),  # (a violation for verify) decoded as length-prefixed
            on_subscribe(2, 2),  # Id 2 again, now fixed
            on_next(2, b"zz", fixed=True),
            on_subscribe(2, 0),  # and back
            on_next(2, b"w"),
        )
    )
    ms = messages(decode([data]))
    assert [(m.type, m.fields.get("element_size"), m.fields.get("element")) for m in ms] == [
        ("OnSubscribe", 4, None),
        ("OnSubscribe", 0, None),
        ("OnNext", 4, "\x00\x00\x00\x07"),
        ("OnNext", 0, "prefixed"),
        ("OnComplete", None, None),
        ("OnNext", 0, "xy"),
        ("OnSubscribe", 2, None),
        ("OnNext", 2, "zz"),
        ("OnSubscribe", 0, None),
        ("OnNext", 0, "w"),
    ]


def test_split_elements_interleaved() -> None:
    data = b"".join(
        (
            part(1, 1, b"AA"),
            part(2, 1, b"bb"),  # another subscription, same element Id
            part(1, 2, b"CC"),  # another element of the same subscription
            last_part(1, 1, b"aa"),
            last_part(2, 1, b"BB"),
            last_part(1, 2, b"cc"),
            last_part(1, 1, b"single"),  # an element of one (last) part
        )
    )
    last = [m.fields for m in messages(decode([data])) if m.type == "OnNextLastPart"]
    assert [(f["subscriber"], f["element_id"], f["parts"], f["element"]) for f in last] == [
        (1, 1, 2, "AAaa"),
        (2, 1, 2, "bbBB"),
        (1, 2, 2, "CCcc"),
        (1, 1, 1, "single"),
    ]


def test_joined_elements_are_bounded() -> None:
    # The parts are shown; the join is given up once it passes max_payload.
    data = part(1, 1, b"x" * 10) + part(1, 1, b"y" * 10) + last_part(1, 1, b"z") + last_part(1, 2, b"ok")
    s = ReactiveStreamsStream(SMALL)
    items = s.feed(data) + s.finish()
    assert s.buffered == 0
    assert [p.kind for p in problems(items)] == ["join_limit"]
    last = [m for m in messages(items) if m.type == "OnNextLastPart"]
    assert last[0].line == b"(reactive-streams(OnNextLastPart((subscriber 1)(element_id 1)(data z)(parts 3))))"
    assert last[1].fields["element"] == "ok"


def test_a_skipped_part_is_not_joined() -> None:
    data = part(1, 1, b"a") + part(1, 1, b"q" * 20) + last_part(1, 1, b"b")
    items = decode([data], SMALL)
    assert [p.kind for p in problems(items)] == ["too_long"]
    last = messages(items)[-1]
    assert last.fields == {"subscriber": 1, "element_id": 1, "data": "b", "parts": 3}


def test_join_limit_on_unfinished_elements(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rs_stream, "MAX_TRACKED", 2)
    data = part(1, 1, b"a") + part(1, 2, b"b") + part(1, 3, b"c") + last_part(1, 1, b"A") + last_part(1, 3, b"C")
    items = decode([data])
    assert [(p.kind, p.offset) for p in problems(items)] == [("join_limit", 10)]
    last = [m.fields for m in messages(items) if m.type == "OnNextLastPart"]
    # Elements tracked before the limit are still joined; none after it.
    assert last == [
        {"subscriber": 1, "element_id": 1, "data": "A", "parts": 2, "element": "aA"},
        {"subscriber": 1, "element_id": 3, "data": "C"},
    ]


def test_state_limit_on_fixed_size_subscriptions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rs_stream, "MAX_TRACKED", 2)
    data = on_subscribe(1, 1) + on_subscribe(2, 1) + on_subscribe(1, 2) + on_subscribe(3, 1) + cancel(1)
    items = decode([data])
    assert lines(items) == [
        "(reactive-streams(OnSubscribe((subscriber 1)(element_size 1))))",
        "(reactive-streams(OnSubscribe((subscriber 2)(element_size 1))))",
        "(reactive-streams(OnSubscribe((subscriber 1)(element_size 2))))",
        "state_limit@9",
        "(reactive-streams(OnSubscribe((subscriber 3)(element_size 1))))",
        '(reactive-streams(Raw((data"\\005\\001"))))',
    ]


def test_long_demand_edges() -> None:
    top = (1 << 63) - 1
    ms = messages(decode([request(1, top) + request(1, 0) + subscribe(b"", 0, top)]))
    assert [m.line for m in ms] == [
        b"(reactive-streams(Request((subscriber 1)(demand 9223372036854775807))))",
        b"(reactive-streams(Request((subscriber 1)(demand 0))))",
        b'(reactive-streams(Subscribe((publisher"")(subscriber 0)(initial_demand 9223372036854775807))))',
    ]
    assert ms[0].summary == "#1 +unbounded"
    assert request(1, top).hex() == "0401ffffffffffffffff7f"


def test_hand_written_bytes() -> None:
    # The LEB128 helper and a few messages against bytes written out by hand.
    assert [leb(n).hex() for n in (0, 1, 127, 128, 300, 16384)] == ["00", "01", "7f", "8001", "ac02", "808001"]
    assert lp(b"ab").hex() == "026162"
    assert client_hello(0, [1, 300]).hex() == "01000201ac02"
    assert subscribe(b"t", 2, 5).hex() == "0301740205"
    items = decode([bytes.fromhex("01000201ac02" "0301740205" "0b0207026869" "0c020701")])  # fmt: skip
    assert [m.line for m in messages(items)] == [
        b"(reactive-streams(ClientHello((version 0)(extensions(1 300)))))",
        b"(reactive-streams(Subscribe((publisher t)(subscriber 2)(initial_demand 5))))",
        b"(reactive-streams(OnNextPart((subscriber 2)(element_id 7)(data hi))))",
    ]
    assert [p.kind for p in problems(items)] == ["truncated"]


def test_summary_of_a_large_element_is_short() -> None:
    (m,) = messages(decode([on_next(1, bytes(100000))]))
    assert m.summary == "#1 100000 bytes " + ('"' + "\\000" * 40)[:39] + "\u2026"
