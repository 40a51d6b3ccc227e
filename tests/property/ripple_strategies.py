"""Hypothesis strategies shared by the property tests: random `Schema.t`,
random values of a field type over their full ranges, random messages and
streams, and comparisons that see floats by bit pattern."""

from __future__ import annotations

import math
import os
import string
from dataclasses import dataclass
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st

from ripple_cli.codec import binprot as bp
from ripple_cli.codec.delta import REMOVE, CompiledSchema, Delta, Patch, SetRow
from ripple_cli.codec.envelope import build_envelope
from ripple_cli.codec.messages import (
    FIXED_FINGERPRINTS,
    Body,
    CheckpointAck,
    CheckpointRequest,
    DeltaMsg,
    DeltaView,
    Handshake,
    Heartbeat,
    SchemaNegotiation,
    UnknownPayload,
    tag_of,
    write_payload,
)
from ripple_cli.codec.problems import Problem
from ripple_cli.codec.schema import (
    BOOL,
    FLOAT,
    INT,
    INT32,
    INT64,
    STRING,
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
from ripple_cli.protocols.ripple.message import Message

SCALE = int(os.environ.get("RIPPLE_HYPOTHESIS_SCALE", "1"))


def prop(n: int) -> settings:
    """The property suite's profile (see conftest.py) with n examples (times SCALE)."""
    return settings(settings.get_profile("ripple-property"), max_examples=n * SCALE)


# ---------------------------------------------------------------- names and schemas

_LOWER = string.ascii_lowercase
_REST = string.ascii_lowercase + string.digits + "_"

# OCaml identifiers: distinct lowercase names also capitalize to distinct constructors.
field_names = st.builds(lambda a, b: (a + b).encode(), st.sampled_from(_LOWER), st.text(_REST, max_size=6))
ctor_names = st.builds(
    lambda a, b: (a + b).encode(), st.sampled_from(string.ascii_uppercase), st.text(_REST, max_size=5)
)
defaults = st.one_of(st.none(), st.just(b"()"), st.binary(max_size=8))

primitive_types = st.sampled_from([INT, INT32, INT64, FLOAT, BOOL, STRING])
enum_types = st.lists(ctor_names, min_size=1, max_size=5, unique=True).map(lambda ns: EnumOf(tuple(ns)))


def field_lists(types: st.SearchStrategy[FieldType], max_size: int = 4) -> st.SearchStrategy[tuple[Field, ...]]:
    """Fields with distinct names (an OCaml record has at least one field)."""
    return st.lists(
        st.tuples(field_names, types, defaults), min_size=1, max_size=max_size, unique_by=lambda t: t[0]
    ).map(lambda items: tuple(Field(n, t, d) for n, t, d in items))


def _extend(children: st.SearchStrategy[FieldType]) -> st.SearchStrategy[FieldType]:
    return st.one_of(
        children.map(OptionOf),
        children.map(ListOf),
        field_lists(children, max_size=3).map(RecordOf),
    )


field_types: st.SearchStrategy[FieldType] = st.recursive(st.one_of(primitive_types, enum_types), _extend, max_leaves=6)

schemas = st.builds(
    Schema,
    field_names,
    st.one_of(st.integers(0, 20), st.integers(bp.INT_MIN, bp.INT_MAX)),
    field_types,
    field_lists(field_types, max_size=5),
)


# ---------------------------------------------------------------- values

_INT_EDGES = {
    "Int": (bp.INT_MIN, bp.INT_MAX),
    "Int32": (bp.INT32_MIN, bp.INT32_MAX),
    "Int64": (bp.INT64_MIN, bp.INT64_MAX),
}
_CODE_EDGES = [0, 1, -1, 0x7F, 0x80, -0x80, -0x81, 0x7FFF, 0x8000, -0x8000, -0x8001, 0xFFFF, 0x10000]


def ints(kind: str) -> st.SearchStrategy[int]:
    lo, hi = _INT_EDGES[kind]
    edges = [x for x in [*_CODE_EDGES, lo, hi, lo + 1, hi - 1, bp.INT32_MIN, bp.INT32_MAX] if lo <= x <= hi]
    edges += [x for x in (bp.INT32_MIN - 1, bp.INT32_MAX + 1, bp.INT_MIN, bp.INT_MAX) if lo <= x <= hi]
    return st.one_of(st.sampled_from(edges), st.integers(lo, hi))


# Every float, by bit pattern (NaNs with any payload and sign included).
float_bits = st.one_of(
    st.integers(0, 2**64 - 1),
    st.sampled_from(
        [
            0,
            1 << 63,
            0x7FF0000000000000,
            0xFFF0000000000000,
            0x7FF8000000000000,
            0xFFF8000000000000,
            0x7FF0000000000001,
            0x0000000000000001,
            0x7FEFFFFFFFFFFFFF,
            0x3FB999999999999A,
        ]
    ),
)
floats_any = st.one_of(float_bits.map(bp.float_of_bits), st.floats(allow_nan=True, allow_infinity=True))


def values(
    t: FieldType, floats: st.SearchStrategy[float] = floats_any, strings: st.SearchStrategy[bytes] | None = None
) -> st.SearchStrategy[Any]:
    """Values of type t, in the Python shape values.py documents (strings:
    random bytes unless given)."""
    if isinstance(t, Prim):
        if t.kind in _INT_EDGES:
            return ints(t.kind)
        if t.kind == "Float":
            return floats
        if t.kind == "Bool":
            return st.booleans()
        return st.binary(max_size=12) if strings is None else strings
    if isinstance(t, OptionOf):
        return st.one_of(st.none(), values(t.inner, floats, strings).map(lambda v: (v,)))
    if isinstance(t, ListOf):
        return st.lists(values(t.inner, floats, strings), max_size=3)
    if isinstance(t, RecordOf):
        names = [text(f.name) for f in t.fields]
        return st.tuples(*(values(f.typ, floats, strings) for f in t.fields)).map(
            lambda vs: dict(zip(names, vs, strict=True))
        )
    return st.sampled_from([text(n) for n in t.names])


def deltas(
    schema: Schema, floats: st.SearchStrategy[float] = floats_any, strings: st.SearchStrategy[bytes] | None = None
) -> st.SearchStrategy[Delta]:
    row = values(RecordOf(schema.fields), floats, strings).map(SetRow)
    update = st.integers(0, len(schema.fields) - 1).flatmap(
        lambda i: values(schema.fields[i].typ, floats, strings).map(lambda v: (i, v))
    )
    patch = st.lists(update, max_size=4).map(lambda us: Patch(tuple(us)))
    return st.one_of(row, patch, st.just(REMOVE))


# ---------------------------------------------------------------- comparing values


def canon(v: Any, keep_nan_payload: bool = True) -> Any:
    """A comparable form: floats by bit pattern; with keep_nan_payload=False a
    NaN is only a NaN with a sign (what text keeps, as in OCaml)."""
    if isinstance(v, float):
        if math.isnan(v) and not keep_nan_payload:
            return ("nan", math.copysign(1.0, v) < 0)
        return ("float", bp.float_bits(v))
    if isinstance(v, tuple):
        return ("tuple", *(canon(x, keep_nan_payload) for x in v))
    if isinstance(v, list):
        return ["list", *(canon(x, keep_nan_payload) for x in v)]
    if isinstance(v, dict):
        return ("dict", *((k, canon(x, keep_nan_payload)) for k, x in v.items()))
    if isinstance(v, (SetRow, Patch)):
        inner = v.row if isinstance(v, SetRow) else v.updates
        return (type(v).__name__, canon(inner, keep_nan_payload))
    return (type(v).__name__, v)


# ---------------------------------------------------------------- messages and streams

CANONICAL_NAN = bp.float_of_bits(0x7FF8000000000000)
CANONICAL_NEG_NAN = bp.float_of_bits(0xFFF8000000000000)


def _text_exact(x: float) -> float:
    """A NaN as the text reads it back (payload lost, sign kept)."""
    if math.isnan(x):
        return CANONICAL_NEG_NAN if math.copysign(1.0, x) < 0 else CANONICAL_NAN
    return x


# Floats that survive text exactly, so that whole messages go bytes -> line -> bytes.
floats_text_exact = floats_any.map(_text_exact)

int64s = ints("Int64")
seqs = st.one_of(st.integers(0, 1000), int64s)
flags = st.one_of(st.just(0), st.just(0), st.just(0), st.integers(1, 255))


@dataclass(frozen=True)
class Envelope:
    """An envelope to write: its header fields and body."""

    seq: int
    time_ns: int
    fingerprint: bytes
    flags: int
    body: Body

    def to_bytes(self) -> bytes:
        return build_envelope(
            tag_of(self.body), self.seq, self.time_ns, self.fingerprint, write_payload(self.body), self.flags
        )


def _fixed(tag_body: Body) -> bytes:
    return FIXED_FINGERPRINTS[tag_of(tag_body)]


def simple_bodies() -> st.SearchStrategy[Body]:
    names = st.binary(max_size=10)
    return st.one_of(
        st.builds(Heartbeat, names, int64s, floats_text_exact),
        st.builds(CheckpointRequest, ints("Int"), int64s),
        st.builds(CheckpointAck, names, ints("Int"), st.lists(st.tuples(names, ints("Int")), max_size=3).map(tuple)),
        st.builds(SchemaNegotiation, st.booleans(), st.lists(names, max_size=3).map(tuple)),
        st.builds(UnknownPayload, st.integers(6, 255), st.binary(max_size=20)),
    )


@st.composite
def envelope_lists(draw: st.DrawFn, max_messages: int = 8) -> list[Envelope]:
    """A connection's worth of envelopes: maybe a Handshake declaring some
    schemas, Deltas decoded with them (before the Handshake they show raw),
    Deltas of unknown schemas, Deltas that do not fit their schema, and the
    other message types, with flags now and then."""
    declared = draw(st.lists(schemas, max_size=2, unique_by=lambda s: s.fingerprint))
    compiled = [CompiledSchema(s) for s in declared]
    n = draw(st.integers(0, max_messages))
    hs_at = draw(st.integers(0, n)) if declared else -1
    out: list[Envelope] = []
    for i in range(n + 1):
        seq, time_ns, fl = draw(seqs), draw(int64s), draw(flags)
        if i == hs_at:
            outputs = tuple((s.name, s) for s in declared)
            body: Body = Handshake(draw(st.binary(max_size=8)), outputs, draw(ints("Int")))
            out.append(Envelope(seq, time_ns, _fixed(body), fl, body))
            continue
        if i == n:
            break
        kind = draw(st.sampled_from(["view", "view", "raw", "bad", "simple", "simple"]))
        source, sequence_no = draw(st.binary(max_size=8)), draw(ints("Int"))
        watermark = draw(st.one_of(st.none(), int64s))
        if kind in ("view", "bad") and compiled:
            c = draw(st.sampled_from(compiled))
            if kind == "view":
                key = draw(values(c.schema.key, floats_text_exact))
                delta = draw(deltas(c.schema, floats_text_exact))
                body = DeltaView(source, key, delta, sequence_no, watermark, c)
            else:  # a delta tag that no schema has: shows raw, with a bad_delta problem
                body = DeltaMsg(
                    source, draw(st.binary(max_size=6)), b"\x03" + draw(st.binary(max_size=6)), sequence_no, watermark
                )
            out.append(Envelope(seq, time_ns, c.fingerprint, fl, body))
        elif kind in ("view", "bad", "raw"):
            body = DeltaMsg(source, draw(st.binary(max_size=10)), draw(st.binary(max_size=16)), sequence_no, watermark)
            out.append(Envelope(seq, time_ns, b"nobody/v" + str(i).encode(), fl, body))
        else:
            body = draw(simple_bodies())
            fp = b"future/v1" if isinstance(body, UnknownPayload) else _fixed(body)
            out.append(Envelope(seq, time_ns, fp, fl, body))
    return out


def event_key(e: Message | Problem) -> Any:
    """What two decodings must agree on for one event."""
    if isinstance(e, Problem):
        return e
    return (e.frame, type(e.body).__name__, e.line)
