"""Hypothesis on the RCP decoder: arbitrary and mutated bytes, in any
chunking, with holes, in each direction: no exception, bounded buffering,
the same items whatever the chunking, every message re-encoding to its own
bytes, JSON that serialises; and random valid messages round-tripping
through the text.

Deterministic (derandomized, no database), like tests/property."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from rcpkit import DISSECTOR, frame, j

from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.base import DissectOptions, Item, ProtoMessage, StreamDissector
from ripple_cli.protocols.rcp.analysis import RcpAnalyzer
from ripple_cli.protocols.rcp.stream import RcpStream
from ripple_cli.sexp.parse import parse_one
from tests.protocols.dissector_kit import assert_encodes_back, feed_all, item_json, prop

SETTINGS = prop(100)
MAX_PAYLOAD = 300  # small, so that the bound is reached often
BOUND = 18 + 0xFFFF + MAX_PAYLOAD

directions = st.sampled_from([True, False, None])

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4),
    max_leaves=12,
)
ids = st.text(st.characters(codec="utf-8"), min_size=1, max_size=4)
ops = st.sampled_from(["HELLO", "PING", "INFO", "PUT_MACHINE", "APPLY_EVENT", "WATCH_ALL", "BYE", "FROB"])


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["request", "response", "event", "other"]))
    if kind == "request":
        return {
            "type": "request",
            "id": draw(ids),
            "op": draw(ops),
            "params": draw(st.dictionaries(st.text(max_size=5), json_values, max_size=3)),
        }
    if kind == "response":
        if draw(st.booleans()):
            return {"type": "response", "id": draw(ids), "status": "ok", "result": draw(json_values)}
        code = draw(st.sampled_from(["NOT_FOUND", "RATE_LIMITED", "WHAT"]))
        return {
            "type": "response",
            "id": draw(ids),
            "status": "error",
            "error": {"code": code, "message": draw(st.text(max_size=10)), "retryable": draw(st.booleans())},
        }
    if kind == "event":
        return {
            "type": "event",
            "subscription_id": draw(ids),
            "instance_id": draw(ids),
            "machine": "m",
            "version": draw(st.integers(0, 9)),
            "wal_offset": draw(st.integers(0, 2**40)),
            "from_state": "a",
            "to_state": "b",
            "event": draw(st.text(max_size=5)),
        }
    return {"type": draw(st.text(max_size=5)), "x": draw(json_values)}


@st.composite
def wire_messages(draw: st.DrawFn) -> bytes:
    """One message on the wire: a frame (any header fields, any payload) or a JSON line."""
    body = draw(messages())
    text = json.dumps(
        body, ensure_ascii=draw(st.booleans()), separators=draw(st.sampled_from([(",", ":"), (", ", ": ")]))
    ).encode()
    if draw(st.integers(0, 4)) == 0:
        return text + b"\n"
    payload = draw(st.one_of(st.just(text), st.binary(max_size=40))) if draw(st.integers(0, 5)) == 0 else text
    flags = draw(st.one_of(st.sampled_from([0, 1, 1, 1, 5, 13, 3]), st.integers(0, 0xFFFF)))
    version = draw(st.sampled_from([1, 1, 1, 2, 0]))
    crc = draw(st.one_of(st.none(), st.integers(0, 2**32 - 1)))
    ext = draw(st.sampled_from([b"", b"", b"\x00\x01", b"RCPX"]))
    return frame(payload, flags=flags, version=version, crc=crc, ext=ext)


@st.composite
def conversations(draw: st.DrawFn) -> bytes:
    return b"".join(draw(st.lists(wire_messages(), max_size=6)))


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(conversations()))
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "magic", "newline"]))
        at = draw(st.integers(0, len(data)))
        if op == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 20))]
        elif op == "magic":
            data[at:at] = b"RCPX\x00\x01"
        else:
            data[at:at] = b"\n{"
    return bytes(data)


@st.composite
def chunkings(draw: st.DrawFn, data: bytes) -> list[tuple[str, int, int]]:
    """Pieces of data as (what, start, end); what is "data" or "gap"."""
    out: list[tuple[str, int, int]] = []
    at = 0
    while at < len(data):
        n = draw(st.integers(1, max(1, min(64, len(data) - at))))
        what = "gap" if draw(st.integers(0, 9)) == 0 else "data"
        out.append((what, at, at + n))
        at += n
    return out


def _bounded(stream: StreamDissector) -> None:
    assert isinstance(stream, RcpStream) and stream.buffered <= BOUND


def run(data: bytes, pieces: list[tuple[str, int, int]], direction: bool | None, use_gaps: bool) -> list[Item]:
    s = RcpStream(DissectOptions(max_payload=MAX_PAYLOAD), direction)
    items = feed_all(s, [b - a if what == "gap" and use_gaps else data[a:b] for what, a, b in pieces], _bounded)
    assert s.buffered == 0
    return items


def check(data: bytes, items: list[Item], holes: list[tuple[int, int]] = ()) -> None:  # type: ignore[assignment]
    analyzer = RcpAnalyzer()
    assert_encodes_back(DISSECTOR, items, data)
    last = -1
    for item in items:
        assert item.offset >= 0
        if isinstance(item, ProtoMessage):
            assert item.offset >= last
            last = item.offset
            assert not any(a < item.offset + item.size and item.offset < b for a, b in holes)
            json.dumps(item_json(item), ensure_ascii=False).encode("utf-8")
            analyzer.observe(None, item)
        else:
            assert isinstance(item, Problem) and item.kind in DISSECTOR.problem_kinds
            assert item.skipped >= 0
    for p in analyzer.close():
        assert p.kind in DISSECTOR.problem_kinds


def check_any_chunking(data: st.DataObject, raw: bytes, direction: bool | None) -> None:
    """Decoded whole, the items pass `check`; in a drawn chunking, they are the same."""
    whole = run(raw, [("data", 0, len(raw))] if raw else [], direction, False)
    check(raw, whole)
    pieces = data.draw(chunkings(raw))
    assert [item_json(i) for i in run(raw, pieces, direction, False)] == [item_json(i) for i in whole]
    DISSECTOR.detect(raw)


@SETTINGS
@given(st.data(), st.binary(max_size=400), directions)
def test_arbitrary_bytes(data: st.DataObject, raw: bytes, direction: bool | None) -> None:
    check_any_chunking(data, raw, direction)


@SETTINGS
@given(st.data(), mutated(), directions)
def test_mutated_streams_in_any_chunking(data: st.DataObject, raw: bytes, direction: bool | None) -> None:
    check_any_chunking(data, raw, direction)


@SETTINGS
@given(st.data(), mutated(), directions)
def test_holes_never_produce_messages_from_missing_bytes(
    data: st.DataObject, raw: bytes, direction: bool | None
) -> None:
    pieces = data.draw(chunkings(raw))
    holes = [(a, b) for what, a, b in pieces if what == "gap"]
    check(raw, run(raw, pieces, direction, True), holes)


@SETTINGS
@given(st.lists(wire_messages(), min_size=1, max_size=5), directions)
def test_valid_messages_round_trip_through_the_text(msgs: list[bytes], direction: bool | None) -> None:
    data = b"".join(msgs)
    # Only what decodes at a boundary as one message each: frames within the
    # bound, then lines (a line after a frame starts at a boundary too).
    expect = [
        m
        for m in msgs
        if (m.startswith(b"RCPX") and int.from_bytes(m[10:14], "big") <= MAX_PAYLOAD) or not m.startswith(b"RCPX")
    ]
    if len(expect) != len(msgs) or any(len(m) > MAX_PAYLOAD + 1 and not m.startswith(b"RCPX") for m in msgs):
        return
    items = run(data, [("data", 0, len(data))], direction, False)
    got = [i for i in items if isinstance(i, ProtoMessage)]
    assert [m.size for m in got] == [len(m) for m in msgs]
    assert b"".join(DISSECTOR.encode(parse_one(m.line)) for m in got) == data


@SETTINGS
@given(messages())
def test_a_message_in_a_frame_and_in_a_line_shows_the_same_view(body: dict[str, Any]) -> None:
    payload = j(body)
    s1 = RcpStream(DissectOptions(), None)
    s2 = RcpStream(DissectOptions(), None)
    (f,) = [i for i in s1.feed(frame(payload)) if isinstance(i, ProtoMessage)]
    (line,) = [i for i in s2.feed(payload + b"\n") if isinstance(i, ProtoMessage)]
    for name in ("kind", "id", "op", "status", "error_code", "msg"):
        assert f.fields.get(name) == line.fields.get(name)
