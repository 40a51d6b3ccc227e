"""A schema's key and `Delta.t`, compiled once (reference section 4).

For a schema the workers have, in effect,
    delta = Set of row | Patch of update list | Remove
with one `update` constructor per row field, named as the field with its
first letter capitalized.  `CompiledSchema` reads and writes these from the
`Schema.t` alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from ripple_cli.codec import binprot as bp
from ripple_cli.codec.errors import DecodeError
from ripple_cli.codec.schema import RecordOf, Schema, SexpShapeError, expect_list, schema_flaw, text, variant
from ripple_cli.codec.values import TypeCodec, compile_type, read_ctor, start_budget, write_ctor
from ripple_cli.sexp.tree import Sexp
from ripple_cli.terminal.words import plural


@dataclass(frozen=True, slots=True)
class SetRow:
    row: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Patch:
    updates: tuple[tuple[int, Any], ...]  # (field index, value), in wire order


@dataclass(frozen=True, slots=True)
class Remove:
    pass


Delta = Union[SetRow, Patch, Remove]
REMOVE = Remove()


def ctor_name(field_name: bytes) -> bytes:
    """OCaml's `String.capitalize_ascii`."""
    return field_name[:1].upper() + field_name[1:]


class CompiledSchema:
    """Everything needed to read, write and print one schema's Deltas."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.fingerprint = schema.fingerprint
        self.key: TypeCodec = compile_type(schema.key)
        self.row: TypeCodec = compile_type(RecordOf(schema.fields))
        self.fields: tuple[TypeCodec, ...] = tuple(compile_type(f.typ) for f in schema.fields)
        self.field_names = tuple(text(f.name) for f in schema.fields)
        self.ctor_names = tuple(ctor_name(f.name) for f in schema.fields)
        # Two fields whose names capitalize alike (`price`, `Price`) could
        # not be an OCaml type: bytes still decode by index, but the text of
        # an update to either cannot say which (encode refuses it).
        self._ctor_index: dict[str, int] = {}
        self._ambiguous: set[str] = set()
        for i, c in enumerate(self.ctor_names):
            if text(c) in self._ctor_index:
                self._ambiguous.add(text(c))
            self._ctor_index.setdefault(text(c), i)
        self._nfields = len(schema.fields)
        # Why no worker can have this schema (a record naming a field twice):
        # its Deltas are then shown undecoded, with a bad_delta problem.
        self.flaw = schema_flaw(schema)

    # ------------------------------------------------------------ bytes

    def read_key(self, data: bytes) -> Any:
        start_budget(data)
        value, end = self.key.read(data, 0)
        if end != len(data):
            raise DecodeError(f"key: {plural(len(data) - end, 'byte')} left over", end)
        return value

    def read_delta(self, data: bytes) -> Delta:
        start_budget(data)
        tag, pos = bp.read_tag(data, 0, 3, "delta")
        delta: Delta
        if tag == 0:
            row, pos = self.row.read(data, pos)
            delta = SetRow(row)
        elif tag == 1:
            n, pos = bp.read_count(data, pos)
            updates = []
            fields = self.fields
            for _ in range(n):
                i, pos = read_ctor(data, pos, self._nfields, "update")
                v, pos = fields[i].read(data, pos)
                updates.append((i, v))
            delta = Patch(tuple(updates))
        else:
            delta = REMOVE
        if pos != len(data):
            raise DecodeError(f"delta: {plural(len(data) - pos, 'byte')} left over", pos)
        return delta

    def validate(self, key: bytes, delta: bytes) -> None:
        """Check that key and delta bytes decode exactly, building nothing."""
        start_budget(key)
        end = self.key.skip(key, 0)
        if end != len(key):
            raise DecodeError(f"key: {plural(len(key) - end, 'byte')} left over", end)
        start_budget(delta)
        tag, pos = bp.read_tag(delta, 0, 3, "delta")
        if tag == 0:
            pos = self.row.skip(delta, pos)
        elif tag == 1:
            n, pos = bp.read_count(delta, pos)
            for _ in range(n):
                i, pos = read_ctor(delta, pos, self._nfields, "update")
                pos = self.fields[i].skip(delta, pos)
        if pos != len(delta):
            raise DecodeError(f"delta: {plural(len(delta) - pos, 'byte')} left over", pos)

    def write_key(self, value: Any) -> bytes:
        out = bytearray()
        self.key.write(out, value)
        return bytes(out)

    def write_delta(self, delta: Delta) -> bytes:
        out = bytearray()
        if isinstance(delta, SetRow):
            out.append(0)
            self.row.write(out, delta.row)
        elif isinstance(delta, Patch):
            out.append(1)
            bp.write_nat0(out, len(delta.updates))
            for i, v in delta.updates:
                write_ctor(out, i, self._nfields)
                self.fields[i].write(out, v)
        else:
            out.append(2)
        return bytes(out)

    # ------------------------------------------------------------ text

    def delta_to_sexp(self, delta: Delta) -> Sexp:
        if isinstance(delta, SetRow):
            return [b"Set", self.row.to_sexp(delta.row)]
        if isinstance(delta, Patch):
            fields, ctors = self.fields, self.ctor_names
            return [b"Patch", [[ctors[i], fields[i].to_sexp(v)] for i, v in delta.updates]]
        return b"Remove"

    def delta_of_sexp(self, s: Sexp, path: str) -> Delta:
        ctor, args = variant(s, path)
        if ctor == "Remove" and not args:
            return REMOVE
        if ctor == "Set" and len(args) == 1:
            return SetRow(self.row.of_sexp(args[0], f"{path}.Set"))
        if ctor == "Patch" and len(args) == 1:
            items = expect_list(args[0], "a list of updates", f"{path}.Patch")
            updates = []
            for n, item in enumerate(items):
                where = f"{path}.Patch[{n}]"
                name, uargs = variant(item, where)
                i = self._ctor_index.get(name)
                if name in self._ambiguous:
                    both = " and ".join(self.field_names[j] for j, c in enumerate(self.ctor_names) if text(c) == name)
                    raise SexpShapeError(
                        f"{name} updates {both} of {text(self.fingerprint)} alike: the text cannot say which", where
                    )
                if i is None:
                    known = " ".join(text(c) for c in self.ctor_names)
                    raise SexpShapeError(f"{name} is not a field of {text(self.fingerprint)} ({known})", where)
                if len(uargs) != 1:
                    raise SexpShapeError(f"{name} takes one value", where)
                updates.append((i, self.fields[i].of_sexp(uargs[0], f"{where}.{name}")))
            return Patch(tuple(updates))
        raise SexpShapeError("expected (Set row), (Patch (updates...)) or Remove", path)

    def delta_to_json(self, delta: Delta) -> dict[str, Any]:
        if isinstance(delta, SetRow):
            return {"op": "set", "row": self.row.to_json(delta.row)}
        if isinstance(delta, Patch):
            fields, names = self.fields, self.field_names
            return {
                "op": "patch",
                "updates": [{"field": names[i], "value": fields[i].to_json(v)} for i, v in delta.updates],
            }
        return {"op": "remove"}

    def field_values(self, delta: Delta) -> dict[str, Any]:
        """Field name -> value, for filters and summaries."""
        if isinstance(delta, SetRow):
            return delta.row
        if isinstance(delta, Patch):
            return {self.field_names[i]: v for i, v in delta.updates}
        return {}
