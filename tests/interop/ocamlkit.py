"""The OCaml tools' paths, as the `ocaml_tools` fixture (conftest.py)
returns them.  Tests import it as `tests.interop.ocamlkit`, never `conftest`
by name (several conftest.py files share that name in one run)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class OcamlTools:
    """Paths of the executables that build.sh makes."""

    gen: Path  # ripple_gen: streams + the text sexplib prints for them
    read: Path  # ripple_read: typed decode of a stream, one canonical line per message
    walk: Path  # ripple_walk: frame + CRC walk, the benchmark anchor
    sexp_tool: Path  # sexplib's to_string_hum and to_string of any s-expression
    read_tool: Path  # OCaml's number conversions and Sexp.of_string, a line at a time
