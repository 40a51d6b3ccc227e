"""The s-expression printers and the parser are inverses on random trees of
byte atoms, and the streaming parser does not depend on chunking."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from ripple_strategies import prop

from ripple_cli.sexp import Sexp, parse_many, parse_one, to_string, to_string_hum
from ripple_cli.sexp.parse import SexpStream
from ripple_cli.sexp.write import must_escape

# Atoms from anywhere, and atoms made of the bytes the rules are about.
_TRICKY = [
    b"#",
    b"|",
    b";",
    b'"',
    b"\\",
    b" ",
    b"\n",
    b"\r",
    b"\t",
    b"(",
    b")",
    b"\x00",
    b"\xff",
    b"\x7f",
    b"a",
    b"Z",
    b"0",
    b"-",
    b".",
    b"'",
    b"#|",
    b"|#",
    b"#;",
]
atoms = st.one_of(
    st.binary(max_size=10),
    st.lists(st.sampled_from(_TRICKY), max_size=6).map(b"".join),
    st.sampled_from([b"", b"a", b"NAN", b"-0", b"()", b"nil"]),
)
trees: st.SearchStrategy[Sexp] = st.recursive(atoms, lambda c: st.lists(c, max_size=5), max_leaves=25)


@prop(400)
@given(trees)
def test_machine_form_round_trips(t: Sexp) -> None:
    text = to_string(t)
    assert parse_one(text) == t
    if isinstance(t, list):
        assert b"\n" not in text  # atoms with a newline are escaped


@prop(300)
@given(trees)
def test_hum_form_round_trips(t: Sexp) -> None:
    assert parse_one(to_string_hum(t)) == t


@prop(200)
@given(atoms)
def test_unquoted_atoms_are_exactly_those_that_read_back_alone(a: bytes) -> None:
    text = to_string(a)
    assert (text == a) == (not must_escape(a))
    assert parse_many(text) == [a]


@prop(150)
@given(st.lists(trees, max_size=6), st.lists(st.integers(0, 2000), max_size=8), st.booleans())
def test_stream_parser_any_chunking(ts: list[Sexp], cuts: list[int], hum: bool) -> None:
    sep = [b"\n", b" ", b"\n; a comment\n", b" #| block |# ", b"\n#;dropped "]
    pieces = []
    lines = []
    for i, t in enumerate(ts):
        lines.append(1 + b"".join(pieces).count(b"\n"))
        pieces.append((to_string_hum if hum else to_string)(t))
        pieces.append(sep[i % len(sep)])
    text = b"".join(pieces)
    expected = parse_many(text)
    assert expected == [t for t in ts]
    whole = SexpStream()
    whole_out = whole.feed(text) + whole.finish()
    assert [v for _, v in whole_out] == expected
    # line numbers: each value starts on the line where its text starts
    assert [line for line, _ in whole_out] == lines
    s = SexpStream()
    out = []
    prev = 0
    for c in sorted({min(c, len(text)) for c in cuts}):
        out += s.feed(text[prev:c])
        prev = c
    out += s.feed(text[prev:])
    out += s.finish()
    assert out == whole_out
    one = SexpStream()
    out = []
    for i in range(len(text)):
        out += one.feed(text[i : i + 1])
    assert out + one.finish() == whole_out
