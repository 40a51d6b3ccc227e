"""Hypothesis fuzzing of the Reactive Streams decoder, encoder and analyzer.

- any bytes, and mutated valid streams, in any chunking and with gaps:
  no exception, the same items whatever the chunking, bounded buffering,
  and every message (Raw included) encodes back to its own bytes;
- random valid conversations: decoded without a problem, to the messages
  they were built from, and text -> bytes gives the stream back;
- random text: EncodeError or bytes, nothing else;
- the analyzer on random conversations and sides: problems, never an exception.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import rs_bytes as b
from hypothesis import given
from hypothesis import strategies as st
from rs_bytes import DISSECTOR, analyze, decode

from ripple_cli.protocols.base import DissectOptions, EncodeError, Item, ProtoMessage, StreamDissector
from ripple_cli.protocols.reactive_streams.stream import RAW_BLOCK, ReactiveStreamsStream
from ripple_cli.protocols.reactive_streams.wire import HEADROOM
from ripple_cli.sexp.tree import Sexp
from tests.protocols.dissector_kit import assert_encodes_back, cut, feed_all, messages, problems, prop

ids = st.one_of(st.integers(0, 5), st.integers(0, (1 << 64) - 1))
longs = st.one_of(st.integers(0, 10), st.integers(0, (1 << 63) - 1))
blobs = st.binary(max_size=24)
strings = st.text(max_size=12).map(lambda s: s.encode("utf-8"))


@st.composite
def conversation(draw: st.DrawFn) -> tuple[bytes, list[tuple[str, dict[str, Any]]]]:
    """A valid stream (a transcript of both sides) and, per message, its
    type and the fields it must decode to."""
    sizes: dict[int, int] = {}  # the elementSize each subscriber Id was given
    out: list[bytes] = []
    expected: list[tuple[str, dict[str, Any]]] = []

    def add(data: bytes, name: str, **fields: Any) -> None:
        out.append(data)
        expected.append((name, fields))

    for _ in range(draw(st.integers(0, 25))):
        code = draw(st.integers(1, 14))
        sid = draw(ids)
        if code in (1, 2):
            version, ext = draw(st.integers(0, 255)), draw(st.lists(ids, max_size=4))
            build = b.client_hello if code == 1 else b.server_hello
            add(build(version, ext), "ClientHello" if code == 1 else "ServerHello", version=version, extensions=ext)
        elif code == 3:
            pub, demand = draw(strings), draw(longs)
            add(b.subscribe(pub, sid, demand), "Subscribe", subscriber=sid, initial_demand=demand)
        elif code == 4:
            demand = draw(longs)
            add(b.request(sid, demand), "Request", subscriber=sid, demand=demand)
        elif code == 5:
            add(b.cancel(sid), "Cancel", subscriber=sid)
        elif code == 6:
            size = draw(st.integers(0, 6))
            if size:
                sizes[sid] = size
            else:
                sizes.pop(sid, None)
            add(b.on_subscribe(sid, size), "OnSubscribe", subscriber=sid, element_size=size)
        elif code == 7:
            size = sizes.get(sid, 0)
            element = draw(st.binary(min_size=size, max_size=size)) if size else draw(blobs)
            add(b.on_next(sid, element, fixed=bool(size)), "OnNext", subscriber=sid, element_size=size)
        elif code in (8, 9):
            sizes.pop(sid, None)
            if code == 8:
                add(b.on_complete(sid), "OnComplete", subscriber=sid)
            else:
                add(b.on_error(sid, draw(strings)), "OnError", subscriber=sid)
        elif code == 10:
            size = sizes.get(sid, 0)
            elements = draw(st.lists(st.binary(min_size=size, max_size=size), max_size=5)) if size else []
            add(b.on_next_packed(sid, elements), "OnNextPacked", subscriber=sid, count=len(elements))
        elif code in (11, 12):
            eid = draw(ids)
            build = b.part if code == 11 else b.last_part
            add(build(sid, eid, draw(blobs)), "OnNextPart" if code == 11 else "OnNextLastPart", element_id=eid)
        else:
            text = draw(strings)
            add(b.goodbye(text) if code == 13 else b.goodbye_ack(text), "Goodbye" if code == 13 else "GoodbyeAck")
    return b"".join(out), expected


def run(ops: Iterable[bytes | int], options: DissectOptions) -> list[Item]:
    """Feed chunks (bytes) and gaps (int sizes), checking the bound after each."""

    def bounded(stream: StreamDissector) -> None:
        # One unfinished message (or raw block), and the unfinished joins.
        assert isinstance(stream, ReactiveStreamsStream)
        assert stream.buffered <= max(options.max_payload + HEADROOM, RAW_BLOCK) + options.max_payload

    return feed_all(ReactiveStreamsStream(options), ops, bounded)


def check_any_chunking(stream: bytes, cuts: list[int], options: DissectOptions) -> None:
    """Decoded whole and cut at `cuts`: the same items.  Each message encodes
    to its own bytes; messages do not overlap."""
    whole = run([stream], options)
    assert run(cut(stream, cuts), options) == whole
    assert_encodes_back(DISSECTOR, whole, stream)
    end = 0
    for m in messages(whole):
        assert m.offset >= end
        end = m.offset + m.size


payload_bounds = st.sampled_from([8, 40, 16 << 20])


@prop(300)
@given(data=st.binary(max_size=300), hello=st.booleans(), cuts=st.lists(st.integers(0, 400), max_size=8),
       bound=payload_bounds)  # fmt: skip
def test_any_bytes(data: bytes, hello: bool, cuts: list[int], bound: int) -> None:
    stream = (b.client_hello() if hello else b"") + data
    check_any_chunking(stream, cuts, DissectOptions(max_payload=bound))


@prop(200)
@given(conv=conversation(), edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=4),
       end=st.integers(0, 10**6), cuts=st.lists(st.integers(0, 10**6), max_size=6), bound=payload_bounds)  # fmt: skip
def test_mutated_streams(
    conv: tuple[bytes, list[Any]], edits: list[tuple[int, int]], end: int, cuts: list[int], bound: int
) -> None:
    data = bytearray(conv[0])
    for at, value in edits:
        if data:
            data[at % len(data)] = value
    if end % 3 == 0:
        data = data[: end % (len(data) + 1)]
    check_any_chunking(bytes(data), cuts, DissectOptions(max_payload=bound))


@prop(150)
@given(conv=conversation(), gaps=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 50)), max_size=3),
       cuts=st.lists(st.integers(0, 10**6), max_size=6))  # fmt: skip
def test_gaps_in_any_chunking(conv: tuple[bytes, list[Any]], gaps: list[tuple[int, int]], cuts: list[int]) -> None:
    data = conv[0]
    holes = sorted({at % (len(data) + 1): size for at, size in gaps}.items())
    # The same stream with the same holes, chunked two ways.
    ops_whole: list[bytes | int] = []
    ops_split: list[bytes | int] = []
    at = 0
    for pos, size in [*holes, (len(data), 0)]:
        piece = data[at:pos]
        if piece:
            ops_whole.append(piece)
            ops_split += cut(piece, cuts)
        if size:
            ops_whole.append(size)
            ops_split.append(size)
        at = pos
    options = DissectOptions(max_payload=40)
    assert run(ops_split, options) == run(ops_whole, options)


@prop(300)
@given(conv=conversation(), cuts=st.lists(st.integers(0, 10**6), max_size=8))
def test_valid_conversations_round_trip(conv: tuple[bytes, list[tuple[str, dict[str, Any]]]], cuts: list[int]) -> None:
    data, expected = conv
    items = decode(cut(data, cuts))
    assert problems(items) == []
    ms = messages(items)
    assert len(ms) == len(expected)
    for m, (name, fields) in zip(ms, expected, strict=True):
        assert m.type == name
        for k, v in fields.items():
            assert m.fields[k] == v, (name, k)
    assert b"".join(DISSECTOR.encode(m.text) for m in ms) == data


def sexps(depth: int = 3) -> st.SearchStrategy[Sexp]:
    atoms = st.one_of(
        st.sampled_from([b"reactive-streams", b"Request", b"subscriber", b"demand", b"OnNextPacked", b"elements",
                         b"element_size", b"count", b"Raw", b"data", b"ClientHello", b"version", b"extensions",
                         b"1", b"0", b"-3", b"99999999999999999999999", b"4"]),
        st.binary(max_size=6),
    )  # fmt: skip
    return st.recursive(atoms, lambda inner: st.lists(inner, max_size=4), max_leaves=12)


@prop(400)
@given(tree=sexps(), head=st.booleans())
def test_any_text_encodes_or_fails_cleanly(tree: Sexp, head: bool) -> None:
    text: Sexp = [b"reactive-streams", tree] if head else tree
    try:
        data = DISSECTOR.encode(text)
    except EncodeError as e:
        assert str(e)
    else:
        assert isinstance(data, bytes)


@prop(200)
@given(conv=conversation(), sides=st.lists(st.sampled_from([True, False]), max_size=30), raw=st.booleans())
def test_analyzer_never_raises(conv: tuple[bytes, list[Any]], sides: list[bool], raw: bool) -> None:
    items = decode([conv[0]])
    ms = [m for m in items if isinstance(m, ProtoMessage)]
    given_sides: list[bool | None] | None = (
        None if raw else [sides[k % len(sides)] if sides else True for k in range(len(ms))]
    )
    for p in analyze(items, given_sides):
        assert p.kind and p.detail and not p.detail.endswith(".")
