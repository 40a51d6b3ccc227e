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
space rule needs to know whether an atom went out quoted.  Each also has its
typed JSON text, made by jsonview.dumps, the function the Python lane prints
JSON with: a record field's name as an object key, an enum constructor as
its value, and for a Patch constructor the name of its field (`"field"`).
A schema whose JSON the C lane cannot write (a record naming a field twice,
which a JSON object cannot hold) has none: its Deltas' JSON is Python's.
The row's field names, as on the wire, are the table's summary's (`names`:
none where the row names a field twice).
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
from ripple_cli.codec.jsonview import dumps
from ripple_cli.codec.schema import EnumOf, FieldType, ListOf, OptionOf, Prim, RecordOf, Schema, text
from ripple_cli.codec.values import zero_width
from ripple_cli.sexp.write import atom_text, must_escape

if TYPE_CHECKING:
    from ripple_cli.codec.fast._speedups import Program

_PRIM = {"Int": OP_INT, "Int32": OP_INT32, "Int64": OP_INT64, "Float": OP_FLOAT, "Bool": OP_BOOL, "String": OP_STRING}


class _Builder:
    def __init__(self) -> None:
        self.code: list[int] = [0] * HEADER_WORDS
        self.atoms: list[tuple[bytes, bool]] = []
        self.json: list[bytes] = []
        self.json_ok = True

    def atoms_of(self, names: tuple[bytes, ...], json: tuple[bytes, ...]) -> int:
        """Consecutive atoms for `names`, with their JSON texts; the index of the first."""
        first = len(self.atoms)
        self.atoms.extend((atom_text(n), must_escape(n)) for n in names)
        self.json.extend(json)
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
            self.json_ok &= len({f.name for f in t.fields}) == n
            for i, f in enumerate(t.fields):
                self.code[at + 2 + 2 * i] = self.atoms_of((f.name,), (json_key(f.name),))
                self.code[at + 3 + 2 * i] = self.node(f.typ)
        else:
            assert isinstance(t, EnumOf)
            first = self.atoms_of(t.names, tuple(json_value(n) for n in t.names))
            self.code += [OP_ENUM, len(t.names), first]
        return at


def json_key(name: bytes) -> bytes:
    """A record field's name as the key of its JSON object, quoted."""
    obj = dumps({text(name): 0})
    assert obj.startswith(b"{") and obj.endswith(b":0}")
    return obj[1:-3]


def json_value(name: bytes) -> bytes:
    """A name as a JSON value (an enum constructor, a Patch's field)."""
    return dumps(text(name))


def program_words(
    schema: Schema,
) -> tuple[bytes, tuple[tuple[bytes, bool], ...], tuple[bytes, ...] | None, tuple[bytes, ...] | None]:
    """The arguments of `_speedups.Program` for a schema."""
    b = _Builder()
    b.code[PROG_KEY] = b.node(schema.key)
    b.code[PROG_ROW] = b.node(RecordOf(schema.fields))
    b.code[PROG_CTORS] = b.atoms_of(
        tuple(ctor_name(f.name) for f in schema.fields), tuple(json_value(f.name) for f in schema.fields)
    )
    # The row's names for the table's summary, where they name one field each
    # (a Set's summary shows each name's value from a dict of the row).
    names = tuple(f.name for f in schema.fields)
    row_names = names if len(set(names)) == len(names) else None
    return array(PROGRAM_TYPECODE, b.code).tobytes(), tuple(b.atoms), tuple(b.json) if b.json_ok else None, row_names


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
        code, atoms, json, names = program_words(schema)
        prog: Program = accel.Program(code, atoms, json, names)
    except (ValueError, OverflowError):
        return None
    return prog
