"""tests/interop/ocaml/ripple_wire.ml is a copy of the protocol reference, so
that the repository builds its OCaml tools on its own; it must not drift."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REFERENCE = HERE.parents[2] / "shared" / "ripple-protocol" / "ripple_wire.ml"


def test_copy_equals_the_reference() -> None:
    if not REFERENCE.exists():
        pytest.skip(f"the reference is not beside this checkout ({REFERENCE})")
    assert (HERE / "ocaml" / "ripple_wire.ml").read_bytes() == REFERENCE.read_bytes()
