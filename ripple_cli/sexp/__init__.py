"""S-expressions exactly as OCaml's sexplib writes and reads them.

A tree is an atom (`bytes`) or a list of trees (`list`).  Atoms are bytes,
not str, because Ripple strings are byte strings and the canonical text
must carry every byte through unchanged.
"""

from ripple_cli.sexp.parse import SexpSyntaxError, parse_many, parse_one
from ripple_cli.sexp.tree import Sexp
from ripple_cli.sexp.write import to_string, to_string_hum

__all__ = ["Sexp", "SexpSyntaxError", "parse_many", "parse_one", "to_string", "to_string_hum"]
