"""Fixtures for the tests against real OCaml (bin_prot and sexplib).

The OCaml tools live in tests/interop/ocaml/ and are built once per session
into a temporary directory.  Without an OCaml toolchain the tests are skipped
locally, but fail under CI: there, a missing toolchain is a broken job, not
a reason to go green without having compared anything.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.interop.ocamlkit import OcamlTools

OCAML_SRC = Path(__file__).resolve().parent / "ocaml"

INSTALL_HINT = (
    "apt-get install ocaml-nox ocaml-findlib libbin-prot-ocaml-dev libppx-bin-prot-ocaml-dev "
    "libppx-sexp-conv-ocaml-dev libsexplib-ocaml-dev libfieldslib-ocaml-dev "
    "libvariantslib-ocaml-dev libppx-deriving-ocaml-dev"
)


@pytest.fixture(scope="session")
def ocaml_tools(tmp_path_factory: pytest.TempPathFactory) -> OcamlTools:
    if shutil.which("ocamlfind") is None:
        reason = f"ocamlfind not found: the OCaml interop tests need Debian's OCaml packages ({INSTALL_HINT})"
        if "CI" in os.environ:
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    out = tmp_path_factory.mktemp("ocaml-build")
    proc = subprocess.run(
        ["sh", str(OCAML_SRC / "build.sh"), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        # A toolchain that is present but cannot build our sources is a bug, never a skip.
        pytest.fail(f"build.sh failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}", pytrace=False)
    return OcamlTools(
        gen=out / "ripple_gen",
        read=out / "ripple_read",
        walk=out / "ripple_walk",
        sexp_tool=out / "sexp_tool",
        read_tool=out / "read_tool",
    )
