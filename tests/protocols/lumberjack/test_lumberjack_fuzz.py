"""Hypothesis on the Lumberjack decoder: arbitrary and mutated bytes, in any
chunking, with holes, on either side: no exception, bounded buffering and
inflating, the same items whatever the chunking, every message re-encoding
to its own bytes, JSON that serialises; random valid frames round-trip
through the text; the analyzer never raises.

Deterministic (derandomized, no database), like tests/property."""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from ljkit import DISSECTOR, GOLDEN, A, C, D, J, W

from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.base import DissectOptions, Item, ProtoMessage, StreamDissector
from ripple_cli.protocols.lumberjack.analysis import LumberjackAnalyzer
from ripple_cli.protocols.lumberjack.stream import LumberjackStream
from ripple_cli.sexp.parse import parse_one
from tests.protocols.dissector_kit import (
    assert_encodes_back,
    cut,
    feed_all,
    item_json,
    prop,
    read_hex,
    with_holes,
)

SETTINGS = prop(100)
MAX_PAYLOAD = 300  # small, so that the bounds are reached often
MAX_INFLATE = 2000
OPTIONS = DissectOptions(max_payload=MAX_PAYLOAD, max_inflate=MAX_INFLATE)
# What a decoder may hold: the largest frame it waits for (a D frame's
# pairs, or a J payload, plus its header).
BOUND = 10 + MAX_PAYLOAD

SEEDS = [read_hex(p) for p in sorted(GOLDEN.glob("*.hex"))]
directions = st.sampled_from([True, False, None])


def _json_bytes(v: Any) -> bytes:
    return json.dumps(v, separators=(",", ":")).encode()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids, max_size=3),
    max_leaves=8,
)
blobs = st.binary(max_size=12)
versions = st.sampled_from([b"1", b"2"])
u32s = st.integers(0, 2**32 - 1)


@st.composite
def plain_frames(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from("WADJ"))
    v = draw(versions)
    if kind == "W":
        return W(draw(u32s), v)
    if kind == "A":
        return A(draw(u32s), v)
    if kind == "D":
        return D(draw(u32s), draw(st.lists(st.tuples(blobs, blobs), max_size=4)), v)
    payload = draw(st.one_of(json_values.map(_json_bytes), st.binary(max_size=20)))
    return J(draw(u32s), payload, v)


@st.composite
def frames(draw: st.DrawFn) -> bytes:
    """A frame, or a C frame of frames (nested, at any zlib level)."""
    if draw(st.integers(0, 4)) == 0:
        inner = b"".join(draw(st.lists(st.deferred(frames), max_size=4)))
        return C(zlib.compress(inner, draw(st.integers(0, 9))), draw(versions))
    return draw(plain_frames())


def _bounded(stream: StreamDissector) -> None:
    # What is held is one unfinished frame, never more.
    assert isinstance(stream, LumberjackStream) and stream.buffered <= BOUND


def _feed(stream: LumberjackStream, pieces: Iterable[bytes | int]) -> list[Item]:
    return feed_all(stream, pieces, _bounded)


def _check(items: list[Item], stream: bytes) -> None:
    assert_encodes_back(DISSECTOR, items, stream)
    for item in items:
        assert isinstance(item, ProtoMessage | Problem)
        json.dumps(item_json(item), allow_nan=False).encode("utf-8")
        if isinstance(item, ProtoMessage):
            if item.type == "Compressed" and item.fields["inflated_size"] is not None:
                assert item.fields["inflated_size"] <= MAX_INFLATE
        else:
            assert item.kind in DISSECTOR.problem_kinds
    analyzer = LumberjackAnalyzer()
    for item in items:
        if isinstance(item, ProtoMessage):
            for p in analyzer.observe(item.direction == "writer", item):
                assert p.kind in DISSECTOR.problem_kinds
    analyzer.close()


def _check_any_chunking(data: bytes, cuts: list[int], side: bool | None) -> None:
    """Decoded whole, the items pass `_check`; cut at `cuts`, they are the same."""
    whole = _feed(LumberjackStream(OPTIONS, side), [data])
    _check(whole, data)
    assert _feed(LumberjackStream(OPTIONS, side), cut(data, cuts)) == whole


@SETTINGS
@given(st.binary(max_size=600), st.lists(st.integers(0, 10_000), max_size=8), directions)
def test_arbitrary_bytes(data: bytes, cuts: list[int], side: bool | None) -> None:
    _check_any_chunking(data, cuts, side)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, max(0, len(data) - 1)))
        op = draw(st.sampled_from(["flip", "insert", "delete", "dup"]))
        if op == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        else:
            data[at:at] = data[at : at + draw(st.integers(1, 30))]
    return bytes(data)


@SETTINGS
@given(mutated(), st.lists(st.integers(0, 10_000), max_size=8), directions)
def test_mutated_streams(data: bytes, cuts: list[int], side: bool | None) -> None:
    _check_any_chunking(data, cuts, side)


@SETTINGS
@given(mutated(), st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 50)), min_size=1, max_size=4), directions)
def test_holes(data: bytes, holes: list[tuple[int, int]], side: bool | None) -> None:
    pieces: list[bytes | int] = []
    at = 0
    for where, size in sorted(holes):
        where = min(max(where % (len(data) + 1), at), len(data))
        pieces += [data[at:where], size]
        at = min(len(data), where + size)
    pieces.append(data[at:])
    pieces = [p for p in pieces if p != b""]
    _check(_feed(LumberjackStream(OPTIONS, side), pieces), with_holes(pieces))


@SETTINGS
@given(st.lists(frames(), min_size=1, max_size=6))
def test_valid_frames_round_trip_through_the_text(stream: list[bytes]) -> None:
    data = b"".join(stream)
    options = DissectOptions()  # the defaults: every drawn frame is within them
    items = _feed(LumberjackStream(options, None), [data])
    outer = [m for m in items if isinstance(m, ProtoMessage) and "in_compressed" not in m.fields]
    assert [DISSECTOR.encode(parse_one(m.line)) for m in outer] == stream
    assert {p.kind for p in items if isinstance(p, Problem)} <= {"bad_json"}  # drawn payloads need not be JSON


@SETTINGS
@given(st.integers(1, 4), st.integers(0, 9))
def test_bombs_never_exceed_the_bound(depth: int, level: int) -> None:
    frame = J(1, b'"' + b"a" * 5000 + b'"')
    for _ in range(depth):
        frame = C(zlib.compress(frame * 3, level))
    # Frames may be long here; what they inflate to may not.
    items = _feed(LumberjackStream(DissectOptions(max_payload=1 << 20, max_inflate=MAX_INFLATE), True), [frame])
    _check(items, frame)
    assert "inflate_limit" in [p.kind for p in items if isinstance(p, Problem)]
