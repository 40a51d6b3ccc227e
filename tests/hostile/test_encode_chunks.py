"""Item 7 of issue 15, `encode`: a long expression arriving in many pipe
chunks is parsed once it may be whole, not again at every chunk; and every
chunking still gives what the whole text gives."""

from __future__ import annotations

import random

import pytest

from ripple_cli.sexp.parse import SexpStream, SexpSyntaxError, iter_sexps
from tests.conftest import EXAMPLES

DEMO = (EXAMPLES / "demo.sexp").read_bytes()
TRICKY = (
    b'(a "x)(\\"y" b) ; a ) comment (\n'
    b"#| block ( #| nested ) |# still |# (c (d e))\n"
    b"#;(commented (out)) (f)\n"
    b'top "str\\\\" (g "\\x29)")\n'
    b'(h "line\\\n   continued")'
)


class _Counting(SexpStream):
    parsed = 0

    def _take(self, final: bool):  # type: ignore[no-untyped-def]
        _Counting.parsed += len(self._buf)
        return super()._take(final)


def _chunked(text: bytes, sizes: random.Random, stream: SexpStream) -> list[tuple[int, object]]:
    out: list[tuple[int, object]] = []
    i = 0
    while i < len(text):
        n = sizes.randint(1, 700)
        out += stream.feed(text[i : i + n])
        i += n
    return out + stream.finish()


def test_a_long_expression_is_parsed_about_once() -> None:
    worker = b"w" * 2_000_000
    text = b"((seq 1)(msg(Heartbeat((worker_id " + worker + b")(timestamp_ns 1)(load 0.5)))))\n"
    stream = _Counting()
    _Counting.parsed = 0
    out: list[tuple[int, object]] = []
    for i in range(0, len(text), 4096):
        out += stream.feed(text[i : i + 4096])
    out += stream.finish()
    assert len(out) == 1
    assert _Counting.parsed <= 2 * len(text), f"parsed {_Counting.parsed / len(text):.0f} times the text"


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("text", [DEMO, TRICKY], ids=["demo", "tricky"])
def test_every_chunking_gives_the_whole_texts_expressions(text: bytes, seed: int) -> None:
    whole = [v for _, v in iter_sexps(text)]
    got = [v for _, v in _chunked(text, random.Random(seed), SexpStream())]
    assert got == whole


@pytest.mark.parametrize("seed", range(10))
def test_an_error_inside_a_long_expression_comes_after_what_precedes_it(seed: int) -> None:
    text = b'(a b)\n(c "\\xZZ" ' + b"d " * 5000 + b")\n(e)\n"
    stream = SexpStream()
    out: list[tuple[int, object]] = []
    sizes = random.Random(seed)
    with pytest.raises(SexpSyntaxError, match="bad escape"):
        i = 0
        while i < len(text):
            n = sizes.randint(1, 900)
            out += stream.feed(text[i : i + n])
            i += n
        out += stream.finish()
    assert [v for _, v in out] == [[b"a", b"b"]]
