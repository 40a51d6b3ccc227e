"""A schema compiled into a small program for the C fast lane.

`values.py` compiles a field type into Python closures; this compiles the
same type into int32 words that `_speedups.c` interprets, to validate a
Delta's key and delta or print them as `to_sexp` + `to_string` would.

Layout (its numbers are layout.py's, which the C module is checked against):
  header (PROG_KEY, PROG_ROW, PROG_CTORS): the key's node, the row's node
    (a record), the atom of the first Patch constructor (`Price`, `Venue`, ...);
  then the nodes, each an opcode and its operands, children after parents:
    INT | INT32 | INT64 | FLOAT | BOOL | STRING
    OPTION child | LIST child
    RECORD n (name-atom child)*n
    ENUM count first-atom          (the constructors' atoms are consecutive)
Atoms are names printed once here, as `(text, quoted)`: the printer's
space rule needs to know whether an atom went out quoted.
"""

from __future__ import annotations

from array import array
from functools import lru_cache
from typing import TYPE_CHECKING

from ripple_cli.codec.delta import ctor_name
from ripple_cli.codec.fast.layout import (
    HEADER_WORDS,
    OP_BOOL,
    OP_ENUM,
    OP_FLOAT,
    OP_INT,
    OP_INT32,
    OP_INT64,
    OP_LIST,
    OP_OPTION,
    OP_RECORD,
    OP_STRING,
    PROG_CTORS,
    PROG_KEY,
    PROG_ROW,
    PROGRAM_TYPECODE,
)
from ripple_cli.codec.schema import EnumOf, FieldType, ListOf, OptionOf, Prim, RecordOf, Schema
from ripple_cli.codec.values import zero_width
from ripple_cli.sexp.write import atom_text, must_escape

if TYPE_CHECKING:
    from ripple_cli.codec.fast._speedups import Program

_PRIM = {"Int": OP_INT, "Int32": OP_INT32, "Int64": OP_INT64, "Float": OP_FLOAT, "Bool": OP_BOOL, "String": OP_STRING}


class _Builder:
    def __init__(self) -> None:
        self.code: list[int] = [0] * HEADER_WORDS
        self.atoms: list[tuple[bytes, bool]] = []

    def atoms_of(self, names: tuple[bytes, ...]) -> int:
        """Consecutive atoms for `names`; the index of the first."""
        first = len(self.atoms)
        self.atoms.extend((atom_text(n), must_escape(n)) for n in names)
        return first

    def node(self, t: FieldType) -> int:
        at = len(self.code)
        if isinstance(t, Prim):
            self.code.append(_PRIM[t.kind])
        elif isinstance(t, (OptionOf, ListOf)):
            self.code += [OP_OPTION if isinstance(t, OptionOf) else OP_LIST, 0]
            self.code[at + 1] = self.node(t.inner)
        elif isinstance(t, RecordOf):
            n = len(t.fields)
            self.code += [OP_RECORD, n] + [0, 0] * n
            for i, f in enumerate(t.fields):
                self.code[at + 2 + 2 * i] = self.atoms_of((f.name,))
                self.code[at + 3 + 2 * i] = self.node(f.typ)
        else:
            assert isinstance(t, EnumOf)
            first = self.atoms_of(t.names)
            self.code += [OP_ENUM, len(t.names), first]
        return at


def program_words(schema: Schema) -> tuple[bytes, tuple[tuple[bytes, bool], ...]]:
    """The arguments of `_speedups.Program` for a schema."""
    b = _Builder()
    b.code[PROG_KEY] = b.node(schema.key)
    b.code[PROG_ROW] = b.node(RecordOf(schema.fields))
    b.code[PROG_CTORS] = b.atoms_of(tuple(ctor_name(f.name) for f in schema.fields))
    return array(PROGRAM_TYPECODE, b.code).tobytes(), tuple(b.atoms)


def _has_empty_list(t: FieldType) -> bool:
    """A list of zero-width elements: its count is held to a decode budget
    (values.py) that only the Python decoder keeps."""
    if isinstance(t, ListOf):
        return zero_width(t.inner) or _has_empty_list(t.inner)
    if isinstance(t, OptionOf):
        return _has_empty_list(t.inner)
    if isinstance(t, RecordOf):
        return any(_has_empty_list(f.typ) for f in t.fields)
    return False


@lru_cache(maxsize=1024)
def compile_program(schema: Schema) -> Program | None:
    """The schema's program, or None when C cannot take it (nested deeper
    than its limit, more enum constructors than two bytes index, lists of
    zero-width elements): its Deltas then always go through the Python
    decoder."""
    from ripple_cli.codec.fast import _load

    accel = _load()
    if accel is None or _has_empty_list(schema.key) or any(_has_empty_list(f.typ) for f in schema.fields):
        return None
    try:
        code, atoms = program_words(schema)
        prog: Program = accel.Program(code, atoms)
    except (ValueError, OverflowError):
        return None
    return prog
