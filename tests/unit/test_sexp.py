"""sexplib's printing and reading rules, with exact strings.

Every expected string here was printed by OCaml's sexplib v0.15
(`Sexp.to_string`, `Sexp.to_string_hum`, `sexp_of_float`), and the parser
cases follow what `Sexp.of_string_many` (parsexp) accepts and rejects.
"""

from __future__ import annotations

import math

import pytest

from ripple_cli.sexp import SexpSyntaxError, parse_many, parse_one, to_string, to_string_hum
from ripple_cli.sexp.parse import SexpStream
from ripple_cli.sexp.tree import float_atom, parse_float, parse_int
from ripple_cli.sexp.write import must_escape

# ---------------------------------------------------------------- atoms


@pytest.mark.parametrize(
    ("atom", "text"),
    [
        (b"", b'""'),
        (b"abc", b"abc"),
        (b"a b", b'"a b"'),
        (b"(", b'"("'),
        (b")", b'")"'),
        (b'"', b'"\\""'),
        (b";", b'";"'),
        (b"\\", b'"\\\\"'),
        (b"#|", b'"#|"'),
        (b"|#", b'"|#"'),
        (b"a#|b", b'"a#|b"'),
        (b"a|#b", b'"a|#b"'),
        (b"#;", b'"#;"'),
        (b"#", b"#"),
        (b"|", b"|"),
        (b"#a", b"#a"),
        (b"a|", b"a|"),
        (b"|a#", b"|a#"),
        (b"a'b", b"a'b"),
        (b"a,b", b"a,b"),
        (b"!", b"!"),
        (b"~", b"~"),
        (b"\x7f", b'"\\127"'),
        (b"\xc8", b'"\\200"'),
        (b"\n", b'"\\n"'),
        (b"\t", b'"\\t"'),
        (b"\r", b'"\\r"'),
        (b"\b", b'"\\b"'),
        (b"\x00", b'"\\000"'),
        (b"\x01", b'"\\001"'),
        (b"\x0c", b'"\\012"'),
        (b"\x1f", b'"\\031"'),
        (b"x\xffy", b'"x\\255y"'),
        (b"\xe9t\xe9", b'"\\233t\\233"'),
        (b"vwap/v2", b"vwap/v2"),
        (b"-0", b"-0"),
    ],
)
def test_atom_quoting_and_escapes(atom: bytes, text: bytes) -> None:
    assert to_string(atom) == text
    assert must_escape(atom) == text.startswith(b'"')
    assert parse_one(text) == atom


def test_every_byte_escaped_as_sexplib_does() -> None:
    expected = (
        b'"\\000\\001\\002\\003\\004\\005\\006\\007\\b\\t\\n\\011\\012\\r\\014\\015\\016\\017\\018\\019\\020'
        b"\\021\\022\\023\\024\\025\\026\\027\\028\\029\\030\\031 !\\\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLM"
        b"NOPQRSTUVWXYZ[\\\\]^_`abcdefghijklmnopqrstuvwxyz{|}~\\127\\128\\129\\130\\131\\132\\133\\134\\135\\136"
        b"\\137\\138\\139\\140\\141\\142\\143\\144\\145\\146\\147\\148\\149\\150\\151\\152\\153\\154\\155\\156"
        b"\\157\\158\\159\\160\\161\\162\\163\\164\\165\\166\\167\\168\\169\\170\\171\\172\\173\\174\\175\\176"
        b"\\177\\178\\179\\180\\181\\182\\183\\184\\185\\186\\187\\188\\189\\190\\191\\192\\193\\194\\195\\196"
        b"\\197\\198\\199\\200\\201\\202\\203\\204\\205\\206\\207\\208\\209\\210\\211\\212\\213\\214\\215\\216"
        b"\\217\\218\\219\\220\\221\\222\\223\\224\\225\\226\\227\\228\\229\\230\\231\\232\\233\\234\\235\\236"
        b'\\237\\238\\239\\240\\241\\242\\243\\244\\245\\246\\247\\248\\249\\250\\251\\252\\253\\254\\255"'
    )
    everything = bytes(range(256))
    assert to_string(everything) == expected
    assert parse_one(expected) == everything


def test_which_single_bytes_are_quoted() -> None:
    quoted = [b for b in range(256) if must_escape(bytes([b]))]
    assert quoted == [*range(0, 33), 0x22, 0x28, 0x29, 0x3B, 0x5C, *range(127, 256)]


# ---------------------------------------------------------------- one-line spacing


def test_one_line_spacing_rule() -> None:
    tree = [b"a", b"a b", b"c", [b"d"], b"e", b"f", b'"g"', b"h", [], [[]]]
    assert to_string(tree) == b'(a"a b"c(d)e f"\\"g\\""h()(()))'
    assert to_string([b"a", b"b", b"c d", b"e", b"", b"f", [], b"g", [b"h"], b"i"]) == b'(a b"c d"e""f()g(h)i)'
    assert to_string([]) == b"()"
    assert to_string([[], []]) == b"(()())"
    assert to_string([b"", b""]) == b'("""")'
    assert to_string([[b"x"], b"y", [b"z"]]) == b"((x)y(z))"
    assert to_string([b"seq", b"42"]) == b"(seq 42)"


def test_section_5_line_round_trips_through_the_tree() -> None:
    line = (
        b"((seq 42)(time_ns 1700000000000000123)(schema vwap/v2)(msg(Delta((source_output vwap)(key AAPL)"
        b"(delta(Patch((Price 101.25)(Venue(XNYS)))))(sequence_no 42)(watermark_ns(1700000000000000000))))))"
    )
    tree = parse_one(line)
    assert to_string(tree) == line
    assert to_string_hum(tree) == (
        b"((seq 42) (time_ns 1700000000000000123) (schema vwap/v2)\n"
        b" (msg\n"
        b"  (Delta\n"
        b"   ((source_output vwap) (key AAPL)\n"
        b"    (delta (Patch ((Price 101.25) (Venue (XNYS))))) (sequence_no 42)\n"
        b"    (watermark_ns (1700000000000000000))))))"
    )
    assert parse_one(to_string_hum(tree)) == tree


def test_hum_schema_file_layout() -> None:
    text = (
        b"((name vwap) (version 2) (key String) (fields (((name price) (typ Float) (default ())) ((name volume)"
        b' (typ Int) (default ())) ((name venue) (typ (Option String)) (default ("()"))))))'
    )
    assert to_string_hum(parse_one(text)) == (
        b"((name vwap) (version 2) (key String)\n"
        b" (fields\n"
        b"  (((name price) (typ Float) (default ()))\n"
        b"   ((name volume) (typ Int) (default ()))\n"
        b'   ((name venue) (typ (Option String)) (default ("()"))))))'
    )


def test_hum_multiline_atoms() -> None:
    assert to_string_hum([b"a\nb", b"c"]) == b'( "a\\\n \\nb" c)'
    assert to_string_hum([b"a\n", b"c"]) == b'("a\\n" c)'
    assert to_string_hum(b"x\ny") == b' "x\\\n\\ny"'
    assert to_string_hum(b"x y") == b'"x y"'
    assert to_string_hum(b"plain") == b"plain"
    for tree in ([b"a\nb", b"c"], b"x\ny", [b"\n\nq\n  r", [b"s\nt"]]):
        assert parse_one(to_string_hum(tree)) == tree


# ---------------------------------------------------------------- floats


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (100.0, b"100"),
        (0.1, b"0.1"),
        (1e20, b"1E+20"),
        (1e-7, b"1E-07"),
        (math.nan, b"NAN"),
        (-math.nan, b"-NAN"),
        (math.inf, b"INF"),
        (-math.inf, b"-INF"),
        (-0.0, b"-0"),
        (0.0, b"0"),
        (5e-324, b"4.94065645841247E-324"),
        (1.7976931348623157e308, b"1.7976931348623157E+308"),
        (2.2250738585072014e-308, b"2.2250738585072014E-308"),
        (0.1 + 0.2, b"0.30000000000000004"),
        (1 / 3, b"0.33333333333333331"),
        (123456789012345678.0, b"1.2345678901234568E+17"),
        (1.5, b"1.5"),
        (101.25, b"101.25"),
        (0.5, b"0.5"),
        (1e15, b"1E+15"),
        (1e16, b"1E+16"),
        (2.5e-5, b"2.5E-05"),
        (1e300, b"1E+300"),
    ],
)
def test_float_atoms(x: float, text: bytes) -> None:
    assert float_atom(x) == text
    back = parse_float(text.decode())
    if math.isnan(x):
        assert math.isnan(back)
        assert math.copysign(1.0, back) == math.copysign(1.0, x)
    else:
        assert back == x
        assert math.copysign(1.0, back) == math.copysign(1.0, x)


def test_nan_payload_is_not_kept_by_text_only_its_sign() -> None:
    import struct

    weird = struct.unpack("<d", struct.pack("<Q", 0xFFF0000000000001))[0]
    assert float_atom(weird) == b"-NAN"
    weird = struct.unpack("<d", struct.pack("<Q", 0x7FF4000000000000))[0]
    assert float_atom(weird) == b"NAN"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("nan", math.nan),
        ("inf", math.inf),
        ("-inf", -math.inf),
        ("infinity", math.inf),
        ("1_000.5", 1000.5),
        ("0x1p3", 8.0),
        ("1e3", 1000.0),
        (".5", 0.5),
        ("-0", -0.0),
        ("+1.5", 1.5),
    ],
)
def test_parse_float_accepts_ocaml_forms(text: str, value: float) -> None:
    got = parse_float(text)
    if math.isnan(value):
        assert math.isnan(got)
    else:
        assert got == value and math.copysign(1, got) == math.copysign(1, value)


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "--1", "n"])
def test_parse_float_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_float(text)


def test_parse_int_forms() -> None:
    assert parse_int("42") == 42
    assert parse_int("-42") == -42
    assert parse_int("007") == 7
    assert parse_int("1_000") == 1000
    assert parse_int("0x10") == 16
    assert parse_int("0o10") == 8
    assert parse_int("0b10") == 2
    for bad in ("", "x", "1.0", "_"):
        with pytest.raises(ValueError):
            parse_int(bad)


# ---------------------------------------------------------------- the parser


@pytest.mark.parametrize(
    ("text", "values"),
    [
        (b'"\\x41\\065\\n\\t\\b\\r\\\\\\"\\\' "', [b"AA\n\t\b\r\\\"' "]),
        (b'"\\000\\255"', [b"\x00\xff"]),
        (b'"\\xff\\x0A"', [b"\xff\n"]),
        (b'"\\xFf"', [b"\xff"]),
        (b'"a\\\n   b"', [b"ab"]),
        (b'"a\\\r\n \tb"', [b"ab"]),
        (b'"a\\\nb\\\n  c"', [b"abc"]),
        (b'"a\\\n"', [b"a"]),
        (b'"\\q"', [b"\\q"]),  # an unknown escape stays as written
        (b'"\\ "', [b"\\ "]),  # so does a backslash-space (parsexp)
        (b'"\\\t"', [b"\\\t"]),
        (b'"\xc3\xa9"', [b"\xc3\xa9"]),
        (b"a ; comment\nb", [b"a", b"b"]),
        (b"x;c\ny", [b"x", b"y"]),
        (b"a ; comment at the end", [b"a"]),
        (b"a #| block #| nested |# |# b", [b"a", b"b"]),
        (b'#| "|#" |# x', [b"x"]),
        (b"a #; (x y) b", [b"a", b"b"]),
        (b"#;a b", [b"b"]),
        (b"#; #; a b c", [b"c"]),
        (b"(#;a)", [[]]),
        (b"a#;b", [b"a#"]),  # `;` ends an atom and starts a comment
        (b"#a#;b", [b"#a#"]),
        (b"a#b", [b"a#b"]),
        (b"a|", [b"a|"]),
        (b"|", [b"|"]),
        (b"#", [b"#"]),
        (b'a"b"', [b"a", b"b"]),
        (b'"a"b', [b"a", b"b"]),
        (b"a(b)", [b"a", [b"b"]]),
        (b"a\x0cb", [b"a", b"b"]),
        (b"(a b) (c\n d)", [[b"a", b"b"], [b"c", b"d"]]),
        (b"", []),
        (b"  \n ; only a comment", []),
    ],
)
def test_parser_accepts(text: bytes, values: list) -> None:  # type: ignore[type-arg]
    assert parse_many(text) == values


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"(a", "line 1, column 1: unclosed '('"),
        (b"a)", "line 1, column 2: unexpected ')'"),
        (b"(a b))", "line 1, column 6: unexpected ')'"),
        (b'"abc', "line 1, column 1: unterminated string"),
        (b"#| never", "line 1, column 1: unterminated block comment"),
        (b"x\n\n  (y\n  ", "line 3, column 3: unclosed '('"),
        (b'(a\n  (b c)\n  "x\\q\\25"', "line 3, column 7: bad escape: \\DDD needs three decimal digits"),
        (b'"\\256"', "line 1, column 2: bad escape: \\256 is above 255"),
        (b'"\\xZ1"', "line 1, column 2: bad escape: \\x needs two hex digits"),
        (b'"\\x f"', "line 1, column 2: bad escape: \\x needs two hex digits"),
        (b'"\\x+f"', "line 1, column 2: bad escape: \\x needs two hex digits"),
        (b'"\\xf "', "line 1, column 2: bad escape: \\x needs two hex digits"),
        (b"a\n b|#c", "line 2, column 3: unexpected '|#'"),
        (b"|#b", "line 1, column 1: unexpected '|#'"),
        (b"a#|b|#", "line 1, column 2: unexpected '#|' inside an atom"),
        (b"#;", "line 1, column 3: unexpected end of input"),
        (b"(a #;)", "line 1, column 6: unexpected ')'"),
    ],
)
def test_parser_errors_with_line_and_column(text: bytes, message: str) -> None:
    with pytest.raises(SexpSyntaxError) as e:
        parse_many(text)
    assert str(e.value) == message


def test_parse_one_wants_exactly_one() -> None:
    assert parse_one(b" (a) ") == [b"a"]
    with pytest.raises(SexpSyntaxError, match="expected one s-expression, found 2"):
        parse_one(b"a b")
    with pytest.raises(SexpSyntaxError, match="expected one s-expression, found 0"):
        parse_one(b"; nothing")


# ---------------------------------------------------------------- SexpStream

STREAM_TEXT = (
    b"; a header comment\n"
    b'((seq 1)(name "two\\nlines"))\n'
    b"atom1 atom2\n"
    b"#| block\n comment |# (x #;(skipped) y)\n"
    b'"continued \\\n   string" "\\065\\x42"\n'
    b"#;dropped kept ; trailing\n"
    b"(nested (deep (deeper\n"
    b"  ) ) )\n"
    b"last"
)
STREAM_EXPECTED = [
    (2, [[b"seq", b"1"], [b"name", b"two\nlines"]]),
    (3, b"atom1"),
    (3, b"atom2"),
    (5, [b"x", b"y"]),
    (6, b"continued string"),
    (7, b"AB"),
    (8, b"kept"),
    (9, [b"nested", [b"deep", [b"deeper"]]]),
    (11, b"last"),
]


def stream_values(chunks: list[bytes]) -> list:  # type: ignore[type-arg]
    s = SexpStream()
    out = []
    for c in chunks:
        out += s.feed(c)
    return out + s.finish()


def test_sexp_stream_whole() -> None:
    assert stream_values([STREAM_TEXT]) == STREAM_EXPECTED
    assert [v for _, v in STREAM_EXPECTED] == parse_many(STREAM_TEXT)


def test_sexp_stream_every_split_point() -> None:
    for cut in range(len(STREAM_TEXT) + 1):
        assert stream_values([STREAM_TEXT[:cut], STREAM_TEXT[cut:]]) == STREAM_EXPECTED, cut


def test_sexp_stream_every_pair_of_split_points() -> None:
    n = len(STREAM_TEXT)
    for i in range(0, n + 1, 3):
        for j in range(i, n + 1, 2):
            got = stream_values([STREAM_TEXT[:i], STREAM_TEXT[i:j], STREAM_TEXT[j:]])
            assert got == STREAM_EXPECTED, (i, j)


def test_sexp_stream_one_byte_at_a_time() -> None:
    chunks = [STREAM_TEXT[i : i + 1] for i in range(len(STREAM_TEXT))]
    assert stream_values(chunks) == STREAM_EXPECTED


def test_sexp_stream_error_line_is_counted_from_the_start() -> None:
    text = b"(a)\n(b)\n\n  c)\n"
    for cut in range(len(text) + 1):
        s = SexpStream()
        got = []
        with pytest.raises(SexpSyntaxError) as e:
            for c in (text[:cut], text[cut:]):
                got += s.feed(c)
            got += s.finish()
        assert got == [(1, [b"a"]), (2, [b"b"]), (4, b"c")]
        assert e.value.line == 4
        assert str(e.value) == "line 4, column 4: unexpected ')'"


def test_sexp_stream_incomplete_at_finish_is_an_error() -> None:
    s = SexpStream()
    assert s.feed(b"(a)\n(b") == [(1, [b"a"])]
    with pytest.raises(SexpSyntaxError) as e:
        s.finish()
    assert str(e.value) == "line 2, column 1: unclosed '('"
    s = SexpStream()
    assert s.feed(b'x "abc') == [(1, b"x")]
    with pytest.raises(SexpSyntaxError, match="unterminated string"):
        s.finish()


@pytest.mark.parametrize(
    ("text", "values", "message"),
    [
        (b"(a) b)", [(1, [b"a"]), (1, b"b")], "line 1, column 6: unexpected ')'"),
        (b"x\n  y z |#w", [(1, b"x"), (2, b"y"), (2, b"z")], "line 2, column 7: unexpected '|#'"),
        (b'q "\\999"', [(1, b"q")], "line 1, column 4: bad escape: \\999 is above 255"),
        (b"(a)\n  (b", [(1, [b"a"])], "line 2, column 3: unclosed '('"),
    ],
)
def test_sexp_stream_errors_are_the_same_in_every_chunking(text: bytes, values: list, message: str) -> None:  # type: ignore[type-arg]
    chunkings = [[text]] + [[text[:i], text[i:]] for i in range(len(text) + 1)]
    chunkings.append([text[i : i + 1] for i in range(len(text))])
    for chunks in chunkings:
        s = SexpStream()
        got = []
        with pytest.raises(SexpSyntaxError) as e:
            for c in chunks:
                got += s.feed(c)
            got += s.finish()
        assert got == values, chunks
        assert str(e.value) == message, chunks
