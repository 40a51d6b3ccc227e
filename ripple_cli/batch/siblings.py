"""The sibling protocols' tables of `export --tables`: one per protocol and
message type (OUT/lumberjack/Json/, OUT/rcp/Request/, OUT/pravega/AppendBlock/,
OUT/reactive_streams/OnNext/ ...), each message's typed JSON fields
(`ProtoMessage.fields`, what `decode -F json` prints) as columns.

A column's type is what its values are: JSON booleans -> boolean, integers
-> int64, numbers -> double (integers among them too), strings -> string;
an object's members are columns of their own, one level down (`event.host`,
`msg.op`); deeper objects and arrays -> their JSON text.  A task infers its part file's types from its own rows; the
driver then makes each table's part files agree (`unify`): a column
null in one file takes the others' type, int64 beside double becomes
double, anything else that differs becomes string.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ripple_cli.protocols.base import ProtoMessage

from .outdir import OutDir
from .tables import TIME, table_metadata

_INT64 = range(-(1 << 63), 1 << 63)

CONTEXT: tuple[pa.Field, ...] = (
    pa.field("capture_file", pa.string()),
    pa.field("connection", pa.int32()),
    pa.field("direction", pa.string()),
    pa.field("src", pa.string()),
    pa.field("dst", pa.string()),
    pa.field("community_id", pa.string()),
    pa.field("capture_time", TIME),  # the packet that completed the message
    pa.field("capture_time_ns", pa.int64()),  # the same, exact
    pa.field("offset", pa.int64()),
    pa.field("size", pa.int64()),
)
_RESERVED = frozenset(f.name for f in CONTEXT)
_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def column_name(field: str) -> str:
    return f"field_{field}" if field in _RESERVED else field


def flatten(fields: dict[str, Any]) -> dict[str, Any]:
    """An object's members one level down as columns of their own
    (`event.host`, `msg.op`): a Lumberjack event's fields, an RCP message's
    op, queried with no JSON parsing."""
    out: dict[str, Any] = {}
    for k, v in fields.items():
        if isinstance(v, dict) and v:
            for k2, v2 in v.items():
                out[f"{k}.{k2}"] = v2
        else:
            out[k] = v
    return out


def _infer(values: list[Any]) -> tuple[pa.DataType, list[Any]]:
    """A column's type from its values, and the values as that type takes them."""
    kinds = {type(v) for v in values if v is not None}
    if not kinds:
        return pa.null(), values
    if kinds == {bool}:
        return pa.bool_(), values
    if kinds == {int} and all(v is None or v in _INT64 for v in values):
        return pa.int64(), values
    if kinds <= {int, float} and bool not in kinds:
        return pa.float64(), [None if v is None else float(v) for v in values]
    if kinds == {str}:
        return pa.string(), values
    return pa.string(), [v if v is None or isinstance(v, str) else _json(v) for v in values]


class SiblingRows:
    """One sibling table's rows in a task."""

    def __init__(self) -> None:
        self.context: list[tuple[Any, ...]] = []
        self.fields: list[dict[str, Any]] = []
        self.names: dict[str, None] = {}  # every field seen, in first-seen order

    def __len__(self) -> int:
        return len(self.context)

    def add(self, context: tuple[Any, ...], msg: ProtoMessage) -> None:
        fields = flatten(msg.fields)
        self.context.append(context)
        self.fields.append(fields)
        self.names.update(dict.fromkeys(fields))

    def take(self) -> pa.Table:
        cols = list(zip(*self.context, strict=True))
        arrays: list[pa.Array] = []
        fields: list[pa.Field] = []
        for f, values in zip(CONTEXT, cols, strict=True):
            if f.type == TIME:
                values = tuple(None if t is None else t // 1000 for t in values)
                arrays.append(pa.array(values, pa.int64()).cast(TIME))
            else:
                arrays.append(pa.array(values, f.type))
            fields.append(f)
        for name in self.names:
            typ, cells = _infer([row.get(name) for row in self.fields])
            arrays.append(pa.array(cells, typ))
            fields.append(pa.field(column_name(name), typ))
        self.context, self.fields = [], []
        schema = pa.schema(fields, metadata=table_metadata(fields))
        return pa.Table.from_arrays(arrays, schema=schema)


def _merge(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    if a == b or pa.types.is_null(b):
        return a
    if pa.types.is_null(a):
        return b
    if {a, b} == {pa.int64(), pa.float64()}:
        return pa.float64()
    return pa.string()


def unify(table_dir: str, out: OutDir | None = None) -> None:
    """Make a sibling table's part files agree on their columns: the union
    of their fields (in first-file order), each of the type `_merge` picks;
    a file whose schema differs is rewritten cast to the common one.
    `table_dir` is a path on `out`'s filesystem (a local one by default)."""
    o = out
    if o is None:
        o = OutDir.of(table_dir)
        table_dir = o.root  # a local path made absolute, as pyarrow's takes it
    fs = o.fs
    files = [p for p in o.listdir(table_dir) if posixpath.basename(p).startswith("part-")]
    schemas = [pq.read_schema(f, filesystem=fs) for f in files]
    types: dict[str, pa.DataType] = {}
    for s in schemas:
        for f in s:
            types[f.name] = _merge(types[f.name], f.type) if f.name in types else f.type
    fields = [pa.field(n, pa.string() if pa.types.is_null(t) else t) for n, t in types.items()]
    common = pa.schema(fields, metadata=table_metadata(fields))
    for path, s in zip(files, schemas, strict=True):
        if s.remove_metadata() == common.remove_metadata():
            continue
        t = pq.read_table(path, filesystem=fs)
        arrays = [t.column(f.name).cast(f.type) if f.name in s.names else pa.nulls(len(t), f.type) for f in common]
        # On an object store the object is replaced whole: readers see the old one or the new.
        staged = o.staged(path)
        pq.write_table(pa.Table.from_arrays(arrays, schema=common), staged, compression="zstd", filesystem=fs)
        o.publish(staged, path)


def sibling_dirs(out: OutDir, protocols: Iterable[str]) -> list[str]:
    """The table directories the tasks wrote under OUT/PROTOCOL/."""
    found: list[str] = []
    for p in protocols:
        found.extend(out.listdir(out.path(p)))
    return found
