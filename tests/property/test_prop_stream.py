"""Whole streams: messages -> envelopes -> canonical lines -> the same
bytes; any chunking gives the same events; random corruption never raises,
never loses an intact envelope, and never makes the decoder hold more than
one envelope plus one chunk."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from ripple_strategies import Envelope, envelope_lists, event_key, prop

from ripple_cli.codec.envelope import MAGIC, OVERHEAD, frame_bytes
from ripple_cli.codec.messages import DeltaMode, DeltaMsg, DeltaView
from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.codec.registry import SchemaRegistry
from ripple_cli.codec.text import envelope_of_sexp
from ripple_cli.protocols.ripple.decoder import StreamDecoder
from ripple_cli.protocols.ripple.message import Message
from ripple_cli.sexp import parse_one


def decode(data: bytes, **kw: Any) -> list[Message | Problem]:
    dec = StreamDecoder(**kw)
    return [*dec.feed(data), *dec.finish()]


def decode_chunked(data: bytes, cuts: list[int], **kw: Any) -> list[Message | Problem]:
    dec = StreamDecoder(**kw)
    out: list[Message | Problem] = []
    prev = 0
    for c in sorted(set(cuts)):
        out += dec.feed(data[prev:c])
        prev = c
    out += dec.feed(data[prev:])
    return out + dec.finish()


# ---------------------------------------------------------------- bytes -> text -> bytes


@prop(150)
@given(envelope_lists())
def test_stream_to_lines_and_back_gives_the_same_bytes(envs: list[Envelope]) -> None:
    parts = [e.to_bytes() for e in envs]
    data = b"".join(parts)
    events = decode(data)
    messages = [e for e in events if isinstance(e, Message)]
    problems = [e for e in events if isinstance(e, Problem)]
    # every envelope is a message, at its offset; the only problems are
    # warnings and Deltas that do not fit their schema
    assert [frame_bytes(m.frame) for m in messages] == parts
    offsets = [sum(map(len, parts[:i])) for i in range(len(parts))]
    assert [m.offset for m in messages] == offsets
    assert all(p.severity is Severity.WARNING or p.kind == "bad_delta" for p in problems)
    assert sum(p.kind == "flags" for p in problems) == sum(e.flags != 0 for e in envs)
    # the canonical lines encode back to the same bytes, line by line and in order
    registry = SchemaRegistry()
    hum_registry = SchemaRegistry()
    rebuilt = []
    for m in messages:
        line = m.line
        assert b"\n" not in line
        spec = envelope_of_sexp(parse_one(line), registry)
        assert spec.to_bytes() == frame_bytes(m.frame)
        rebuilt.append(spec.to_bytes())
        hum = m.hum
        assert envelope_of_sexp(parse_one(hum), hum_registry).to_bytes() == frame_bytes(m.frame)
    assert b"".join(rebuilt) == data


@prop(40)
@given(envelope_lists())
def test_modes_agree_on_framing(envs: list[Envelope]) -> None:
    data = b"".join(e.to_bytes() for e in envs)
    by_mode = {mode: decode(data, delta_mode=mode) for mode in DeltaMode}
    frames = {mode: [e.frame for e in ev if isinstance(e, Message)] for mode, ev in by_mode.items()}
    assert frames[DeltaMode.DECODE] == frames[DeltaMode.VALIDATE] == frames[DeltaMode.RAW]
    assert not any(isinstance(e, Message) and isinstance(e.body, DeltaView) for e in by_mode[DeltaMode.RAW])
    assert not any(isinstance(e, Message) and isinstance(e.body, DeltaView) for e in by_mode[DeltaMode.VALIDATE])
    bad = {mode: sum(isinstance(e, Problem) and e.kind == "bad_delta" for e in ev) for mode, ev in by_mode.items()}
    assert bad[DeltaMode.RAW] == 0
    assert bad[DeltaMode.DECODE] == bad[DeltaMode.VALIDATE]
    # raw lines also encode back to the same bytes
    registry = SchemaRegistry()
    for m in by_mode[DeltaMode.RAW]:
        if isinstance(m, Message):
            assert not isinstance(m.body, DeltaView)
            if isinstance(m.body, DeltaMsg):
                assert b"(delta_bytes" in m.line
            assert envelope_of_sexp(parse_one(m.line), registry).to_bytes() == frame_bytes(m.frame)


# ---------------------------------------------------------------- chunking


@st.composite
def damaged_streams(draw: st.DrawFn) -> bytes:
    """A valid stream with, now and then, garbage or a damaged envelope in it."""
    parts = []
    for e in draw(envelope_lists(max_messages=6)):
        b = e.to_bytes()
        what = draw(st.sampled_from(["keep", "keep", "keep", "flip", "cut", "garbage"]))
        if what == "flip":
            i = draw(st.integers(0, len(b) - 1))
            b = b[:i] + bytes([b[i] ^ (1 << draw(st.integers(0, 7)))]) + b[i + 1 :]
        elif what == "cut":
            b = b[: draw(st.integers(0, len(b) - 1))]
        elif what == "garbage":
            b = draw(st.one_of(st.binary(max_size=70), st.binary(max_size=70).map(lambda g: MAGIC + b"\x01" + g))) + b
        parts.append(b)
    return b"".join(parts)


@prop(150)
@given(st.data())
def test_any_chunking_gives_the_same_events(data: st.DataObject) -> None:
    stream = data.draw(damaged_streams())
    whole = [event_key(e) for e in decode(stream)]
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=12))
    assert [event_key(e) for e in decode_chunked(stream, cuts)] == whole
    # fixed chunk sizes, down to one byte at a time
    size = data.draw(st.sampled_from([1, 1, 2, 3, 58, 59, 63, 64, 127]))
    assert [event_key(e) for e in decode_chunked(stream, list(range(size, len(stream), size)))] == whole


# ---------------------------------------------------------------- corruption


class Tracked:
    """A byte stream that remembers, for each byte, its index in the
    original stream (None for a byte that corruption wrote)."""

    def __init__(self, data: bytes) -> None:
        self.bytes = bytearray(data)
        self.origin: list[int | None] = list(range(len(data)))

    def __len__(self) -> int:
        return len(self.bytes)

    def flip(self, i: int, bit: int) -> None:
        self.bytes[i] ^= 1 << bit
        self.origin[i] = None

    def overwrite(self, i: int, new: bytes) -> None:
        new = new[: len(self) - i]
        self.bytes[i : i + len(new)] = new
        self.origin[i : i + len(new)] = [None] * len(new)

    def delete(self, i: int, n: int) -> None:
        del self.bytes[i : i + n]
        del self.origin[i : i + n]

    def insert(self, i: int, new: bytes) -> None:
        self.bytes[i:i] = new
        self.origin[i:i] = [None] * len(new)

    def where(self, start: int, size: int) -> int | None:
        """Where the original bytes start..start+size-1 now are, still
        contiguous and unmodified; None if they are not."""
        try:
            at = self.origin.index(start)
        except ValueError:
            return None
        if self.origin[at : at + size] != list(range(start, start + size)):
            return None
        return at


MAX_PAYLOAD = 4096


@prop(250)
@given(st.data())
def test_corruption_never_raises_and_never_loses_an_intact_envelope(data: st.DataObject) -> None:
    parts = [e.to_bytes() for e in data.draw(envelope_lists(max_messages=8))]
    parts = [p for p in parts if len(p) - OVERHEAD <= MAX_PAYLOAD]
    original = b"".join(parts)
    t = Tracked(original)
    starts = {sum(map(len, parts[:i])) for i in range(len(parts))}
    for _ in range(data.draw(st.integers(1, 5))):
        op = data.draw(st.sampled_from(["flip", "overwrite", "delete", "insert", "insert_copy", "insert_header"]))
        if len(t) == 0:
            op = "insert"
        # anywhere, or where an envelope starts (or just before or after it)
        boundaries = [i for i, o in enumerate(t.origin) if o in starts]
        if boundaries and data.draw(st.booleans()):
            pos = data.draw(st.sampled_from(boundaries)) + data.draw(st.sampled_from([0, 0, -1, 1]))
            pos = min(max(pos, 0), len(t) - 1)
        else:
            pos = data.draw(st.integers(0, max(len(t) - 1, 0)))
        if op == "flip":
            t.flip(pos, data.draw(st.integers(0, 7)))
        elif op == "overwrite":
            t.overwrite(pos, data.draw(st.binary(min_size=1, max_size=40)))
        elif op == "delete":
            t.delete(pos, data.draw(st.integers(1, 80)))
        elif op == "insert":
            t.insert(pos, data.draw(st.one_of(st.binary(min_size=1, max_size=3), st.binary(min_size=1, max_size=80))))
        elif op == "insert_copy":  # a stretch of the stream itself: headers that look right
            src = data.draw(st.integers(0, len(t)))
            t.insert(pos, bytes(t.bytes[src : src + data.draw(st.integers(1, 120))]) or b"R")
        else:  # a plausible header with any length, then whatever follows
            length = data.draw(st.one_of(st.integers(-5, 200), st.integers(-(2**31), 2**31 - 1)))
            head = (
                MAGIC
                + b"\x01"
                + data.draw(st.binary(min_size=50, max_size=50))
                + length.to_bytes(4, "little", signed=True)
            )
            t.insert(pos, head)
    corrupted = bytes(t.bytes)

    # the intact envelopes: untouched, contiguous, where they now are
    intact = []
    start = 0
    for p in parts:
        at = t.where(start, len(p))
        if at is not None:
            intact.append((at, p))
        start += len(p)

    chunk = data.draw(st.sampled_from([1, 7, 64, 500, 100000]))
    dec = StreamDecoder(max_payload=MAX_PAYLOAD)
    events: list[Message | Problem] = []
    for i in range(0, len(corrupted), chunk):
        events += dec.feed(corrupted[i : i + chunk])
        assert dec.frames.buffered <= MAX_PAYLOAD + OVERHEAD + chunk
    events += dec.finish()
    assert dec.frames.buffered == 0

    found = {(m.offset, frame_bytes(m.frame)) for m in events if isinstance(m, Message)}
    for at, p in intact:
        assert (at, p) in found, f"intact envelope at {at} ({len(p)} bytes) lost"
    # events come in stream order, and problems cover only bytes outside the messages
    offsets = [e.offset for e in events]
    assert offsets == sorted(offsets)
    for e in events:
        if isinstance(e, Problem) and e.skipped:
            assert e.offset + e.skipped <= len(corrupted)
            assert not any(e.offset < at < e.offset + e.skipped for at, _ in intact)
