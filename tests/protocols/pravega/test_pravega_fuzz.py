"""Hypothesis fuzzing of the Pravega decoder, encoder, detector and analyzer.

- any bytes, and mutated valid streams, in any chunking and with holes: no
  exception, the same items whatever the chunking, bounded buffering, and
  every command shown encodes back to its own bytes;
- random valid commands of every documented layout (built by pv_bytes, not
  by the package): decoded without a problem to the values they were built
  from, and text -> bytes gives them back;
- random text: EncodeError or bytes that read back as that text;
- detection and the analyzer on anything: an answer, never an exception.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pv_bytes as b
from hypothesis import given
from hypothesis import strategies as st
from pv_bytes import DISSECTOR, decode
from pv_fixtures import GOLDEN

from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.base import Detection, DissectOptions, EncodeError, Item, ProtoMessage, StreamDissector
from ripple_cli.protocols.pravega.stream import PravegaStream
from ripple_cli.sexp.tree import Sexp
from tests.protocols.dissector_kit import assert_encodes_back, cut, feed_all, messages, problems, prop, with_holes

MAX = 512  # a small --max-payload, so that the bound is exercised
OPTIONS = DissectOptions(max_payload=MAX)


def pieces_of(data: bytes, cuts: list[int], holes: list[int]) -> list[bytes | int]:
    """`data` cut at `cuts`; an int in the result is a hole of that many
    bytes (which replaces the bytes at that place)."""
    return [len(piece) if k < len(holes) and holes[k] else piece for k, piece in enumerate(cut(data, cuts))]


def run(pieces: list[bytes | int], options: DissectOptions = OPTIONS) -> tuple[list[Item], bytes]:
    """Decode, checking the bounds after every call; also the stream as the
    decoder's offsets count it (holes as zero bytes)."""

    def bounded(stream: StreamDissector) -> None:
        assert isinstance(stream, PravegaStream)
        assert stream.buffered < 16 + options.max_payload
        assert stream.held <= 2 * options.max_payload

    return feed_all(PravegaStream(options, None), pieces, bounded), with_holes(pieces)


@given(st.binary(max_size=2000), st.lists(st.integers(0, 4000), max_size=8))
@prop(300)
def test_any_bytes_any_chunking(data: bytes, cuts: list[int]) -> None:
    whole, _ = run([data])
    chunked, _ = run(pieces_of(data, cuts, []))
    assert chunked == whole
    assert_encodes_back(DISSECTOR, whole, data)


def mutate(data: bytes, edits: list[tuple[int, int, int]]) -> bytes:
    out = bytearray(data)
    for kind, at, value in edits:
        if not out:
            break
        at %= len(out)
        if kind == 0:
            out[at] = value
        elif kind == 1:
            out.insert(at, value)
        else:
            del out[at]
    return bytes(out)


edits = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1 << 16), st.integers(0, 255)), max_size=6)


@given(
    st.sampled_from(sorted(GOLDEN)),
    edits,
    st.lists(st.integers(0, 4000), max_size=8),
    st.lists(st.booleans(), max_size=8),
)
@prop(300)
def test_mutated_streams_with_holes(
    name: str, edit: list[tuple[int, int, int]], cuts: list[int], holes: list[bool]
) -> None:
    data = mutate(GOLDEN[name], edit)
    pieces = pieces_of(data, cuts, [int(h) for h in holes])
    items, stream = run(pieces)
    assert all(isinstance(i, (ProtoMessage, Problem)) for i in items)
    assert_encodes_back(DISSECTOR, items, stream)
    # The same pieces, each byte piece fed a byte at a time.
    finer: list[bytes | int] = []
    for p in pieces:
        finer += [p] if isinstance(p, int) else [p[i : i + 1] for i in range(len(p))]
    assert run(finer)[0] == items
    # The analyzer takes whatever the decoder gives.
    analyzer = DISSECTOR.analyzer(OPTIONS)
    assert analyzer is not None
    for m in messages(items):
        analyzer.observe(None, m)
    analyzer.close()


# ------------------------------------------------------------ valid commands

uuids = st.builds(uuid.UUID, int=st.integers(0, (1 << 128) - 1))
i32s = st.integers(-(1 << 31), (1 << 31) - 1)
i64s = st.integers(-(1 << 63), (1 << 63) - 1)
texts = st.text(max_size=10)  # any code points, lone surrogates included
payloads = st.binary(max_size=40)
events = st.lists(payloads, max_size=4).map(lambda ps: b"".join(b.event(p) for p in ps))


def opt(s: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | s


@st.composite
def prefix(draw: st.DrawFn, *strategies: st.SearchStrategy[Any]) -> list[Any]:
    """Optional trailing fields: a prefix of them is present."""
    n = draw(st.integers(0, len(strategies)))
    return [draw(s) for s in strategies[:n]]


def _call(f: Callable[..., bytes]) -> Callable[[list[Any]], bytes]:
    return lambda args: f(*args)


COMMANDS: list[st.SearchStrategy[bytes]] = [
    st.builds(b.hello, i32s, i32s),
    st.just(b.keep_alive()),
    st.builds(b.padding, st.integers(0, 64)),
    st.builds(b.partial_event, payloads),
    st.builds(b.setup_append, i64s, uuids, texts, texts),
    st.builds(b.append_setup, i64s, texts, uuids, i64s),
    st.builds(b.append_block, uuids, events),
    st.builds(b.append_block_end, uuids, i32s, events, i32s, i64s, opt(i64s)),
    st.builds(b.conditional_append, uuids, i64s, i64s, payloads, opt(i64s)),
    st.tuples(uuids, i64s, prefix(i64s, i64s, i64s)).map(lambda t: b.data_appended(t[0], t[1], *t[2])),
    st.builds(b.conditional_check_failed, uuids, i64s, opt(i64s)),
    st.builds(b.read_segment, texts, i64s, i32s, texts, opt(i64s)),
    st.builds(b.segment_read, texts, i64s, events, st.booleans(), st.booleans(), opt(i64s)),
    st.builds(b.wrong_host, i64s, texts, texts, opt(texts)),
    st.tuples(i64s, texts, prefix(texts, i64s)).map(_call(lambda r, s, rest: b.no_such_segment(r, s, *rest))),
    st.tuples(i64s, texts, prefix(texts, i64s)).map(_call(lambda r, s, rest: b.segment_is_sealed(r, s, *rest))),
    st.builds(b.segment_already_exists, i64s, texts, opt(texts)),
    st.tuples(i64s, texts, i64s, prefix(texts, i64s)).map(
        _call(lambda r, s, o, rest: b.segment_is_truncated(r, s, o, *rest))
    ),
    st.builds(b.operation_unsupported, i64s, texts, opt(texts)),
    st.tuples(uuids, i64s, prefix(texts, i64s)).map(_call(lambda w, r, rest: b.invalid_event_number(w, r, *rest))),
    st.tuples(i64s, prefix(texts, i32s)).map(_call(lambda r, rest: b.auth_token_check_failed(r, *rest))),
    st.builds(b.error_message, i64s, texts, texts, i32s),
    st.builds(b.conditional_block_end, uuids, i64s, i64s, events, i64s),
]


@given(st.lists(st.one_of(COMMANDS), min_size=1, max_size=6))
@prop(400)
def test_valid_commands_round_trip(cmds: list[bytes]) -> None:
    data = b"".join(cmds)
    items = decode([data])
    assert problems(items) == []
    ms = messages(items)
    assert [m.size for m in ms] == [len(c) for c in cmds]
    for m, c in zip(ms, cmds, strict=True):
        assert DISSECTOR.encode(m.text) == c
        assert m.fields["type_code"] == int.from_bytes(c[:4], "big", signed=True)


@given(uuids, i64s, texts)
@prop(100)
def test_fields_decode_to_the_values_built(writer: uuid.UUID, rid: int, segment: str) -> None:
    (m,) = messages(decode([b.setup_append(rid, writer, segment, "t")]))
    assert m.fields["writer_id"] == str(writer)
    assert m.fields["request_id"] == rid
    text = segment.encode("utf-8", "surrogatepass")
    try:
        assert m.fields["segment"] == text.decode("utf-8")
    except UnicodeDecodeError:  # lone surrogates: JSON has its bytes in base64
        assert set(m.fields["segment"]) == {"base64"}


# ------------------------------------------------------------ text and detection

atoms = st.one_of(
    st.sampled_from([b"pravega", b"Hello", b"KeepAlive", b"AppendBlock", b"Event", b"data", b"writer_id", b"0", b"-1"]),
    st.binary(max_size=8),
)
trees: st.SearchStrategy[Sexp] = st.recursive(atoms, lambda inner: st.lists(inner, max_size=4), max_leaves=20)


@given(trees)
@prop(300)
def test_random_text_encodes_or_is_refused(tree: Sexp) -> None:
    for t in (tree, [b"pravega", tree]):
        try:
            data = DISSECTOR.encode(t)
        except EncodeError:
            continue
        (m,) = messages(decode([data]))
        assert DISSECTOR.encode(m.text) == data


@given(st.binary(max_size=300))
@prop(300)
def test_detect_answers_anything(data: bytes) -> None:
    for n in (0, 3, 8, 16, len(data)):
        assert isinstance(DISSECTOR.detect(data[:n]), Detection)


def _reads_cleanly_by_reading(code: int, body: bytes) -> bool:
    """What reads_cleanly must answer, said through the full reader."""
    from ripple_cli.codec.problems import Severity
    from ripple_cli.protocols.pravega.wire import LAYOUTS, read_body

    if code not in LAYOUTS:
        return False
    cmd = read_body(code, body)
    return cmd.raw is None and not cmd.trailing and not any(n.severity is Severity.ERROR for n in cmd.notes)


@given(
    st.one_of(COMMANDS),
    st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=3),
    st.integers(-4, 4),
)
@prop(400)
def test_reads_cleanly_answers_as_the_reader(command: bytes, edits: list[tuple[int, int]], resize: int) -> None:
    """reads_cleanly follows the fields' lengths without reading the body
    (resynchronisation asks it of every candidate): on valid bodies, bodies
    with bytes changed, and bodies cut or lengthened, it answers as
    read_body does."""
    from ripple_cli.protocols.pravega.wire import reads_cleanly

    code = int.from_bytes(command[:4], "big", signed=True)
    body = bytearray(command[8:])
    for at, byte in edits:
        if body:
            body[at % len(body)] = byte
    body = body[: len(body) + resize] if resize < 0 else body + bytes(resize)
    framed = b"junk" + bytes(body) + b"more"
    want = _reads_cleanly_by_reading(code, bytes(body))
    assert reads_cleanly(code, bytes(body)) == want
    assert reads_cleanly(code, framed, 4, 4 + len(body)) == want
