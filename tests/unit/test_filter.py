"""The display filter of -Y: grammar, operators, literals, every field on
real messages, errors with their columns, and absent-field semantics.

Real messages come from decoding examples/demo.ripple (with the schemas of
examples/schemas and examples/more-schemas); hand-built ones are real
envelopes too, written with `build_envelope` and decoded the same way.
"""

from __future__ import annotations

import math
import random
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ripple_cli.analysis.filter import FIELD_NAMES, DisplayFilter, FilterError, compile_filter
from ripple_cli.analysis.select import Selection
from ripple_cli.capture.events import Endpoint, StreamId
from ripple_cli.codec.envelope import build_envelope
from ripple_cli.codec.messages import (
    DELTA,
    Body,
    DeltaMode,
    DeltaMsg,
    DeltaView,
    SchemaNegotiation,
    UnknownPayload,
    tag_of,
    write_payload,
)
from ripple_cli.codec.registry import SchemaRegistry
from ripple_cli.codec.schema import (
    BOOL,
    FLOAT,
    INT,
    INT64,
    STRING,
    EnumOf,
    Field,
    ListOf,
    OptionOf,
    RecordOf,
    Schema,
)
from ripple_cli.codec.summary import key_text
from ripple_cli.errors import UsageProblem
from ripple_cli.protocols.origin import Origin
from ripple_cli.protocols.ripple.decoder import StreamDecoder
from ripple_cli.protocols.ripple.message import Message
from ripple_cli.sources.schema_files import load_registry
from tests.conftest import EXAMPLES

FILE = Origin("examples/demo.ripple")
CLIENT = Endpoint("10.0.0.1", 50412)
SERVER = Endpoint("10.0.0.2", 9000)
C2S = Origin("cap.pcap", StreamId(3, CLIENT, SERVER, from_client=True), 1718900000123456789)
S2C = Origin("cap.pcap", StreamId(3, CLIENT, SERVER, from_client=False), 1718900000999999999)
V6 = Origin("cap.pcap", StreamId(12, Endpoint("::1", 40000), Endpoint("::1", 9000), from_client=True), 5)


def _decode(data: bytes, registry: SchemaRegistry | None, mode: DeltaMode = DeltaMode.DECODE) -> list[Message]:
    d = StreamDecoder(registry, mode)
    return [e for e in d.feed(data) + d.finish() if isinstance(e, Message)]


@cache
def demo() -> dict[int, Message]:
    """The 300 messages of the demo stream, by seq, every Delta decoded."""
    registry = load_registry([str(EXAMPLES / "schemas"), str(EXAMPLES / "more-schemas")])
    msgs = _decode((EXAMPLES / "demo.ripple").read_bytes(), registry)
    assert len(msgs) == 300
    assert all(isinstance(m.body, DeltaView) for m in msgs if m.frame.tag == DELTA)
    return {m.frame.seq: m for m in msgs}


@cache
def demo_raw() -> dict[int, Message]:
    """The same stream with no schema applied: every Delta a DeltaMsg."""
    msgs = _decode((EXAMPLES / "demo.ripple").read_bytes(), None, DeltaMode.RAW)
    return {m.frame.seq: m for m in msgs}


def seqs(text: str, origin: Origin = FILE, messages: dict[int, Message] | None = None) -> list[int]:
    flt = compile_filter(text)
    return [seq for seq, m in (messages or demo()).items() if flt(origin, m)]


def ok(text: str, msg: Message, origin: Origin = FILE) -> bool:
    return compile_filter(text)(origin, msg)


# ------------------------------------------------------------- hand-built messages

LITS = Schema(
    b"lits",
    1,
    STRING,
    (
        Field(b"i", INT),
        Field(b"f", FLOAT),
        Field(b"s", STRING),
        Field(b"b", BOOL),
        Field(b"o", OptionOf(OptionOf(INT))),
        Field(b"l", ListOf(STRING)),
        Field(b"n", RecordOf((Field(b"x", FLOAT), Field(b"y", OptionOf(RecordOf((Field(b"z", INT),))))))),
        Field(b"e", EnumOf((b"Red", b"Green"))),
        Field(b"fl", ListOf(OptionOf(FLOAT))),
        Field(b"t", INT64),
    ),
)
FLOAT_KEY = Schema(b"fkey", 1, FLOAT, (Field(b"v", INT),))
OPTION_KEY = Schema(b"okey", 1, OptionOf(INT), (Field(b"v", INT),))
BOOL_KEY = Schema(b"bkey", 1, BOOL, (Field(b"v", INT),))

ROW1 = {
    "i": -1000,
    "f": math.nan,
    "s": b'a "q" \\ \n\tA\xff',
    "b": True,
    "o": ((7,),),
    "l": [b"x", b"hedge"],
    "n": {"x": 1.5, "y": ({"z": 0},)},
    "e": "Green",
    "fl": [None, (0.35,)],
    "t": 255,
}
ROW2 = {
    "i": 255,
    "f": 1500.0,
    "s": b"123",
    "b": False,
    "o": (None,),
    "l": [],
    "n": {"x": -0.0, "y": None},
    "e": "Red",
    "fl": [],
    "t": -16,
}


def _delta_envelope(schema: Schema, seq: int, key: bytes, delta: bytes, output: bytes) -> bytes:
    body = DeltaMsg(output, key, delta, seq, None)
    return build_envelope(DELTA, seq, 1_000 + seq, schema.fingerprint, write_payload(body))


@cache
def hand() -> dict[str, Message]:
    registry = SchemaRegistry()
    lits = registry.add(LITS)
    fkey, okey, bkey = registry.add(FLOAT_KEY), registry.add(OPTION_KEY), registry.add(BOOL_KEY)
    from ripple_cli.codec.delta import REMOVE, Patch, SetRow

    data = b"".join(
        (
            _delta_envelope(LITS, 1, lits.write_key(b"two words"), lits.write_delta(SetRow(ROW1)), b"lits"),
            _delta_envelope(LITS, 2, lits.write_key(b"123"), lits.write_delta(SetRow(ROW2)), b"lits"),
            _delta_envelope(
                LITS, 3, lits.write_key(b"\xffk"), lits.write_delta(Patch(((1, math.inf), (0, 0)))), b"o\xff"
            ),
            _delta_envelope(FLOAT_KEY, 4, fkey.write_key(2.5), fkey.write_delta(REMOVE), b"f"),
            _delta_envelope(OPTION_KEY, 5, okey.write_key(None), okey.write_delta(REMOVE), b"o"),
            _delta_envelope(OPTION_KEY, 6, okey.write_key((0,)), okey.write_delta(REMOVE), b"o"),
            _delta_envelope(BOOL_KEY, 7, bkey.write_key(True), bkey.write_delta(REMOVE), b"b"),
            _envelope(SchemaNegotiation(False, (b"missing field price", b"bad \xff byte")), 8),
            _envelope(UnknownPayload(9, b"\x01\x02"), 9, flags=0x81),
            _delta_envelope(LITS, 10, lits.write_key(b"k"), b"\x07junk", b"lits"),
        )
    )
    msgs = _decode(data, registry)
    names = ["set1", "set2", "patch", "fkey", "okey_none", "okey_zero", "bkey", "refused", "unknown", "junk"]
    assert isinstance(msgs[-1].body, DeltaMsg)  # a bad_delta problem, then shown raw
    return dict(zip(names, msgs, strict=True))


def _envelope(body: Body, seq: int, flags: int = 0) -> bytes:
    tag = tag_of(body)
    fp = {5: b"ripple.schema_negotiation/v1"}.get(tag, b"")
    return build_envelope(tag, seq, 1_000 + seq, fp, write_payload(body), flags=flags)


# ------------------------------------------------------------- the API


def test_api() -> None:
    flt = compile_filter('type == Delta and output == "vwap" and key == "AAPL" and sequence_no > 100')
    assert isinstance(flt, DisplayFilter)
    assert flt.fields == frozenset({"type", "output", "key", "sequence_no"})
    assert flt.needs_decoded_deltas
    assert repr(flt) == f"DisplayFilter({flt.text!r})"
    assert not compile_filter("type == Heartbeat or seq > 3").needs_decoded_deltas
    assert compile_filter("field.stats.high > 1 and not field.price").fields == {"field.stats.high", "field.price"}
    assert compile_filter("not field.x").needs_decoded_deltas
    assert "field.NAME" in FIELD_NAMES and "capture_time_ns" in FIELD_NAMES

    with pytest.raises(FilterError) as info:
        compile_filter("seq ==")
    e = info.value
    assert isinstance(e, UsageProblem)  # exit status 2 if it ever escapes
    assert (e.column, e.reason, str(e)) == (7, "expected a value after '=='", "column 7: expected a value after '=='")
    assert e.message == str(e)


def test_the_example_of_the_brief() -> None:
    text = 'type == Delta and output == "vwap" and key == "AAPL" and sequence_no > 10'
    expected = [
        seq
        for seq, m in demo().items()
        if isinstance(m.body, DeltaView)
        and m.body.source_output == b"vwap"
        and m.body.key == b"AAPL"
        and m.body.sequence_no > 10
    ]
    assert expected and seqs(text) == expected == [69, 70, 165, 254, 269, 270, 277]


# ------------------------------------------------------------- parsing and precedence

# On a Heartbeat: `load` is true (0.81), `output` is absent, so false.
T, F = "load", "output"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"{T}", True),
        (f"{F}", False),
        (f"{T} or {F} and {F}", True),  # and binds tighter than or
        (f"({T} or {F}) and {F}", False),
        (f"{F} and {F} or {T}", True),
        (f"{F} and ({F} or {T})", False),
        (f"not {T} and {F}", False),  # not binds tighter than and
        (f"not ({T} and {F})", True),
        (f"not {T} or {T}", True),
        (f"not ({T} or {T})", False),
        (f"not not {T}", True),
        (f"!{T}", False),
        (f"!!{T}", True),
        (f"!({F})", True),
        (f"{T} && {F} || {T}", True),
        (f"{T} && ({F} || {F})", False),
        (f"{T}&&{T}", True),
        (f"{T}||{F}", True),
        (f"(((({T}))))", True),
        (f"{F} or {F} or {F} or {T}", True),
        (f"{T} and {T} and {T} and {F}", False),
        (f"{T} and {T} and {T} and {T}", True),
        ("not seq == 73", False),  # a comparison binds tighter than not
        ("!seq==73", False),
        ("not seq == 1", True),
        ("seq == 73 and not load < 0.5", True),
        ("  \t seq\n==\t73  ", True),
    ],
)
def test_precedence(text: str, expected: bool) -> None:
    assert ok(text, demo()[73]) is expected


def test_precedence_agrees_with_python_on_random_expressions() -> None:
    """Python's not/and/or have the same precedence: compare on 400 random trees."""
    rng = random.Random(7)

    def gen(depth: int) -> tuple[str, str]:
        r = rng.random()
        if depth == 0 or r < 0.3:
            v = rng.random() < 0.5
            return (T if v else F), str(v)
        if r < 0.45:
            f, p = gen(depth - 1)
            return f"{rng.choice(['not ', '!'])}{f}", f"not {p}"
        if r < 0.55:
            f, p = gen(depth - 1)
            return f"({f})", f"({p})"
        a, pa = gen(depth - 1)
        b, pb = gen(depth - 1)
        word = rng.choice(["and", "or"])
        sym = {"and": "&&", "or": "||"}[word] if rng.random() < 0.3 else word
        return f"{a} {sym} {b}", f"{pa} {word} {pb}"

    heartbeat = demo()[73]
    for _ in range(400):
        f, p = gen(5)
        assert ok(f, heartbeat) is eval(p), f


# ------------------------------------------------------------- operators


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("seq == 4", True),
        ("seq == 5", False),
        ("seq != 4", False),
        ("seq != 5", True),
        ("seq < 5", True),
        ("seq < 4", False),
        ("seq <= 4", True),
        ("seq <= 3", False),
        ("seq > 3", True),
        ("seq > 4", False),
        ("seq >= 4", True),
        ("seq >= 5", False),
        ("seq == 4.0", True),
        ("seq < 4.5", True),
        ("output == vwap", True),
        ("output != vwap", False),
        ("output != trades", True),
        ("output < vwaq", True),  # text compares by code point
        ("output > vwa", True),
        ("output >= vwap", True),
        ("output <= vwa", False),
        ("output contains wa", True),
        ('output contains "w a"', False),
        ('output matches "^vw"', True),
        ('output ~ "ap$"', True),
        ('output ~ "(?i)^VWAP$"', True),
        ('output ~ "^VWAP$"', False),  # case-sensitive unless (?i)
        ("output matches wa", True),  # search, not match
        ("output in {trades, vwap}", True),
        ("output in {trades book}", False),
        ('output in {"vwap"}', True),
        ("output not in {trades, book}", True),
        ("output not in {vwap}", False),
        ("seq in {1, 4, 9}", True),
        ("seq in {1, 0x4}", True),
        ("seq in {1, 2}", False),
        ("seq not in {1, 2}", True),
        ("seq in {4.0}", True),
        ("field.price == 355.62", True),
        ("field.price > 355", True),
        ("field.price in {1, 355.62}", True),
        ("field.price contains 355", False),  # contains is for text and lists
        ("field.price matches 355", False),
    ],
)
def test_operators(text: str, expected: bool) -> None:
    assert ok(text, demo()[4]) is expected  # the vwap Patch price=355.62, key BRK.B


def test_contains_on_lists_is_membership() -> None:
    m = demo()[10]  # positions Set: tags (hedge core), flags (false true true), matrix ((29 94 15 95)(67))
    assert ok("field.tags contains hedge", m)
    assert ok('field.tags contains "core"', m)
    assert not ok("field.tags contains hed", m)  # an element, not a substring of one
    assert ok("field.flags contains true", m)
    assert not ok("field.limits contains 42", m)
    assert ok("field.limits contains 5000000", m)  # Option (List Int32): the option unwrapped
    assert not ok("field.matrix contains 29", m)  # elements are lists
    assert ok('field.tags matches "^co"', m)  # matches: any element
    assert not ok('field.tags matches "^x"', m)
    set1 = hand()["set1"]
    assert ok("field.fl contains 0.35", set1)  # elements are options: Some 0.35 compares as 0.35
    assert not ok("field.fl contains 0.36", set1)
    assert ok("field.l contains hedge and field.l contains x", set1)


def test_regular_expressions() -> None:
    m = demo()[5]  # book Set, key ((symbol V)(venue BATS))
    assert ok(r'key matches r"^\(\(symbol V\)\(venue BATS\)\)$"', m)
    assert ok(r'key ~ "^\\(\\(symbol V\\)"', m)
    assert ok(r'key ~ "BATS"', m)
    assert ok('schema matches "^book/v[0-9]+$"', m)
    assert ok('field.status ~ "^Op"', m)  # an enum constructor is text
    assert not ok("field.crossed ~ false", m)  # a bool is not text
    patch = hand()["patch"]
    assert ok(r'output ~ "^o\xff$"', patch)  # \xHH: a byte, matched as surrogateescape text


def test_bare_fields() -> None:
    d = demo()
    assert ok("watermark_ns", d[4]) and not ok("watermark_ns", d[9])  # (watermark_ns()) is None
    assert ok("field.crossed", d[5]) is False  # false
    assert ok("field.is_block", d[3])  # true
    assert ok("field.deep", d[10])  # Some (Some (Some 3))
    assert not ok("field.deep", d[11])  # Some None: absent
    assert not ok("field.deep", d[9])  # None
    assert ok("field.tags", d[10]) and ok("field.bid", d[5]) and ok("field.stats.last", d[5])
    assert not ok("field.note", d[10])
    assert ok("ok", d[2]) and not ok("errors", d[2]) and ok("errors", hand()["refused"])
    assert not ok("flags", d[2]) and ok("flags", hand()["unknown"])
    assert ok("type and seq and time_ns and schema and offset and size", d[4])
    assert not ok("offset", d[1])  # offset 0 is zero
    h = hand()
    assert not ok("field.i", h["patch"])  # i updated to 0
    assert not ok("field.l", h["set2"])  # the empty list
    assert not ok("field.n.x", h["set2"])  # -0.0 is zero
    assert ok("field.n.y", h["set1"]) and not ok("field.n.y", h["set2"])
    assert ok("field.f", h["set1"])  # nan is not zero
    assert ok("key", h["fkey"]) and not ok("key", h["okey_none"]) and not ok("key", h["okey_zero"])


# ------------------------------------------------------------- literals


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("field.i == -1000", True),
        ("field.i == -1_000", True),
        ("field.i == -0x3e8", True),
        ("field.i == -0X3E8", True),
        ("field.i < -999", True),
        ("field.i == -1e3", True),
        ("field.i == -1000.0", True),
        ("field.t == 0xff", True),
        ("field.t == 0x_f_f", True),
        ("field.t == 255", True),
        ("field.t == 0255", True),  # leading zeros are decimal
        ("field.t == +255", True),
        ("field.t == 2.55e2", True),
        ("field.t == 255.", True),
        ("field.f == nan", True),  # nan finds NaN
        ("field.f != nan", False),
        ("field.f == NaN", True),
        ("field.f > 0", False),  # NaN is not ordered
        ("field.f < 0", False),
        ("field.f >= nan", False),
        ("field.f == 1", False),
        ("field.f != 1", True),
        ("field.f in {1, nan}", True),
        ("field.n.x == 1.5", True),
        ("field.n.x == .15e1", True),
        ("field.n.x == 1_0.5", False),
        ("field.b == true", True),
        ("field.b != false", True),
        ("field.b == 1", False),  # a bool is not a number
        ('field.b == "true"', False),
        ('field.s == "a \\"q\\" \\\\ \\n\\tA\\xff"', True),
        ('field.s == "a \\"q\\" \\\\ \\n\\tA\\xFF"', True),
        ('field.s contains "\\"q\\""', True),
        ('field.s contains "\\x41\\xff"', True),
        ('field.s contains "\\t"', True),
        ('field.s contains r"\\ "', True),  # raw: no escapes
        ('field.s contains "\\xc3"', False),
        ("field.e == Green", True),
        ('field.e == "Green"', True),
        ("field.e in {Red, Green}", True),
        ("field.e == green", False),
        ("field.o == 7", True),  # Some (Some 7) compares as 7
        ("field.n.y.z == 0", True),
        ("field.n.y.z.w == 0", False),
        ("field.n.q == 0", False),
        ("field.l.x == 0", False),
    ],
)
def test_literals(text: str, expected: bool) -> None:
    assert ok(text, hand()["set1"]) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("field.f == 1500", True),
        ("field.f == 1.5e3", True),
        ("field.f == 1.5E+3", True),
        ("field.f == 15e2", True),
        ("field.f > inf", False),
        ("field.f < inf", True),
        ("field.f > -inf", True),
        ("field.f > -Infinity", True),
        ("field.s == 123", True),  # a number compares with text as written
        ("field.s == 0123", False),
        ('field.s == "123"', True),
        ("field.s > 122", True),
        ("field.s contains 2", True),
        ('field.s matches "^1"', True),
        ("field.i == 255", True),
        ('field.i == "255"', False),  # a string never equals a number
        ('field.i != "255"', False),  # nor differs from it: kinds do not compare
        ("field.i contains 5", False),
        ("field.b == false", True),
        ("field.b", False),
        ("field.o", False),  # Some None is absent
        ("field.o == 0", False),
        ("field.o != 0", False),
        ("field.n.y", False),
        ("field.e == Red", True),
        ("field.l contains x", False),
    ],
)
def test_literals_on_another_row(text: str, expected: bool) -> None:
    assert ok(text, hand()["set2"]) is expected


def test_patch_values() -> None:
    patch = hand()["patch"]  # Patch ((F inf) (I 0)), output "o\xff", key "\xffk"
    assert ok("field.f == inf", patch)
    assert ok("field.f > 1e308", patch)
    assert ok("field.i == 0", patch)
    assert not ok("field.s", patch) and not ok("field.s == x", patch) and not ok("field.s != x", patch)
    assert ok('output == "o\\xff"', patch)
    assert ok('output contains "\\xff"', patch)
    assert not ok('output == "o\\xfe"', patch)
    assert ok('key == "\\"\\\\255k\\""', patch)  # key_text: sexplib's escaped atom


def test_non_ascii_text_compares_as_utf8() -> None:
    registry = SchemaRegistry()
    s = registry.add(LITS)
    from ripple_cli.codec.delta import Patch

    env = _delta_envelope(LITS, 1, s.write_key("é".encode()), s.write_delta(Patch(((2, "café €".encode()),))), b"out")
    (m,) = _decode(env, registry)
    assert ok('field.s == "café €"', m)
    assert ok('field.s == "caf\\xc3\\xa9 \\xe2\\x82\\xac"', m)  # the same bytes, escaped
    assert ok('field.s contains "é"', m) and ok('field.s ~ "^caf. "', m)  # a regex sees characters
    assert ok('field.s > "cafe"', m)
    assert ok("field.s contains café", m)  # letters beyond ASCII may be bare too
    assert ok(r'key == "\"\\195\\169\""', m)  # key_text: sexplib escapes non-ASCII bytes
    assert not ok('key == "é"', m)


# ------------------------------------------------------------- every field, on the demo stream


def test_type() -> None:
    assert seqs("type == Heartbeat") == [73, 141, 214, 286]
    assert seqs("type == Handshake") == [1]
    assert seqs("type == Schema_negotiation") == [2]
    assert seqs("type == Checkpoint_request") == [150]
    assert seqs("type == Checkpoint_ack") == [153]
    assert len(seqs("type == Delta")) == 292
    assert len(seqs("type != Delta")) == 8
    assert seqs("type in {Handshake, Checkpoint_request}") == [1, 150]
    assert seqs("type == Unknown") == []
    assert seqs('type ~ "^Check"') == [150, 153]
    h = hand()
    assert ok("type == Unknown", h["unknown"]) and ok('type == "Unknown"', h["unknown"])
    assert ok("type == Schema_negotiation", h["refused"])


def test_envelope_fields() -> None:
    d = demo()
    m = d[4]  # README's table: offset 931, the next at 1029
    assert ok("seq == 4 and time_ns == 1718900000260095115 and offset == 931 and size == 98", m)
    assert ok('schema == vwap/v2 and schema == "vwap/v2"', m)
    assert ok("flags == 0 and not flags", m)
    assert seqs("offset == 0") == [1] and seqs("offset == 699") == [2] and seqs("size == 699") == [1]
    assert seqs("size == 65") == [2]
    assert seqs("time_ns < 1718900000131832574") == [1, 2]
    assert seqs("schema == ripple.heartbeat/v1") == [73, 141, 214, 286]
    assert seqs("schema contains checkpoint") == [150, 153]
    assert len(seqs('schema matches "^positions_by_account_and_desk/v1$"')) == 34
    assert ok("flags == 0x81 and flags > 128 and flags in {129}", hand()["unknown"])
    assert sum(m.frame.size for m in d.values()) == 37372  # every byte of the stream
    assert seqs("seq >= 299") == [299, 300]


def test_delta_fields() -> None:
    d = demo()
    assert ok("output == trades and key == 7075368050 and sequence_no == 1", d[3])
    assert ok("watermark_ns == 1718900000127832574 and delta == set", d[3])
    assert ok("output == orders and key == ORD-34694489 and delta == patch", d[6])  # needs more-schemas
    assert seqs("delta == remove and output == book") == [21, 24, 103, 118, 130, 160, 166, 200]
    for name in ("vwap", "trades", "book", "positions", "orders"):
        sel = Selection(outputs=[name])
        assert seqs(f"output == {name}") == [s for s, m in d.items() if sel(m)]
    assert len(seqs("output == vwap")) == 90
    assert len(seqs("watermark_ns")) == 292 - 56  # 56 Deltas have (watermark_ns())
    assert seqs("sequence_no == 1 and output == vwap") == [4]
    assert seqs("not watermark_ns and watermark_ns < 5") == []
    counts = {k: len(seqs(f"delta == {k}")) for k in ("set", "patch", "remove")}
    assert sum(counts.values()) == 292 and all(counts.values())
    assert len(seqs("delta in {set, remove}")) == counts["set"] + counts["remove"]


def test_key_is_the_text_ripple_prints() -> None:
    d = demo()
    assert ok("key == BRK.B", d[4]) and ok('key == "BRK.B"', d[4])
    assert ok('key == "((symbol V)(venue BATS))"', d[5])
    assert ok('key contains "(venue BATS)"', d[5]) and ok('key ~ "^..symbol"', d[5])
    assert ok("key == 7075368050", d[3]) and ok('key == "7075368050"', d[3])  # a number, or its text
    assert ok("key > 7075368049 and key < 7.1e9 and key in {1, 7075368050}", d[3])
    assert ok("key in {7075368050}", d[3]) and ok('key in {"7075368050"}', d[3])
    assert not ok("key == 7075368051", d[3]) and ok("key != 7075368051", d[3])
    assert ok("key == 0x1a5b98c72", d[3])  # 7075368050 in hex
    # Every key of the stream, compared as its text, selects as --key does.
    keys = {key_text(m.body) for m in d.values() if m.frame.tag == DELTA}
    for k in sorted(keys)[:: max(1, len(keys) // 40)]:
        literal = '"' + k.replace("\\", "\\\\").replace('"', '\\"') + '"'
        sel = Selection(keys=[k])
        assert seqs(f"key == {literal}") == [s for s, m in d.items() if sel(m)], k
    h = hand()
    assert ok('key == 2.5 and key > 2 and key == "2.5"', h["fkey"])
    assert ok("key == 0", h["okey_zero"]) and ok('key == "(0)"', h["okey_zero"])  # Some 0
    assert ok('key == "()"', h["okey_none"]) and not ok("key == 0", h["okey_none"])
    assert ok("key == true", h["bkey"])  # a Bool key prints as true
    assert ok('key == "\\"two words\\""', h["set1"])  # printed with its quotes, as --key takes it
    assert not ok('key == "two words"', h["set1"]) and ok('key contains "two w"', h["set1"])
    assert ok("key == 123", h["set2"]) and not ok("key > 200", h["set2"])  # a String key "123": text


def test_raw_deltas() -> None:
    """Without schemas: no row, the key as 0x hex (as --key), the kind from the wire tag."""
    r = demo_raw()
    assert isinstance(r[4].body, DeltaMsg)
    assert ok("output == vwap and key == 0x0542524b2e42 and delta == patch", r[4])
    assert ok("key contains 0x0542", r[4])
    assert not ok("key == BRK.B", r[4])
    assert not ok("field.price", r[4]) and not ok("field.price != 1", r[4])
    assert ok("delta == set", r[3]) and ok("delta == remove", r[21])
    assert ok("sequence_no == 1 and watermark_ns == 1718900000255095115", r[4])
    assert seqs("delta == remove", messages=r) == seqs("delta == remove")
    assert not ok("delta", hand()["junk"])  # a tag that is none of the three
    assert ok("type == Delta and output == lits", hand()["junk"])


def test_control_message_fields() -> None:
    d = demo()
    assert seqs("worker == md-worker-07") == [1, 73, 141, 153, 214, 286]  # Handshake, Heartbeats, Ack
    assert seqs('worker contains "worker"') == [1, 73, 141, 153, 214, 286]
    assert seqs("load > 0.6") == [73]
    assert seqs("load == 0.3") == [214]
    assert seqs("load <= 0.57 and load >= 0.5") == [141, 286]
    assert seqs("checkpoint_id == 1") == [150, 153]
    assert seqs("checkpoint_id") == [150, 153]
    assert seqs("ok") == [2] and seqs("ok == true") == [2] and seqs("ok == false") == []
    assert ok("not errors", d[2])
    refused = hand()["refused"]
    assert ok("ok == false and not ok and ok != true", refused)
    assert ok('errors contains "missing field price"', refused)
    assert not ok('errors contains "missing"', refused)  # an element, whole
    assert ok('errors matches "^missing"', refused)
    assert ok('errors contains "bad \\xff byte"', refused)
    assert ok('errors ~ "bad.*byte"', refused)


def test_connection_fields() -> None:
    m = demo()[4]
    assert ok("connection == 3 and direction == c2s", m, C2S)
    assert ok("src == 10.0.0.1:50412 and dst == 10.0.0.2:9000", m, C2S)
    assert ok('src == "10.0.0.2:9000" and dst == "10.0.0.1:50412" and direction == s2c', m, S2C)
    assert ok("src contains :9000 and direction != c2s", m, S2C)
    assert ok("capture_time_ns == 1718900000123456789", m, C2S)
    assert ok("capture_time_ns > 1718900000123456789", m, S2C)
    assert ok('src == "[::1]:40000" and dst ~ "]:9000$" and connection == 12', m, V6)
    assert ok("connection in {1, 12}", m, V6)
    for text in ("connection", "direction", "src", "dst", "capture_time_ns", "community_id"):
        assert ok(text, m, C2S)
        assert not ok(text, m, FILE)  # a raw stream file has none of them
    assert not ok("connection != 3 or direction != c2s or src != x or capture_time_ns != 0", m, FILE)
    assert ok("capture_time_ns == 5", m, Origin("x", None, 5))  # a capture time without a stream


# ------------------------------------------------------------- absent fields


@pytest.mark.parametrize(
    "test",
    [
        "output == vwap",
        "output != vwap",
        "output < vwap",
        "output > vwap",
        "output contains v",
        'output matches "."',
        'output ~ ""',
        "output in {vwap, x}",
        "output not in {vwap, x}",
        "output",
        "key == 1",
        "key != 1",
        'key != "x"',
        "key contains x",
        "key in {1, x}",
        "key",
        "sequence_no != 0",
        "delta != set",
        "field.price != 1",
        "field.price == nan",
        "field.price != nan",
        "field.price",
        "ok != true",
        "errors contains x",
        "checkpoint_id != 0",
        "connection != 1",
        "direction != c2s",
    ],
)
def test_absent_fields_are_false_whatever_the_operator(test: str) -> None:
    heartbeat = demo()[73]
    assert not ok(test, heartbeat)
    assert ok(f"not {test}", heartbeat)
    assert ok(f"!({test})", heartbeat)


def test_not_ok_matches_messages_without_ok() -> None:
    assert len(seqs("not ok")) == 299  # like tshark: every message but the one with ok true
    assert seqs("type == Schema_negotiation and not ok") == []
    assert seqs("ok != true") == []


def test_options_are_their_value() -> None:
    d = demo()
    assert ok("field.venue == IEXG", d[3])  # trades: (venue((IEXG))): Some (Some IEXG)
    assert ok("field.bid.px == 252.88 and field.ask.size == 100", d[5])  # Option (Record)
    assert ok("field.stats.vwap == 254.22 and field.stats.last.px == 251.06", d[5])
    assert ok("field.stats.last.at_ns == 1718900000285563703", d[5])
    assert ok("field.deep == 3", d[10]) and not ok("field.deep != 3", d[11])
    assert not ok("field.levels.px == 249.53", d[5])  # through a list: absent
    assert ok("field.parties", d[3]) and not ok("field.parties.name == UBSS", d[3])


def test_fields_of_patch_and_remove() -> None:
    d = demo()
    assert ok("field.tif == Ioc and not field.symbol and not field.px", d[6])  # orders Patch tif=Ioc
    assert ok("field.levels", d[7]) and not ok("field.bid", d[7])
    assert not ok("field.bid or field.status or field.crossed == false", d[21])  # Remove: no fields
    patches = seqs("output == vwap and delta == patch")
    with_price = seqs("output == vwap and delta == patch and field.price")
    assert set(with_price) < set(patches)
    for s in patches:
        body = d[s].body
        assert isinstance(body, DeltaView)
        assert (s in with_price) == ("price" in body.schema.field_values(body.delta))


def test_every_field_is_exercised() -> None:
    names = [
        *("type", "seq", "time_ns", "schema", "flags", "offset", "size"),
        *("output", "key", "sequence_no", "watermark_ns", "delta"),
        *("worker", "load", "checkpoint_id", "ok", "errors"),
        *("connection", "direction", "src", "dst", "capture_time_ns", "community_id", "protocol"),
    ]
    assert [*names, "field.NAME"] == list(FIELD_NAMES)
    flt = compile_filter(" or ".join([*names, "field.x.y"]))
    assert flt.fields == {*names, "field.x.y"}
    assert all(flt(FILE, m) for m in demo().values())  # each message has a true field


# ------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("text", "column", "message"),
    [
        ("", 1, "empty filter"),
        ("   ", 1, "empty filter"),
        ("seq ==", 7, "expected a value after '=='"),
        ("seq == and seq", 8, "expected a value after '==', found 'and'"),
        ("seq == )", 8, "expected a value after '==', found ')'"),
        ("output contains", 16, "expected a value after 'contains'"),
        ("type == Delta and output ==", 28, "expected a value after '=='"),
        ("type == Delta and", 18, "expected a field name after 'and'"),
        ("type == Delta and or x", 19, "expected a field name after 'and', found 'or'"),
        ("or seq", 1, "expected a field name, found 'or'"),
        ("== 3", 1, "expected a field name, found '=='"),
        ("100 < seq", 1, "expected a field name, found '100'"),
        ('"seq" == 1', 1, "expected a field name, found '\"seq\"'"),
        ("true", 1, "expected a field name, found 'true'"),
        ("not", 4, "expected a field name after 'not'"),
        ("seq == 1 foo", 10, "expected 'and' or 'or' before 'foo'"),
        ("key == two words", 12, "expected 'and' or 'or' before 'words'"),
        ('key ~ "^\\(x"', 9, "unknown escape '\\(' (use '\\\\' for a backslash, or r\"...\")"),
        ("seq == 1 (", 10, "expected 'and' or 'or' before '('"),
        ("seq == 1)", 9, "unexpected ')' with no '(' to close"),
        ("(seq == 1", 10, "expected ')' to close the '(' at column 1"),
        ("x and (seq == 1 seq", 1, "unknown field 'x'"),
        ("seq and (seq == 1 seq", 19, "expected ')' to close the '(' at column 9, found 'seq'"),
        ("()", 2, "expected a field name after '(', found ')'"),
        ("seq 5", 5, "expected an operator after 'seq', found '5'"),
        ('seq "5"', 5, "expected an operator after 'seq', found '\"5\"'"),
        ("seq not 5", 5, "expected an operator after 'seq', found 'not'"),
        ("seq = 5", 5, "'=' is not an operator (did you mean '=='?)"),
        ("seq & seq", 5, "'&' is not an operator (did you mean '&&'?)"),
        ("seq | seq", 5, "'|' is not an operator (did you mean '||'?)"),
        ("seq == 1 $", 10, "unexpected character '$'"),
        ("seq == 1 \x00", 10, "unexpected character U+0000"),
        ("output == a€", 12, "unexpected character '€'"),
        ("café == 1", 1, "unknown field 'café'"),
        ("seq == 'x'", 8, "unexpected character '''"),
        ("outptu == vwap", 1, "unknown field 'outptu' (did you mean 'output'?)"),
        ("seq > 1 and tipe == Delta", 13, "unknown field 'tipe' (did you mean 'type'?)"),
        ("source_output == vwap", 1, "unknown field 'source_output' (did you mean 'output'?)"),
        ("worker_id == w", 1, "unknown field 'worker_id' (did you mean 'worker'?)"),
        ("fields.price > 1", 1, "unknown field 'fields.price' (did you mean 'field.price'?)"),
        ("zzz", 1, "unknown field 'zzz'"),
        ("field", 1, "bad field name 'field': a row field is field.NAME or field.NAME.SUB"),
        ("field. == 1", 1, "bad field name 'field.': a row field is field.NAME or field.NAME.SUB"),
        ("field.a..b", 1, "bad field name 'field.a..b': a row field is field.NAME or field.NAME.SUB"),
        ("field.1a", 1, "bad field name 'field.1a': a row field is field.NAME or field.NAME.SUB"),
        ("field.'a", 1, "bad field name 'field.'a': a row field is field.NAME or field.NAME.SUB"),
        ("seq in 1", 8, "expected '{' after 'in', found '1'"),
        ("seq in {}", 9, "expected a value after '{', found '}'"),
        ("seq in {1,}", 11, "expected a value after ',', found '}'"),
        ("seq in {1, 2", 13, "expected ',' or '}' after '2'"),
        ("seq in {1 == 2}", 11, "expected ',' or '}' after '1', found '=='"),
        ('output == "abc', 11, "unterminated string"),
        ('output == "abc\\', 11, "unterminated string"),
        ('output == "a\\qb"', 13, "unknown escape '\\q' (use '\\\\' for a backslash, or r\"...\")"),
        ('output == "a\\x4"', 13, "bad escape '\\x': it takes two hex digits, as in \\x0a"),
        ('output == "a\\xg0"', 13, "bad escape '\\x': it takes two hex digits, as in \\x0a"),
        ('output == r"abc', 11, "unterminated string"),  # where the string begins: its r
        ("output ~ (", 10, "expected a value after '~', found '('"),
        ('output ~ "("', 10, "bad regular expression: missing ), unterminated subpattern at position 0"),
        ('key matches "[a-"', 13, "bad regular expression: unterminated character set at position 0"),
        # re raises OverflowError and RecursionError for these, not re.error
        ('key ~ "a{99999999999999999999}"', 7, "bad regular expression: the repetition number is too large"),
        ('key ~ "' + "(" * 1000 + '"', 7, "bad regular expression: groups nested too deep"),
        ("seq < " + "9" * 5000, 7, "a number of more than 4300 digits"),  # int() refuses to convert it
        ('key == a"x\ny"', 9, "expected 'and' or 'or' before '\"x\\ny\"'"),  # a message is one line
        ("seq == abc", 8, "expected a number for seq, found 'abc'"),
        ('seq == "5"', 8, "expected a number for seq, found '\"5\"'"),
        ("seq in {1, x}", 12, "expected a number for seq, found 'x'"),
        ("seq == true", 8, "expected a number for seq, found 'true'"),
        ("load > 0.5.1", 8, "expected a number for load, found '0.5.1'"),
        ("seq == 1__0", 8, "expected a number for seq, found '1__0'"),
        ("seq == 0x", 8, "expected a number for seq, found '0x'"),
        ("seq == --1", 8, "expected a number for seq, found '--1'"),
        ("seq contains 1", 5, "'contains' does not apply to seq (a number)"),
        ("seq matches 1", 5, "'matches' does not apply to seq (a number)"),
        ("load ~ 1", 6, "'~' does not apply to load (a number)"),
        ("ok == 1", 7, "expected true or false for ok, found '1'"),
        ("ok == True", 7, "expected true or false for ok, found 'True'"),
        ("ok < true", 4, "'<' does not apply to ok (true or false)"),
        ("ok contains true", 4, "'contains' does not apply to ok (true or false)"),
        ("errors == x", 8, "'==' does not apply to errors (a list): use 'contains' or 'matches'"),
        ("errors in {x}", 8, "'in' does not apply to errors (a list): use 'contains' or 'matches'"),
        ("errors > x", 8, "'>' does not apply to errors (a list)"),
        ("type == Delat", 9, "unknown message type 'Delat' (did you mean 'Delta'?)"),
        ("type == delta", 9, "unknown message type 'delta' (did you mean 'Delta'?)"),
        ("type != heartbeat", 9, "unknown message type 'heartbeat' (did you mean 'Heartbeat'?)"),
        (
            "type in {Delta, Foo}",
            17,
            "unknown message type 'Foo' (no protocol has such a type)",
        ),
        ("delta == Set", 10, "unknown delta kind 'Set' (did you mean 'set'?)"),
        ("delta == Patches", 10, "unknown delta kind 'Patches' (did you mean 'patch'?)"),
        ("delta in {set, x}", 16, "unknown delta kind 'x' (set, patch, remove)"),
        ("direction == C2S", 14, "unknown direction 'C2S' (did you mean 'c2s'?)"),
        ("direction == in", 14, "expected a value after '==', found 'in'"),
    ],
)
def test_errors(text: str, column: int, message: str) -> None:
    with pytest.raises(FilterError) as info:
        compile_filter(text)
    assert (info.value.column, info.value.reason) == (column, message)
    assert str(info.value) == f"column {column}: {message}"


def test_what_is_not_an_error() -> None:
    for text in (
        "type contains Del",  # only ==, != and in check the names
        "type > A",
        'delta ~ "^s"',
        "field.anything.at.all == 1",  # row fields are known only per message
        'field.x == "x" and field.y > 2 and field.z contains 1 and field.w ~ a',
        "output == 123 and worker == true and schema == 1.5",  # a word compares as written
        "src == 10.0.0.1:50412 and src == 10.0.0.1",
    ):
        compile_filter(text)
    assert ok('output == "and"', demo()[73]) is False  # a quoted keyword is a string


def test_a_word_is_a_value_as_written() -> None:
    m = demo()[1]  # Handshake of md-worker-07
    assert ok("worker == md-worker-07", m)
    assert ok("schema == ripple.handshake/v1", m)
    assert not ok("worker == md-worker-7", m)


def test_compiled_once_and_reused() -> None:
    flt = compile_filter("output == vwap and field.price > 300")
    d = demo()
    first = [s for s, m in d.items() if flt(FILE, m)]
    second = [s for s, m in d.items() if flt(FILE, m)]
    assert first == second and first
    expected = [
        s
        for s, m in d.items()
        if isinstance(m.body, DeltaView)
        and m.body.source_output == b"vwap"
        and (p := m.body.schema.field_values(m.body.delta).get("price")) is not None
        and p > 300
    ]
    assert first == expected


# ------------------------------------------------------------- robustness

_PIECES = [
    *("type", "seq", "output", "key", "load", "ok", "errors", "delta", "src", "field.price", "field.n.y.z"),
    *("field.tags", "field.f", "field.s", "field.l", "field.fl", "field.o", "field.b", "capture_time_ns"),
    *("==", "!=", "<", "<=", ">", ">=", "contains", "matches", "~", "in", "not", "!", "and", "or", "&&", "||"),
    *("(", ")", "{", "}", ",", "1", "-2", "0x1f", "1.5", "nan", "-inf", "true", "false", "vwap", "Delta"),
    *('"x"', '"\\xff"', '"a\\"b"', 'r"\\d"', '"("', '"', "\\", "=", "&", "$", "set", "c2s", "BRK.B", "0255"),
]


_FIELD_PIECES = _PIECES[:19]
_VALUE_PIECES = [
    *("1", "-2", "0x1f", "1.5", "nan", "-inf", "true", "false", "vwap", "Delta", '"x"', '"\\xff"', '"a\\"b"'),
    *('r"\\d"', '"("', "set", "c2s", "BRK.B", "0255"),
]
_TESTS = st.tuples(
    st.sampled_from(_FIELD_PIECES),
    st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "contains", "matches", "~", "in", "not in"]),
    st.lists(st.sampled_from(_VALUE_PIECES), min_size=1, max_size=3),
).map(lambda t: f"{t[0]} {t[1]} {{{', '.join(t[2])}}}" if t[1].endswith("in") else f"{t[0]} {t[1]} {t[2][0]}")
_EXPRS = st.lists(_TESTS | st.sampled_from(_FIELD_PIECES), min_size=1, max_size=4).flatmap(
    lambda tests: st.lists(
        st.sampled_from([" and ", " or ", " && ", " || not "]), min_size=len(tests) - 1, max_size=len(tests) - 1
    ).map(lambda ops: tests[0] + "".join(o + t for o, t in zip(ops, tests[1:], strict=True)))
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12).map(" ".join) | st.text(max_size=30) | _EXPRS)
def test_any_text_compiles_or_fails_cleanly(text: str) -> None:
    try:
        flt = compile_filter(text)
    except FilterError as e:
        assert 1 <= e.column <= len(text) + 1
        return
    d = demo()
    for m in [d[1], d[2], d[3], d[4], d[5], d[10], d[73], d[153], *hand().values()]:
        for origin in (FILE, C2S):
            assert flt(origin, m) in (True, False)


def test_the_examples_of_the_manual_compile() -> None:
    """Every filter man/filter.txt shows in bold compiles, and its examples select what they say."""
    text = (EXAMPLES.parent / "man" / "filter.txt").read_text()
    roff = {"\\(dq": '"', "\\(aq": "'", "\\e": "\\", "\\-": "-"}
    examples = []
    for line in text.split(".SS Examples", 1)[1].splitlines():
        if line.startswith('.B "'):
            expr = line[4:-1]
            for a, b in roff.items():
                expr = expr.replace(a, b)
            examples.append(expr)
    assert len(examples) == 9
    for expr in examples:
        compile_filter(expr)
    assert examples[4] == 'key matches "^\\\\(\\\\(symbol V\\\\)"'
    assert seqs(examples[4]) == seqs('key contains "(symbol V)"') != []
    assert seqs("type == Heartbeat and load > 0.8") == [73]
    assert seqs("seq>=299&&!ok") == [299, 300]
