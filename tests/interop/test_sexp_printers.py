"""ripple's s-expression printers against sexplib itself, on random trees:
`to_string` and `to_string_hum` byte for byte (the hum layout comes from
OCaml's Format, which ripple ports), and sexplib reading ripple's text."""

from __future__ import annotations

import random
import subprocess

import pytest

from ripple_cli.sexp import Sexp, parse_many, to_string, to_string_hum

ATOMS = [
    b"a",
    b"Delta",
    b"1700000000000000000",
    b"",
    b"with space",
    b"x\ny",
    b"l1\nl2\nl3",
    b"tail\n",
    b"\n",
    b'q"uote',
    b"back\\slash",
    b"#|",
    b"|#",
    b"a#b",
    b"semi;",
    bytes(range(40)),
    b"\xff\xfe",
    b"caf\xc3\xa9",
    b"x" * 70,
    b"y" * 90,
    b"-NAN",
    b"1E+20",
    b"#",
    b"|",
    b"'",
]


def random_tree(rnd: random.Random, depth: int = 0) -> Sexp:
    if depth > 6 or rnd.random() < 0.35:
        roll = rnd.random()
        if roll < 0.2:
            return bytes(rnd.randrange(256) for _ in range(rnd.randrange(30)))
        if roll < 0.4:
            return b"w" * rnd.randrange(1, 100)
        return rnd.choice(ATOMS)
    return [random_tree(rnd, depth + 1) for _ in range(rnd.choice([0, 1, 2, 3, 4, 5, 8, 12]))]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_printers_match_sexplib(ocaml_tools, seed: int) -> None:  # type: ignore[no-untyped-def]
    rnd = random.Random(seed)
    trees = [random_tree(rnd) for _ in range(200)]  # about 450,000 nodes a seed
    # sexp_tool reads each tree (so sexplib parses ripple's one-line text)
    # and prints its to_string_hum, a newline, its to_string, a newline.
    text = b"".join(to_string(t) + b"\n" for t in trees)
    ocaml = subprocess.run([ocaml_tools.sexp_tool], input=text, capture_output=True, check=True).stdout
    pos = 0
    for t in trees:
        ours = to_string_hum(t) + b"\n" + to_string(t) + b"\n"
        theirs = ocaml[pos : pos + len(ours)]
        assert theirs == ours, (
            f"tree {to_string(t)[:200]!r}:\nripple:\n{ours.decode('latin-1')}\nsexplib:\n{theirs.decode('latin-1')}"
        )
        pos += len(ours)
    assert pos == len(ocaml)
    # and ripple reads sexplib's indented form back to the same trees
    hum_only = b"".join(to_string_hum(t) + b"\n" for t in trees)
    assert parse_many(hum_only) == trees
