"""The C fast lane (ripple_cli/codec/fast) against the pure-Python codec it
stands in for: the same CRCs, atoms, floats, key and delta texts, and, on
whole streams (random, damaged, chunked, with holes, breaking the stream
rules), the same canonical lines and typed JSON, problems, counts and
checker state."""

from __future__ import annotations

import mmap
import pickle
import string
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from crc32c import crc32c as crc32c_package
from hypothesis import given
from hypothesis import strategies as st
from ripple_strategies import (
    Envelope,
    deltas,
    envelope_lists,
    field_names,
    floats_any,
    floats_text_exact,
    int64s,
    ints,
    primitive_types,
    prop,
    schemas,
    values,
)
from test_prop_sexp import trees
from test_prop_stream import damaged_streams

from ripple_cli.capture.events import CaptureEvent, StreamData, StreamEnd, StreamGap, StreamStart
from ripple_cli.codec import framing
from ripple_cli.codec.delta import CompiledSchema, Patch, SetRow
from ripple_cli.codec.envelope import MAGIC, Frame
from ripple_cli.codec.errors import DecodeError
from ripple_cli.codec.fast import _load, speedups
from ripple_cli.codec.fast.program import compile_program, program_words
from ripple_cli.codec.jsonview import dumps
from ripple_cli.codec.messages import (
    FIXED_FINGERPRINTS,
    HANDSHAKE_KINDS,
    HEARTBEAT,
    TYPE_NAMES,
    CheckpointAck,
    CheckpointRequest,
    DeltaMode,
    DeltaMsg,
    DeltaView,
    Handshake,
    Heartbeat,
    SchemaNegotiation,
    read_handshake_py,
    write_payload,
)
from ripple_cli.codec.problems import Problem
from ripple_cli.codec.schema import (
    BOOL,
    FLOAT,
    INT,
    INT32,
    INT64,
    EnumOf,
    Field,
    FieldType,
    ListOf,
    OptionOf,
    Prim,
    RecordOf,
    Schema,
    text,
)
from ripple_cli.codec.text import envelope_to_sexp
from ripple_cli.codec.values import float_to_json
from ripple_cli.flow.demux import Demux
from ripple_cli.flow.protocol_choice import ProtocolChoice
from ripple_cli.protocols.base import ANYTHING, DissectOptions, LaneKind, Prefilter
from ripple_cli.protocols.item import TableRow
from ripple_cli.protocols.ripple.lane import LaneRun
from ripple_cli.protocols.ripple.message import Message
from ripple_cli.render.columns import escaped
from ripple_cli.render.json import origin_head, origin_json
from ripple_cli.render.table import time_of_day, type_style
from ripple_cli.sexp.tree import float_atom
from ripple_cli.sexp.write import atom_text, to_string

accel = _load()
pytestmark = pytest.mark.skipif(accel is None, reason="the C extension is not built here")


# ---------------------------------------------------------------- primitives


@prop(300)
@given(st.binary(max_size=300), st.integers(0, 7))
def test_crc32c_matches_the_package(data: bytes, skip: int) -> None:
    assert accel is not None
    view = memoryview(data)[min(skip, len(data)) :]  # any alignment
    expected = crc32c_package(view)
    assert accel.crc32c(view) == expected
    assert accel.crc32c_table(view) == expected


@prop(60)
@given(st.integers(0, 80_000), st.integers(0, 7), st.randoms(use_true_random=False))
def test_crc32c_of_large_buffers_matches_the_package(n: int, skip: int, rnd: Any) -> None:
    """Past 3 x 256 and 3 x 8192 bytes the instruction runs three streams
    at once, joined by the zero-shift tables."""
    assert accel is not None
    data = rnd.randbytes(n + skip)
    view = memoryview(data)[skip:]
    assert accel.crc32c(view) == crc32c_package(view) == accel.crc32c_table(view)


def test_crc32c_at_the_block_edges() -> None:
    assert accel is not None
    data = bytes(range(256)) * 400
    for n in (767, 768, 769, 1535, 1536, 24575, 24576, 24577, 49152 + 767, 49152 + 768, len(data)):
        for skip in (0, 3):
            view = memoryview(data)[skip : skip + n]
            assert accel.crc32c(view) == crc32c_package(view), (n, skip)


def test_crc32c_check_value() -> None:
    assert accel is not None
    assert accel.crc32c(b"123456789") == accel.crc32c_table(b"123456789") == 0xE3069283


_atom_bytes = [b"a", b"#", b"|", b" ", b'"', b"\\", b"(", b";", b"\x7f", b"\xff", b"\n"]
atoms = st.one_of(st.binary(max_size=20), st.lists(st.sampled_from(_atom_bytes), max_size=8).map(b"".join))


@prop(400)
@given(atoms)
def test_atom_text_matches_sexplib_rules(atom: bytes) -> None:
    assert accel is not None
    assert accel.atom_text(atom) == atom_text(atom)


# Prices, sizes, rates: the decimals the C printer takes a shortcut for,
# near its edges too (15 digits, 1e-4, 1e15, halves that round to even).
decimal_floats = st.one_of(
    st.tuples(st.integers(-(10**15), 10**15), st.integers(0, 19)).map(lambda t: t[0] / 10 ** t[1]),
    st.tuples(st.integers(-(10**6), 10**6), st.integers(0, 8)).map(lambda t: t[0] / 10 ** t[1]),
    st.sampled_from([1e-4, 9.999999999999999e-05, 1e15, 999999999999999.9, 0.5, 2.5, 0.29, 1e-5, 5e-324]),
)


@prop(400)
@given(trees)
def test_to_string_matches(t: Any) -> None:
    """The C printer of Python trees (lines the lane does not write itself)."""
    assert accel is not None
    assert accel.to_string(t) == to_string(t)
    assert accel.to_string(iter([t, [t]])) == to_string([t, [t]])  # any iterable node (text.py's lazy ones)


def test_to_string_of_deep_trees_is_a_recursion_error_not_a_crash() -> None:
    assert accel is not None
    deep: Any = b"x"
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(RecursionError):
        accel.to_string(deep)
    with pytest.raises(TypeError):
        accel.to_string(7)


@prop(400)
@given(st.one_of(floats_any, decimal_floats))
def test_float_atom_matches(x: float) -> None:
    assert accel is not None
    assert accel.float_atom(x) == float_atom(x)


# ---------------------------------------------------------------- schema programs


def _python_key_text(c: CompiledSchema, data: bytes) -> bytes | None:
    try:
        return to_string(c.key.to_sexp(c.read_key(data)))
    except DecodeError:
        return None


def _python_delta_text(c: CompiledSchema, data: bytes) -> bytes | None:
    try:
        return to_string(c.delta_to_sexp(c.read_delta(data)))
    except DecodeError:
        return None


def _python_valid(c: CompiledSchema, key: bytes, delta: bytes) -> bool:
    try:
        c.validate(key, delta)
    except DecodeError:
        return False
    return True


def _mutations(data: bytes) -> st.SearchStrategy[bytes]:
    """The bytes, cut, extended, or with a byte changed."""
    n = len(data)
    return st.one_of(
        st.just(data),
        st.integers(0, max(n - 1, 0)).map(lambda i: data[:i]),
        st.binary(min_size=1, max_size=3).map(lambda b: data + b),
        st.tuples(st.integers(0, max(n - 1, 0)), st.integers(0, 255)).map(
            lambda t: data[: t[0]] + bytes([t[1]]) + data[t[0] + 1 :] if n else bytes([t[1]])
        ),
    )


@prop(300)
@given(st.data())
def test_programs_print_and_validate_as_python(data: st.DataObject) -> None:
    schema = data.draw(schemas)
    c = CompiledSchema(schema)
    prog = compile_program(schema)
    assert prog is not None
    key = c.write_key(data.draw(values(schema.key, floats_text_exact)))
    delta = c.write_delta(data.draw(deltas(schema, floats_text_exact)))
    # intact: both decode, to the same text
    assert prog.key_text(key) == _python_key_text(c, key) is not None
    assert prog.delta_text(delta) == _python_delta_text(c, delta) is not None
    assert prog.check(key, delta)
    # damaged: C refuses exactly what Python refuses, and agrees on the rest
    bad_key = data.draw(_mutations(key))
    bad_delta = data.draw(_mutations(delta))
    assert prog.key_text(bad_key) == _python_key_text(c, bad_key)
    assert prog.delta_text(bad_delta) == _python_delta_text(c, bad_delta)
    assert prog.check(bad_key, bad_delta) == _python_valid(c, bad_key, bad_delta)


@prop(200)
@given(st.data())
def test_programs_on_random_bytes(data: st.DataObject) -> None:
    schema = data.draw(schemas)
    c = CompiledSchema(schema)
    prog = compile_program(schema)
    assert prog is not None
    key, delta = data.draw(st.binary(max_size=24)), data.draw(st.binary(max_size=40))
    assert prog.key_text(key) == _python_key_text(c, key)
    assert prog.delta_text(delta) == _python_delta_text(c, delta)
    assert prog.check(key, delta) == _python_valid(c, key, delta)


# ---------------------------------------------------------------- typed JSON

# UTF-8 at the edges of what Python's strict decoder takes: JSON strings
# when valid (escaped where json escapes), {"base64": ...} when not.
_utf8_pieces = [
    # ASCII, and the bytes json escapes
    *(b"a", b'"', b"\\", b"\n", b"\t", b"\x08", b"\x0c", b"\r", b"\x00", b"\x1b", b"\x1f", b"\x7f", b"/"),
    # valid: two, three and four bytes, the last of each range
    *(b"\xc3\xa9", b"\xe2\x80\xa8", b"\xef\xbf\xbf", b"\xf0\x9f\x98\x80", b"\xf4\x8f\xbf\xbf", b"\xed\x9f\xbf"),
    # invalid: surrogates, overlong forms, past U+10FFFF
    *(b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xe0\x9f\xbf"),
    *(b"\xf0\x80\x80\x80", b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80"),
    # invalid: stray and cut sequences
    *(b"\xff", b"\x80", b"\xc3", b"\xe2\x80", b"\xf0\x9f\x98"),
]
_utf8_mixes = st.lists(st.sampled_from(_utf8_pieces), max_size=8).map(b"".join)
json_strings = st.one_of(
    st.binary(max_size=12),
    st.text(max_size=10).map(lambda t: t.encode("utf-8")),
    _utf8_mixes,
    # past the eight ASCII bytes the validator takes at a time
    st.tuples(st.text(string.printable, max_size=20), _utf8_mixes).map(lambda t: t[0].encode() + t[1]),
)
odd_names = st.one_of(field_names, st.lists(st.sampled_from(_utf8_pieces), min_size=1, max_size=4).map(b"".join))


@st.composite
def oddly_named_schemas(draw: st.DrawFn) -> Schema:
    """Names as a wire may hold them: quotes, controls, bytes that are not
    UTF-8; now and then a record naming a field twice (which a JSON object
    cannot hold: such a schema has no JSON program)."""

    def fields(types: st.SearchStrategy[FieldType], n: int) -> st.SearchStrategy[tuple[Field, ...]]:
        items = st.lists(st.tuples(odd_names, types), min_size=1, max_size=n)
        return items.map(lambda xs: tuple(Field(a, t) for a, t in xs))

    enums = st.lists(odd_names, min_size=1, max_size=4, unique=True).map(lambda ns: EnumOf(tuple(ns)))
    types = st.recursive(
        st.one_of(primitive_types, enums),
        lambda ch: st.one_of(ch.map(OptionOf), ch.map(ListOf), fields(ch, 3).map(RecordOf)),
        max_leaves=5,
    )
    return Schema(draw(field_names), 1, draw(types), draw(fields(types, 4)))


def _python_key_json(c: CompiledSchema, data: bytes) -> bytes | None:
    try:
        return dumps(c.key.to_json(c.read_key(data)))
    except DecodeError:
        return None


def _python_delta_json(c: CompiledSchema, data: bytes) -> bytes | None:
    try:
        return dumps(c.delta_to_json(c.read_delta(data)))
    except DecodeError:
        return None


def _names_a_field_twice(t: FieldType) -> bool:
    if isinstance(t, RecordOf):
        names = [f.name for f in t.fields]
        return len(set(names)) < len(names) or any(_names_a_field_twice(f.typ) for f in t.fields)
    if isinstance(t, (OptionOf, ListOf)):
        return _names_a_field_twice(t.inner)
    return False


@prop(400)
@given(st.data())
def test_programs_write_json_as_python(data: st.DataObject) -> None:
    schema = data.draw(st.one_of(schemas, oddly_named_schemas()))
    c = CompiledSchema(schema)
    prog = compile_program(schema)
    assert prog is not None
    twice = _names_a_field_twice(schema.key) or _names_a_field_twice(RecordOf(schema.fields))
    assert (program_words(schema)[2] is None) == twice
    if twice:
        with pytest.raises(ValueError, match="without JSON"):
            prog.key_json(b"")
        return
    key = c.write_key(data.draw(values(schema.key, floats_any, json_strings)))
    delta = c.write_delta(data.draw(deltas(schema, floats_any, json_strings)))
    assert prog.key_json(key) == _python_key_json(c, key) is not None
    assert prog.delta_json(delta) == _python_delta_json(c, delta) is not None
    bad_key = data.draw(_mutations(key))
    bad_delta = data.draw(_mutations(delta))
    assert prog.key_json(bad_key) == _python_key_json(c, bad_key)
    assert prog.delta_json(bad_delta) == _python_delta_json(c, bad_delta)


_FLOAT_KEY = Schema(b"f", 1, FLOAT, (Field(b"n", INT),))


@prop(400)
@given(st.one_of(floats_any, decimal_floats))
def test_json_floats_are_their_repr(x: float) -> None:
    """The C printer's shortcut for decimals, and Python's repr for the rest."""
    c = CompiledSchema(_FLOAT_KEY)
    prog = compile_program(_FLOAT_KEY)
    assert prog is not None
    assert prog.key_json(c.write_key(x)) == dumps(float_to_json(x))


@prop(200)
@given(json_strings)
def test_json_strings_as_python(s: bytes) -> None:
    schema = Schema(b"s", 1, ListOf(OptionOf(OptionOf(Prim("String")))), (Field(b"n", INT),))
    c = CompiledSchema(schema)
    prog = compile_program(schema)
    assert prog is not None
    key = c.write_key([None, (None,), ((s,),)])
    assert prog.key_json(key) == _python_key_json(c, key)


# ---------------------------------------------------------------- tables of rows

# Records of ints, floats, bools and small enums ("flat") have their own
# path in the C validator (sk_rows): per row, a test per int and no bounds
# check while the bytes left hold the largest row, handing any other row
# (an int64 code, a negative int8, a bad tag, the last rows) to the checked
# readers.  Many rows, every int code, and damage anywhere in them.
_flat_kinds = st.one_of(
    st.sampled_from([INT, INT32, INT64, FLOAT, BOOL, FLOAT, INT]),
    st.sampled_from([1, 2, 5, 256, 257]).map(lambda n: EnumOf(tuple(f"C{i}".encode() for i in range(n)))),
)
# An int code of each size, most often the common one-byte and int16 ones.
_row_ints = {
    kind: st.one_of(st.integers(0, 127), st.integers(128, 32767), ints(kind)) for kind in ("Int", "Int32", "Int64")
}


def _row_values(t: FieldType) -> st.SearchStrategy[Any]:
    if isinstance(t, Prim) and t.kind in _row_ints:
        return _row_ints[t.kind]
    return values(t, floats_text_exact)


@st.composite
def row_schemas(draw: st.DrawFn) -> Schema:
    shape = draw(st.sampled_from(["numbers", "numbers", "mixed", "wide"]))
    if shape == "wide":  # past the 28 fields a flat row can have
        kinds = [FLOAT] * draw(st.integers(29, 31))
    elif shape == "numbers":  # the unrolled loops of one, two, three ints, and the general one
        kinds = draw(st.lists(st.sampled_from([INT, INT32, INT64, FLOAT]), min_size=1, max_size=7))
    else:
        kinds = draw(st.lists(_flat_kinds, min_size=1, max_size=5))
    row = RecordOf(tuple(Field(f"f{i}".encode(), k) for i, k in enumerate(kinds)))
    after = draw(st.sampled_from([(), (Field(b"status", EnumOf((b"Open", b"Closed"))),), (Field(b"n", INT),)]))
    return Schema(b"rows", 1, INT, (Field(b"levels", ListOf(row)), *after))


@st.composite
def row_deltas(draw: st.DrawFn, schema: Schema) -> Any:
    row_type = schema.fields[0].typ
    assert isinstance(row_type, ListOf) and isinstance(row_type.inner, RecordOf)
    names = [text(f.name) for f in row_type.inner.fields]
    row = st.tuples(*(_row_values(f.typ) for f in row_type.inner.fields)).map(
        lambda vs: dict(zip(names, vs, strict=True))
    )
    levels = draw(st.lists(row, min_size=draw(st.sampled_from([0, 5, 30])), max_size=60))
    if draw(st.booleans()):
        return Patch(((0, levels),))
    rest = {text(f.name): draw(_row_values(f.typ)) for f in schema.fields[1:]}
    return SetRow({"levels": levels, **rest})


@prop(300)
@given(st.data())
def test_rows_validate_as_python(data: st.DataObject) -> None:
    schema = data.draw(row_schemas())
    c = CompiledSchema(schema)
    prog = compile_program(schema)
    assert prog is not None
    key = c.write_key(0)
    delta = c.write_delta(data.draw(row_deltas(schema)))
    assert prog.check(key, delta)
    assert prog.delta_text(delta) == _python_delta_text(c, delta) is not None
    bad = data.draw(_mutations(delta))
    assert prog.check(key, bad) == _python_valid(c, key, bad)
    # a whole int code written over a value's first byte: every path out of a row
    if len(delta) > 1:
        i = data.draw(st.integers(1, len(delta) - 1))
        code = data.draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF, 0x01, 0x02]))
        bad = delta[:i] + bytes([code]) + delta[i + 1 :]
        assert prog.check(key, bad) == _python_valid(c, key, bad)


@prop(60)
@given(st.data())
def test_verify_lane_on_tables_of_rows(data: st.DataObject) -> None:
    """The same through the Scanner: a stream of row Deltas, some damaged."""
    schema = data.draw(row_schemas())
    c = CompiledSchema(schema)
    envs = [Envelope(1, 0, FIXED_FINGERPRINTS[0], 0, Handshake(b"w", ((b"out", schema),), 1))]
    for i in range(data.draw(st.integers(1, 6))):
        view = DeltaView(b"out", 0, data.draw(row_deltas(schema)), i + 1, None, c)
        envs.append(Envelope(i + 2, i, c.fingerprint, 0, view))
    stream = data.draw(corrupted(envs))
    cuts = _cuts(data.draw(chunk_plans), len(stream))
    assert_same(_events(stream, cuts, {}), LaneKind.COUNT, DeltaMode.VALIDATE)


# ---------------------------------------------------------------- whole streams


@st.composite
def rule_streams(draw: st.DrawFn) -> list[Envelope]:
    """Streams that exercise the stream rules: a few outputs whose
    sequence_no mostly follow on (with duplicates and gaps), envelope seqs
    that mostly rise, Deltas of undeclared schemas, refused negotiations,
    a Handshake somewhere (or none), now and then a warning."""
    declared = draw(st.lists(schemas, min_size=1, max_size=2, unique_by=lambda s: s.fingerprint))
    compiled = [CompiledSchema(s) for s in declared]
    worker = draw(st.sampled_from([b"w-1", b"", b"a worker"]))
    outputs = [b"a", b"b", b"the output", b""]
    next_no = {o: draw(st.sampled_from([1, 1, 5])) for o in outputs}
    n = draw(st.integers(0, 40))
    hs_at = draw(st.integers(-1, n))
    seq = draw(st.integers(-3, 3))
    out: list[Envelope] = []
    for i in range(n + 1):
        seq = max(min(seq + draw(st.sampled_from([1, 1, 1, 1, 3, 0, -1, -50])), 2**63 - 1), -(2**63))
        time_ns = draw(st.one_of(st.just(1718900000000000000 + i), int64s))
        fl = draw(st.sampled_from([0] * 15 + [1]))
        if i == hs_at:
            body: Any = Handshake(worker, tuple((s.name, s) for s in declared), 1)
            out.append(Envelope(seq, time_ns, FIXED_FINGERPRINTS[0], fl, body))
            continue
        if i == n:
            break
        kind = draw(st.sampled_from(["delta"] * 6 + ["undeclared", "heartbeat", "negotiation", "ack", "request"]))
        if kind in ("delta", "undeclared"):
            output = draw(st.sampled_from(outputs))
            sequence_no = next_no[output]
            next_no[output] = max(sequence_no + draw(st.sampled_from([1, 1, 1, 1, 1, 0, -1, 2, 9])), 0)
            watermark = draw(st.one_of(st.none(), int64s))
            if kind == "delta":
                cs = draw(st.sampled_from(compiled))
                key = draw(values(cs.schema.key, floats_text_exact))
                body = DeltaView(output, key, draw(deltas(cs.schema, floats_text_exact)), sequence_no, watermark, cs)
                fp = cs.fingerprint
            else:
                key_bytes, delta_bytes = draw(st.binary(max_size=6)), draw(st.binary(max_size=8))
                body = DeltaMsg(output, key_bytes, delta_bytes, sequence_no, watermark)
                fp = b"undeclared/v1"
            out.append(Envelope(seq, time_ns, fp, fl, body))
        elif kind == "heartbeat":
            body = Heartbeat(worker, time_ns, draw(floats_text_exact))
            out.append(Envelope(seq, time_ns, FIXED_FINGERPRINTS[HEARTBEAT], fl, body))
        elif kind == "negotiation":
            body = SchemaNegotiation(draw(st.sampled_from([True, True, False])), (b"an error",))
            out.append(Envelope(seq, time_ns, FIXED_FINGERPRINTS[5], fl, body))
        elif kind == "ack":
            body = CheckpointAck(worker, draw(st.integers(0, 99)), ((b"a", 3), (b"b c", 4)))
            out.append(Envelope(seq, time_ns, FIXED_FINGERPRINTS[3], fl, body))
        else:
            body = CheckpointRequest(draw(st.integers(0, 99)), time_ns)
            out.append(Envelope(seq, time_ns, FIXED_FINGERPRINTS[2], fl, body))
    return out


@st.composite
def corrupted(draw: st.DrawFn, envs: list[Envelope]) -> bytes:
    parts = []
    for e in envs:
        b = e.to_bytes()
        what = draw(st.sampled_from(["keep"] * 12 + ["flip", "cut", "garbage"]))
        if what == "flip":
            i = draw(st.integers(0, len(b) - 1))
            b = b[:i] + bytes([b[i] ^ (1 << draw(st.integers(0, 7)))]) + b[i + 1 :]
        elif what == "cut":
            b = b[: draw(st.integers(0, len(b) - 1))]
        elif what == "garbage":
            b = draw(st.one_of(st.binary(max_size=30), st.binary(max_size=30).map(lambda g: MAGIC + b"\x01" + g))) + b
        parts.append(b)
    return b"".join(parts)


@dataclass
class Run:
    """What one decoding of a stream gave, in a form both ways can match."""

    items: list[Any]  # canonical lines and problems in order (sexp), or problems in order (count)
    totals: tuple[int, int, dict[int, int]]  # messages, bytes, by tag
    streams: list[tuple[int, int, int, dict[int, int]]]  # the Demux's per-stream counts
    checkers: list[Any]  # per stream: (last_seq, last_applied)
    batches: int


def _events(data: bytes, cuts: list[int], holes: dict[int, int]) -> list[CaptureEvent]:
    events: list[CaptureEvent] = [StreamStart(None, None, True)]
    prev = 0
    for c in [*sorted(set(cuts)), len(data)]:
        if c > prev:
            events.append(StreamData(None, data[prev:c], None))
        if c in holes:
            events.append(StreamGap(None, holes[c], None))
        prev = max(prev, c)
    events.append(StreamEnd(None, None, "end of input"))
    return events


def passes(pre: Prefilter, m: Message) -> bool:
    """The prefilter's conditions, read from a Python message."""
    output, key = m.output, m.key
    return (
        (pre.types is None or m.type in pre.types)
        and (pre.outputs is None or (output is not None and output.encode("utf-8", "surrogateescape") in pre.outputs))
        and (pre.keys is None or (key is not None and key.encode("utf-8", "surrogateescape") in pre.keys))
    )


def table_row(m: Message) -> TableRow:
    """A Python message's cells as a table lane writes them."""
    c = m.cells()
    assert c.seq is not None and c.time_ns is not None
    short = c.short_type or m.type
    cells = (escaped(c.schema), escaped(c.output), escaped(c.key), escaped(c.summary))
    return TableRow("ripple", str(m.offset), str(c.seq), time_of_day(c.time_ns), m.type, short, type_style(m), *cells)


def run(
    events: list[CaptureEvent],
    lane: LaneKind | None,
    kind: LaneKind,
    mode: DeltaMode,
    max_payload: int = 1 << 24,
    prefilter: Prefilter = ANYTHING,
) -> Run:
    """One decoding: the lines of the messages that pass `prefilter` (with
    kind SELECT, a selecting lane leaves at least those to Python; with SEXP
    and JSON, an exact prefilter, the lane writes them) and the problems."""
    rules = kind is LaneKind.COUNT
    options = DissectOptions(max_payload=max_payload, deltas=mode, rules=rules, lane=lane, prefilter=prefilter)
    demux = Demux("s", ProtocolChoice("ripple", options=options))
    outs = []
    for ev in events:
        outs += demux.feed(ev)
    outs += demux.finish()
    items: list[Any] = []
    messages, size, batches = 0, 0, 0
    by_tag: dict[int, int] = {}
    for _origin, item in outs:
        if isinstance(item, LaneRun):
            batches += 1
            messages += item.messages
            size += item.size
            for t, k in enumerate(item.by_tag):
                if k:
                    by_tag[t] = by_tag.get(t, 0) + k
            if kind is LaneKind.SEXP or kind is LaneKind.JSON:
                lines = item.text.splitlines(keepends=True)
                assert len(lines) == item.lines
                assert prefilter.constrains or item.lines == item.messages
                head = origin_head(_origin) if kind is LaneKind.JSON else b""
                items += [("line", head + x) for x in lines]
                assert item.first_lines(item.lines) == item.text
            if kind is LaneKind.TABLE:
                rows = item.table_rows()
                assert len(rows) == item.lines
                assert prefilter.constrains or item.lines == item.messages
                items += [("row", r) for r in rows]
                assert item.table_rows(item.lines // 2) == rows[: item.lines // 2]
            items += list(item.problems())
            assert item.problem_count == len(list(item.problems()))
        elif isinstance(item, Message):
            messages += 1
            size += item.frame.size
            by_tag[item.frame.tag] = by_tag.get(item.frame.tag, 0) + 1
            shown = not prefilter.constrains or passes(prefilter, item)
            if (kind is LaneKind.SEXP or kind is LaneKind.SELECT) and shown:
                items.append(("line", item.line + b"\n"))
            elif kind is LaneKind.JSON and shown:
                items.append(("line", dumps(item.to_json(origin_json(_origin))) + b"\n"))
            elif kind is LaneKind.TABLE and shown:
                items.append(("row", table_row(item)))
        else:
            assert isinstance(item, Problem)
            items.append(item)
    streams = [(s.messages, s.bytes, s.problems, s.by_type) for s in demux.streams.values()]
    checkers = [_checker_state(s.dissector) for s in demux.streams.values()]
    return Run(items, (messages, size, by_tag), streams, checkers, batches)


def assert_same(
    events: list[CaptureEvent],
    kind: LaneKind,
    mode: DeltaMode,
    max_payload: int = 1 << 24,
    prefilter: Prefilter = ANYTHING,
) -> Run:
    pure = run(events, None, kind, mode, max_payload, prefilter)
    fast = run(events, kind, kind, mode, max_payload, prefilter)
    assert pure.batches == 0
    assert fast.items == pure.items
    assert fast.totals == pure.totals
    assert fast.streams == pure.streams
    assert fast.checkers == pure.checkers
    return fast


chunk_plans = st.one_of(
    st.just("whole"),
    st.sampled_from([1, 2, 7, 59, 63, 64, 200]),
    st.lists(st.integers(0, 4000), max_size=10),
)


def _cuts(plan: Any, n: int) -> list[int]:
    if plan == "whole":
        return []
    if isinstance(plan, int):
        return list(range(plan, n, plan))
    return [c for c in plan if c < n]


@st.composite
def rule_stream_captures(draw: st.DrawFn) -> list[CaptureEvent]:
    """A capture's view of a `rule_streams` stream, damaged or not: cut
    anywhere, with holes."""
    envs = draw(rule_streams())
    stream = draw(st.one_of(st.just(b"".join(e.to_bytes() for e in envs)), corrupted(envs)))
    cuts = _cuts(draw(chunk_plans), len(stream))
    holes = {c: draw(st.integers(1, 90)) for c in cuts if draw(st.booleans())}
    return _events(stream, cuts, holes)


@prop(200)
@given(st.data())
def test_verify_lane_gives_the_same_problems_and_counts(data: st.DataObject) -> None:
    envs = data.draw(rule_streams())
    stream = data.draw(corrupted(envs))
    cuts = _cuts(data.draw(chunk_plans), len(stream))
    mode = data.draw(st.sampled_from([DeltaMode.VALIDATE, DeltaMode.VALIDATE, DeltaMode.DECODE]))
    assert_same(_events(stream, cuts, {}), LaneKind.COUNT, mode)


@prop(200)
@given(st.data())
def test_decode_lane_gives_the_same_lines_and_problems(data: st.DataObject) -> None:
    envs = data.draw(st.one_of(rule_streams(), envelope_lists()))
    stream = data.draw(corrupted(envs))
    cuts = _cuts(data.draw(chunk_plans), len(stream))
    mode = data.draw(st.sampled_from([DeltaMode.DECODE, DeltaMode.DECODE, DeltaMode.RAW]))
    events = _events(stream, cuts, {})
    assert_same(events, LaneKind.SEXP, mode)
    assert_same(events, LaneKind.JSON, mode)
    assert_same(events, LaneKind.TABLE, mode)


# Cells as a wire may fill them: controls, bytes that are not UTF-8,
# characters that do not print, and past the table's MAX_CELL (4096).
_long = st.tuples(
    st.lists(st.sampled_from(_utf8_pieces), min_size=1, max_size=3).map(b"".join), st.integers(1400, 4200)
)
cell_bytes = st.one_of(
    json_strings,
    st.sampled_from([b"\x1b[2J", b"\x1b]0;title\x07", "\u2028\u202e\u00ad\U000e0001".encode(), b"tab\there\nnl"]),
    _long.map(lambda t: t[0] * t[1]),
    st.tuples(st.binary(min_size=4090, max_size=4100), st.binary(max_size=3)).map(b"".join),
)


@st.composite
def odd_table_streams(draw: st.DrawFn) -> bytes:
    """Envelopes of one oddly named schema whose strings, outputs and
    worker ids are `cell_bytes`, Deltas of undeclared fingerprints of any
    bytes, Heartbeats of any load."""
    # (a record naming a field twice has no value Python can write)
    schema = draw(
        oddly_named_schemas().filter(lambda s: not _names_a_field_twice(RecordOf((Field(b"k", s.key), *s.fields))))
    )
    cs = CompiledSchema(schema)
    worker = draw(cell_bytes)
    envs: list[Envelope] = [Envelope(0, 1, FIXED_FINGERPRINTS[0], 0, Handshake(worker, ((b"o", schema),), 1))]
    for i in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["delta"] * 5 + ["undeclared", "heartbeat", "negotiation", "request"]))
        time_ns = draw(st.one_of(st.just(1718900000000000000 + i), int64s))
        if kind == "delta":
            key = draw(values(schema.key, floats_text_exact, strings=cell_bytes))
            delta = draw(deltas(schema, floats_text_exact, strings=cell_bytes))
            body: Any = DeltaView(draw(cell_bytes), key, delta, i, None, cs)
            envs.append(Envelope(i + 1, time_ns, schema.fingerprint, 0, body))
        elif kind == "undeclared":
            fp = draw(st.binary(min_size=1, max_size=32).filter(lambda b: not b.endswith(b"\0")))
            body = DeltaMsg(draw(cell_bytes), draw(st.binary(max_size=9)), draw(st.binary(max_size=9)), i, None)
            envs.append(Envelope(i + 1, time_ns, fp, 0, body))
        elif kind == "heartbeat":
            envs.append(
                Envelope(i + 1, time_ns, FIXED_FINGERPRINTS[HEARTBEAT], 0, Heartbeat(worker, time_ns, draw(floats_any)))
            )
        elif kind == "negotiation":
            errors = tuple(draw(st.lists(cell_bytes, max_size=3)))
            body = SchemaNegotiation(draw(st.booleans()), errors)
            envs.append(Envelope(i + 1, time_ns, FIXED_FINGERPRINTS[5], 0, body))
        else:
            envs.append(Envelope(i + 1, time_ns, FIXED_FINGERPRINTS[2], 0, CheckpointRequest(i, time_ns)))
    return b"".join(e.to_bytes() for e in envs)


@prop(150)
@given(st.data())
def test_table_lane_cells_as_python(data: st.DataObject) -> None:
    """The table's cells the C lane writes (codec/fast/tableout.h): every
    wire string escaped and cut as render/columns.py's `escaped` does,
    times of any int64, loads of any float, summaries of any schema."""
    stream = data.draw(odd_table_streams())
    events = _events(stream, _cuts(data.draw(chunk_plans), len(stream)), {})
    assert_same(events, LaneKind.TABLE, DeltaMode.DECODE)


@st.composite
def prefilters(draw: st.DrawFn, keys: list[bytes]) -> Prefilter:
    """Any mix of type, output and key conditions; keys among those of the
    stream (`keys`) or not."""
    types = draw(st.none() | st.frozensets(st.sampled_from(sorted(TYPE_NAMES.values())), max_size=3))
    outputs = draw(st.none() | st.frozensets(st.sampled_from([b"a", b"b", b"the output", b"", b"zz"]), max_size=2))
    key_choices = st.sampled_from([*keys, b"0", b"a", b"()", b"0x", b"0x07"])
    return Prefilter(types, outputs, draw(st.none() | st.frozensets(key_choices, max_size=3)))


def _keys_of(events: list[CaptureEvent], mode: DeltaMode) -> list[bytes]:
    options = DissectOptions(deltas=mode)
    demux = Demux("s", ProtocolChoice("ripple", options=options))
    outs = [*(x for ev in events for x in demux.feed(ev)), *demux.finish()]
    keys = (item.key for _o, item in outs if isinstance(item, Message))
    return sorted({k.encode("utf-8", "surrogateescape") for k in keys if k is not None})


@prop(200)
@given(st.data())
def test_selecting_lanes_choose_as_python(data: st.DataObject) -> None:
    """--type/--output/--key/-Y: the lane passes over only what cannot be
    chosen, counts everything, reports the same problems, and, when the
    selection is exactly what it tests, writes the same lines."""
    envs = data.draw(st.one_of(rule_streams(), envelope_lists()))
    stream = data.draw(corrupted(envs))
    events = _events(stream, _cuts(data.draw(chunk_plans), len(stream)), {})
    mode = data.draw(st.sampled_from([DeltaMode.DECODE, DeltaMode.DECODE, DeltaMode.RAW]))
    pre = data.draw(prefilters(_keys_of(events, mode)))
    if pre.constrains:  # (else nothing to select: render/show.py asks for no SELECT lane)
        assert_same(events, LaneKind.SELECT, mode, prefilter=pre)
    # the conditions are the whole selection: the lane writes those that pass
    assert_same(events, LaneKind.SEXP, mode, prefilter=pre)
    assert_same(events, LaneKind.JSON, mode, prefilter=pre)
    assert_same(events, LaneKind.TABLE, mode, prefilter=pre)


@prop(150)
@given(st.data())
def test_lanes_on_damaged_streams_with_holes(data: st.DataObject) -> None:
    stream = data.draw(damaged_streams())
    cuts = _cuts(data.draw(chunk_plans), len(stream))
    holes = {c: data.draw(st.integers(1, 80)) for c in cuts if data.draw(st.booleans())}
    events = _events(stream, cuts, holes)
    max_payload = data.draw(st.sampled_from([1 << 24, 64, 200]))
    assert_same(events, LaneKind.SEXP, DeltaMode.DECODE, max_payload)
    assert_same(events, LaneKind.JSON, DeltaMode.DECODE, max_payload)
    assert_same(events, LaneKind.TABLE, DeltaMode.DECODE, max_payload)
    assert_same(events, LaneKind.COUNT, DeltaMode.VALIDATE, max_payload)


def test_more_fingerprints_than_the_scanner_keeps() -> None:
    """The scanner keeps the registry's answers from run to run (64 of
    them, then it starts over), and asks again after a Handshake: a stream
    of 200 Deltas of 100 schemas, half declared half-way through."""
    declared = [Schema(f"s{i}".encode(), 1, INT, (Field(b"n", INT),)) for i in range(50)]
    compiled = [CompiledSchema(x) for x in declared]
    envs: list[Envelope] = []
    for i in range(200):
        if i == 100:
            hs = Handshake(b"w", tuple((x.name, x) for x in declared), 1)
            envs.append(Envelope(1000, 0, FIXED_FINGERPRINTS[0], 0, hs))
        k = i % 100
        if k < 50:
            body: Any = DeltaView(b"o", 7, SetRow({"n": i}), i + 1, None, compiled[k])
            envs.append(Envelope(i + 1, 0, compiled[k].fingerprint, 0, body))
        else:
            body = DeltaMsg(b"o", b"\x07", b"\x00\x01", i + 1, None)
            envs.append(Envelope(i + 1, 0, f"undeclared{k}/v1".encode(), 0, body))
    stream = b"".join(e.to_bytes() for e in envs)
    for cuts in ([], list(range(300, len(stream), 300))):
        events = _events(stream, cuts, {})
        assert_same(events, LaneKind.COUNT, DeltaMode.VALIDATE)
        assert_same(events, LaneKind.SEXP, DeltaMode.DECODE)


@pytest.mark.skipif(speedups() is None, reason="the C fast lane is off (RIPPLE_PURE)")
def test_a_clean_stream_goes_through_the_lane() -> None:
    """Not only the same: the lane really takes the boring envelopes."""
    envs = [Envelope(i + 1, i, FIXED_FINGERPRINTS[HEARTBEAT], 0, Heartbeat(b"w", i, 0.5 * i)) for i in range(1000)]
    events = _events(b"".join(e.to_bytes() for e in envs), [5000, 20000], {})
    kinds = ((LaneKind.SEXP, DeltaMode.DECODE), (LaneKind.JSON, DeltaMode.DECODE), (LaneKind.COUNT, DeltaMode.VALIDATE))
    for kind, mode in kinds:
        fast = assert_same(events, kind, mode)
        assert fast.batches >= 3
        assert not any(isinstance(x, Problem) for x in fast.items)
    # a selection of Deltas: the lane passes over every Heartbeat
    fast = assert_same(events, LaneKind.SELECT, DeltaMode.DECODE, prefilter=Prefilter(types=frozenset({"Delta"})))
    assert fast.batches >= 3 and fast.items == [] and fast.totals[0] == 1000


def _checker_state(dissector: Any) -> Any:
    """The stream rules' state of a Ripple stream dissector (None: not checked)."""
    checker = dissector.checker
    return None if checker is None else (checker.last_seq, checker.last_applied)


# ---------------------------------------------------------------- resync and range CRCs


def _shift_by_squaring(crc: int, n: int) -> int:
    """x^(8n) * crc modulo the polynomial, square and multiply in Python:
    independent of both the C tables and crcrange's."""
    from ripple_cli.codec.crcrange import _mul

    power, base = 1 << 31, (1 << 31) >> 8  # x^0, x^8
    while n:
        if n & 1:
            power = _mul(power, base)
        base = _mul(base, base)
        n >>= 1
    return _mul(power, crc)


@prop(300)
@given(st.integers(0, 2**32 - 1), st.one_of(st.integers(0, 1100), st.integers(0, 1 << 26), st.integers(0, 2**64 - 1)))
def test_crc32c_shift_is_the_register_past_zero_bytes(crc: int, n: int) -> None:
    assert accel is not None
    assert accel.crc32c_shift(crc, n) == _shift_by_squaring(crc, n)


@prop(200)
@given(st.binary(max_size=40), st.binary(max_size=3000))
def test_crc32c_shift_combines_crcs(a: bytes, b: bytes) -> None:
    assert accel is not None
    assert accel.crc32c_shift(crc32c_package(a), len(b)) ^ crc32c_package(b) == crc32c_package(a + b)


@prop(150)
@given(st.integers(0, 6000), st.integers(0, 2000), st.integers(0, 2000), st.randoms(use_true_random=False))
def test_crc_prefixes_match_the_python_ones(n: int, origin_at: int, base: int, rnd: Any) -> None:
    """CrcPrefixes (C) and PurePrefixes give every range's CRC, the same
    marks, in any order of asking; a range outside the buffer is refused."""
    from ripple_cli.codec.crcrange import PurePrefixes

    assert accel is not None
    buf = bytearray(rnd.randbytes(n))
    origin = base + min(origin_at, n)
    c, py = accel.CrcPrefixes(origin), PurePrefixes(origin)
    for _ in range(12):
        start = rnd.randrange(origin, base + n + 1)
        end = rnd.randrange(start, base + n + 1)
        expected = crc32c_package(bytes(buf[start - base : end - base]))
        assert c.crc(buf, base, start, end) == py.crc(buf, base, start, end) == expected
        assert (c.marks, c.covered, c.origin) == (py.marks, py.covered, py.origin)
    with pytest.raises(ValueError):
        c.crc(buf, base, origin, base + n + 1000)


def _claiming(claim: int, seq: int) -> bytes:
    """A header (valid magic and version) claiming `claim` bytes, with no
    payload behind it: a resync candidate whose CRC covers what it claims."""
    from ripple_cli.codec.envelope import HEADER

    return HEADER.pack(MAGIC, 1, HEARTBEAT, 0, seq, 0, FIXED_FINGERPRINTS[HEARTBEAT], claim)


@st.composite
def resync_streams(draw: st.DrawFn) -> bytes:
    """Damaged streams whose candidates claim long payloads (past crcrange's
    STEP, so their CRCs come from the prefixes) or short ones, with intact
    envelopes of long payloads among them."""
    from ripple_cli.codec.envelope import build_envelope

    fp = FIXED_FINGERPRINTS[HEARTBEAT]
    parts = [draw(st.binary(max_size=3))]
    for seq in range(draw(st.integers(1, 8))):
        what = draw(st.sampled_from(["claim", "claim", "long", "short", "garbage", "cut"]))
        if what == "claim":
            parts.append(_claiming(draw(st.one_of(st.integers(500, 4000), st.integers(-5, 600))), seq))
        elif what in ("long", "cut"):
            worker = b"w" * draw(st.integers(0, 2500))
            env = build_envelope(HEARTBEAT, seq, 0, fp, write_payload(Heartbeat(worker, 1, 0.5)))
            parts.append(env if what == "long" else env[: draw(st.integers(1, len(env) - 1))])
        elif what == "short":
            parts.append(build_envelope(HEARTBEAT, seq, 0, fp, write_payload(Heartbeat(b"w", 1, 0.5))))
        else:
            parts.append(draw(st.binary(max_size=80)) + MAGIC + draw(st.binary(max_size=8)))
    return b"".join(parts)


def _frames_of(stream: bytes, cuts: list[int], lane: Any, max_payload: int) -> list[Any]:
    from ripple_cli.codec import framing

    saved = framing._accel
    framing._accel = lane
    try:
        dec = framing.FrameDecoder(max_payload)
        out: list[Any] = []
        prev = 0
        for c in [*sorted(set(cuts)), len(stream)]:
            out += dec.feed(stream[prev:c])
            prev = c
        return out + dec.finish()
    finally:
        framing._accel = saved


@prop(250)
@given(st.data())
def test_resync_in_c_finds_what_python_finds(data: st.DataObject) -> None:
    """framing.py's resync and find_envelope, in C and in Python, on streams
    of long claims: the same frames and problems in any chunking, the same
    first envelope."""
    from ripple_cli.codec import framing

    assert accel is not None
    stream = data.draw(resync_streams())
    max_payload = data.draw(st.sampled_from([framing.DEFAULT_MAX_PAYLOAD, 3000, 600, 0]))
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=10))
    expected = _frames_of(stream, [], None, max_payload)
    assert _frames_of(stream, [], accel, max_payload) == expected
    assert _frames_of(stream, cuts, accel, max_payload) == _frames_of(stream, cuts, None, max_payload) == expected
    saved = framing._accel
    try:
        framing._accel = None
        python_says = framing.find_envelope(stream, max_payload)
        framing._accel = accel
        c_says = framing.find_envelope(stream, max_payload)
    finally:
        framing._accel = saved
    assert c_says == python_says


# ---------------------------------------------------------------- Handshakes (fast/handshake.h)

any_names = st.one_of(
    field_names, st.binary(max_size=12), st.lists(st.sampled_from(_atom_bytes), max_size=6).map(b"".join)
)


def _renamed(t: FieldType, names: st.DataObject) -> FieldType:
    """`t` with any bytes as names: the wire allows them, and the printer
    must quote them as sexplib does."""
    if isinstance(t, (OptionOf, ListOf)):
        return type(t)(_renamed(t.inner, names))
    if isinstance(t, RecordOf):
        return RecordOf(tuple(Field(names.draw(any_names), _renamed(f.typ, names), f.default) for f in t.fields))
    if isinstance(t, EnumOf):
        return EnumOf(tuple(names.draw(any_names) for _ in t.names))
    return t


@st.composite
def handshakes(draw: st.DrawFn) -> Handshake:
    outputs = []
    for s in draw(st.lists(schemas, max_size=4)):
        if draw(st.booleans()):
            s = Schema(
                draw(any_names),
                s.version,
                _renamed(s.key, draw(st.data())),
                tuple(Field(draw(any_names), _renamed(f.typ, draw(st.data())), f.default) for f in s.fields),
            )
        outputs.append((draw(any_names), s))
    return Handshake(
        draw(any_names), tuple(outputs), draw(st.one_of(st.integers(0, 3), int64s.filter(lambda n: abs(n) < 1 << 62)))
    )


def _python_line(seq: int, time_ns: int, fingerprint: bytes, flags: int, hs: Handshake) -> bytes:
    frame = Frame(0, 1, 0, flags, seq, time_ns, fingerprint, write_payload(hs), 0)
    return to_string(envelope_to_sexp(frame, hs))


@prop(300)
@given(handshakes(), st.one_of(st.integers(0, 9), int64s), int64s, any_names, st.integers(0, 255))
def test_handshakes_read_and_print_as_python(hs: Handshake, seq: int, time_ns: int, fp: bytes, flags: int) -> None:
    """The C reader builds the very objects of the Python one, prints the
    very line of the Python printer, and indexes the schemas as the
    registry's Python code does."""
    assert accel is not None
    payload = write_payload(hs)
    expected = read_handshake_py(payload)
    assert expected == hs
    got = accel.read_handshake(payload, HANDSHAKE_KINDS)
    assert got == expected and expected == got and type(got) is Handshake
    outs = got.output_schemas
    assert tuple(outs) == expected.output_schemas and len(outs) == len(expected.output_schemas)
    assert [type(s) for _n, s in outs] == [Schema] * len(outs)
    assert hash(got) == hash(expected) and repr(outs) == repr(expected.output_schemas)
    assert pickle.loads(pickle.dumps(got)) == expected
    assert accel.handshake_line(seq, time_ns, fp, flags, payload) == _python_line(seq, time_ns, fp, flags, hs)
    # the registry's lookup: the last schema of a fingerprint, None for any other
    index = {s.fingerprint: s for _n, s in expected.output_schemas}
    assert {fp: outs.get(fp) for fp in index} == index == {fp: expected.output_schemas.get(fp) for fp in index}
    for other in (fp, b"", b"s/v", *(f + b"0" for f in index), *(f[:-1] for f in index)):
        assert outs.get(other) == index.get(other) == expected.output_schemas.get(other)


@prop(300)
@given(handshakes(), st.data())
def test_damaged_handshakes_are_refused_where_python_refuses(hs: Handshake, data: st.DataObject) -> None:
    """Cut, flipped or extended anywhere, a payload is refused by C (None)
    exactly where the Python reader raises, and read alike elsewhere."""
    assert accel is not None
    payload = bytearray(write_payload(hs))
    how = data.draw(st.sampled_from(["cut", "flip", "extend"]))
    if how == "cut":
        del payload[data.draw(st.integers(0, len(payload) - 1)) :]
    elif how == "flip":
        at = data.draw(st.integers(0, len(payload) - 1))
        payload[at] = data.draw(st.integers(0, 255))
    else:
        payload += data.draw(st.binary(min_size=1, max_size=3))
    damaged = bytes(payload)
    try:
        expected: Handshake | None = read_handshake_py(damaged)
    except DecodeError:
        expected = None
    assert accel.read_handshake(damaged, HANDSHAKE_KINDS) == expected
    line = accel.handshake_line(1, 2, b"ripple.handshake/v1", 0, damaged)
    assert line == (None if expected is None else _python_line(1, 2, b"ripple.handshake/v1", 0, expected))


def test_a_handshake_too_deep_is_left_to_python() -> None:
    """Types nested past MAX_TYPE_DEPTH: Python words the refusal, C only declines."""
    assert accel is not None
    t: FieldType = INT
    for _ in range(70):
        t = ListOf(t)
    payload = write_payload(Handshake(b"w", ((b"o", Schema(b"s", 1, t, (Field(b"x", INT),))),), 1))
    with pytest.raises(DecodeError, match="nested too deeply"):
        read_handshake_py(payload)
    assert accel.read_handshake(payload, HANDSHAKE_KINDS) is None
    assert accel.handshake_line(1, 2, b"f", 0, payload) is None


def test_a_registry_answers_for_the_last_declaration() -> None:
    """Handshakes read by C and by Python, declared one after another in one
    registry, more of them than it keeps apart: each fingerprint resolves
    to the schema of the latest Handshake that declared it."""
    from ripple_cli.codec.registry import MAX_LAYERS, SchemaRegistry

    assert accel is not None
    registry = SchemaRegistry().child()
    latest: dict[bytes, Schema] = {}
    for round_ in range(3 * MAX_LAYERS):
        schemas = [
            Schema(b"s%d" % (i % 5), 1, INT if (i + round_) % 2 else FLOAT, (Field(b"x", INT),))
            for i in range(round_ % 7 + 1)
        ]
        hs = Handshake(b"w", tuple((b"o%d" % i, s) for i, s in enumerate(schemas)), 1)
        payload = write_payload(hs)
        read = accel.read_handshake(payload, HANDSHAKE_KINDS) if round_ % 3 else read_handshake_py(payload)
        registry.declare(read.output_schemas)
        latest.update((s.fingerprint, s) for s in schemas)
        for fp, s in latest.items():
            compiled = registry.get(fp)
            assert compiled is not None and compiled.schema == s and fp in registry
        assert registry.get(b"s9/v1") is None and b"s9/v1" not in registry
        assert sorted(s.fingerprint for s in registry.schemas()) == sorted(latest)


# ------------------------------------------------------------ mmap windows


def _as_windows(events: list[CaptureEvent]) -> list[CaptureEvent]:
    """Each chunk as a read-only buffer the framer borrows: an anonymous
    mmap, as a file's window is (sources/files.py)."""
    out: list[CaptureEvent] = []
    for ev in events:
        if isinstance(ev, StreamData):
            window = mmap.mmap(-1, len(ev.data))
            window.write(ev.data)
            ev = StreamData(ev.stream, window, ev.time_ns)
        out.append(ev)
    return out


@prop(200)
@given(st.data())
def test_mmap_windows_are_framed_as_their_bytes(data: st.DataObject) -> None:
    """The framer frames in a window without copying it, and copies only
    the seam between two (framing.SEAM of the next one at first, more when
    the envelope across it is longer): whatever the windows' sizes and the
    seam's, the same lines, problems and counts as the bytes fed as bytes,
    on either lane."""
    envs = data.draw(st.one_of(rule_streams(), envelope_lists()))
    stream = data.draw(st.one_of(corrupted(envs), damaged_streams()))
    cuts = _cuts(data.draw(chunk_plans), len(stream))
    events = _events(stream, cuts, {})
    max_payload = data.draw(st.sampled_from([1 << 24, 200]))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(framing, "SEAM", data.draw(st.sampled_from([1, 3, 59, 63, 64, 100, 1 << 16])))
        for kind, mode in [
            (LaneKind.COUNT, DeltaMode.VALIDATE),
            (LaneKind.SEXP, DeltaMode.DECODE),
            (LaneKind.JSON, DeltaMode.DECODE),
            (LaneKind.TABLE, DeltaMode.RAW),
        ]:
            pure = run(events, None, kind, mode, max_payload)
            for lane in (None, kind) if speedups() is not None else (None,):
                mapped = run(_as_windows(events), lane, kind, mode, max_payload)
                assert mapped.items == pure.items
                assert mapped.totals == pure.totals
                assert mapped.streams == pure.streams
                assert mapped.checkers == pure.checkers


# ------------------------------------------------- verify's scan over cores


@contextmanager
def cut_over_cores(warmup: int, segments: int) -> Iterator[None]:
    """Every run of the scanner is cut in `segments` (par_scan), however short."""
    accel = speedups()
    assert accel is not None
    old = accel.parallel(0, warmup, segments)
    try:
        yield
    finally:
        accel.parallel(*old)


needs_c = pytest.mark.skipif(speedups() is None, reason="the C fast lane is off (RIPPLE_PURE)")


@needs_c
@prop(200)
@given(st.data())
def test_verify_lane_cut_over_cores_gives_the_same_problems_and_counts(data: st.DataObject) -> None:
    """The segments' records, with the rules applied after in stream order,
    give what the pure checker gives: problems, counts, checker state."""
    envs = data.draw(rule_streams())
    stream = data.draw(st.one_of(corrupted(envs), damaged_streams()))
    events = _events(stream, _cuts(data.draw(chunk_plans), len(stream)), {})
    mode = data.draw(st.sampled_from([DeltaMode.VALIDATE, DeltaMode.DECODE, DeltaMode.RAW]))
    with cut_over_cores(data.draw(st.sampled_from([0, 0, 63, 300])), data.draw(st.integers(2, 8))):
        assert_same(events, LaneKind.COUNT, mode)
        assert_same(_as_windows(events), LaneKind.COUNT, mode)


@needs_c
@pytest.mark.parametrize("segments", [2, 3, 5])
def test_an_envelope_inside_a_payload_is_not_a_segment_boundary(segments: int) -> None:
    """A whole valid envelope carried inside another's payload (a Heartbeat
    whose worker_id is one) is where the boundary search lands when it
    starts before it: the segment before runs past it, and the segments
    from there on are not used."""
    inner = Envelope(7, 1, FIXED_FINGERPRINTS[4], 0, Heartbeat(b"inner", 2, 0.5)).to_bytes()
    around = Envelope(8, 3, FIXED_FINGERPRINTS[4], 0, Heartbeat(inner * 40, 4, 0.25)).to_bytes()
    beats = [Envelope(s, 5, FIXED_FINGERPRINTS[4], 0, Heartbeat(b"w", s, 1.0)).to_bytes() for s in range(9, 60)]
    for before in (1, 5, 20):
        stream = b"".join(beats[:before]) + around + b"".join(beats[before:])
        with cut_over_cores(0, segments):
            fast = assert_same(_events(stream, [], {}), LaneKind.COUNT, DeltaMode.VALIDATE)
        assert fast.totals[0] == 52  # the inner envelopes are not messages
