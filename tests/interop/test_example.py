"""examples/ is made by the OCaml generator, provably: regenerating it with the
same profile, seed and count reproduces every file byte for byte.

The exact command (from the repo root, after building the tools with
`tests/interop/ocaml/build.sh /tmp/ripple-ocaml`):

    /tmp/ripple-ocaml/ripple_gen -profile demo -seed 7 -count 300 \\
        -bin examples/demo.ripple -sexp examples/demo.sexp -schemas examples/schemas

The generator's output depends only on these arguments (its PRNG is its own
SplitMix64, not Stdlib.Random, whose algorithm changed in OCaml 5).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.interop.ocamlkit import OcamlTools

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DEMO_ARGS = ["-profile", "demo", "-seed", "7", "-count", "300"]


def _first_difference(actual: bytes, expected: bytes) -> str:
    at = next(
        (i for i, (x, y) in enumerate(zip(actual, expected, strict=False)) if x != y), min(len(actual), len(expected))
    )
    return f"first difference at byte {at} ({len(actual)} bytes, expected {len(expected)})"


def test_example_is_reproducible(ocaml_tools: OcamlTools, tmp_path: Path) -> None:
    out_schemas = tmp_path / "schemas"
    proc = subprocess.run(
        [
            str(ocaml_tools.gen),
            *DEMO_ARGS,
            "-bin",
            str(tmp_path / "demo.ripple"),
            "-sexp",
            str(tmp_path / "demo.sexp"),
            "-schemas",
            str(out_schemas),
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    pairs = [(EXAMPLES / "demo.ripple", tmp_path / "demo.ripple"), (EXAMPLES / "demo.sexp", tmp_path / "demo.sexp")]
    committed = sorted(p.name for p in (EXAMPLES / "schemas").glob("*.sexp"))
    regenerated = sorted(p.name for p in out_schemas.glob("*.sexp"))
    assert committed == regenerated, "examples/schemas/ holds other files than the generator writes"
    pairs += [(EXAMPLES / "schemas" / name, out_schemas / name) for name in committed]
    for kept, fresh in pairs:
        want, got = kept.read_bytes(), fresh.read_bytes()
        if want != got:
            pytest.fail(
                f"{kept.relative_to(EXAMPLES.parent)} is not what the generator makes: {_first_difference(got, want)}",
                pytrace=False,
            )
