"""The typed tables of `export --tables`: one per source output, the key
and the schema's fields as real columns (typed.py), built from the same
decoded messages as the all-messages table.

Which table a Delta goes to is decided from the schemas alone (`Layout`,
made on the driver from every schema of the run), so that the tasks write
their part files independently and still agree on every table's columns:
the versions of a schema name that `check_backward` accepts, each newer
version reading the one before, share one table whose columns are the
union of their fields (the newest version's type for a field they share);
a version that breaks the chain starts a table of its own, named with the
suffix `@NAME_vVERSION` of its group's oldest version.  The oldest group of
each name keeps the plain name (what a table is called does not change when
newer data brings a new, incompatible version).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ripple_cli.codec.compat import check_backward, compatible
from ripple_cli.codec.delta import Patch, Remove
from ripple_cli.codec.messages import DeltaView
from ripple_cli.codec.schema import Field, Schema

from .typed import Convert, apply, arrow_type, converter, name_text

# ripple.table_version in the Parquet metadata of every table export writes
# (the all-messages table and the typed tables); bumped when columns change.
# 2: the all-messages table's time and event_hour are timestamps, its key
# and delta are kept once (the s-expressions; key_json, delta_json gone).
TABLE_VERSION = "2"
TIME = pa.timestamp("us", tz="UTC")  # Spark's timestamps stop at microseconds: time_ns keeps the rest

# The columns before the key and the fields, in order.
CONTEXT: tuple[pa.Field, ...] = (
    pa.field("capture_file", pa.string()),
    pa.field("connection", pa.int32()),  # null: a raw stream
    pa.field("direction", pa.string()),
    pa.field("community_id", pa.string()),
    pa.field("offset", pa.int64()),
    pa.field("seq", pa.int64()),
    pa.field("time", TIME),  # the envelope's event time
    pa.field("time_ns", pa.int64()),  # the same, exact
    pa.field("schema", pa.string()),  # the fingerprint the Delta was written with
    pa.field("worker", pa.string()),
    pa.field("sequence_no", pa.int64()),
    pa.field("watermark_ns", pa.int64()),
)
FLAGS: tuple[pa.Field, ...] = (
    pa.field("removed", pa.bool_()),  # a Remove: the key's row is gone (every field null)
    pa.field("patch", pa.list_(pa.string())),  # a Patch: the fields it sets (the others are null); null otherwise
)
RESERVED = frozenset(f.name for f in (*CONTEXT, *FLAGS)) | {"key"}


def field_column(name: bytes) -> str:
    """A field's column: its name, or `field_NAME` when the name is one of
    the other columns'."""
    text = name_text(name)
    return f"field_{text}" if text in RESERVED else text


def _newer_reads(group: list[Schema], merged: dict[bytes, Field], s: Schema) -> bool:
    if check_backward(s, group[-1]):
        return False
    # A field the new version shares with older ones must read all of theirs.
    return all(compatible(f.typ, merged[f.name].typ) for f in s.fields if f.name in merged)


def _groups(schemas: Sequence[Schema]) -> list[list[Schema]]:
    """The schemas of one name, oldest first, cut where a version cannot
    read the one before."""
    out: list[list[Schema]] = []
    merged: dict[bytes, Field] = {}
    for s in sorted(schemas, key=lambda s: s.version):
        if out and _newer_reads(out[-1], merged, s):
            out[-1].append(s)
            merged.update({f.name: f for f in s.fields})
        else:
            out.append([s])
            merged = {f.name: f for f in s.fields}
    return out


@dataclass(frozen=True)
class Shape:
    """One table's columns, for the versions it holds."""

    suffix: str  # "" or "@NAME_vVERSION"
    schema: pa.Schema
    fields: tuple[Field, ...]  # the union, newest version's first


@dataclass(frozen=True)
class Writer:
    """How one schema version's Deltas fill its table's columns."""

    shape: Shape
    key: Convert
    # (name in the decoded row, column index among the shape's fields, converter)
    fields: tuple[tuple[str, int, Convert], ...]


def _shape(group: list[Schema], suffix: str) -> Shape:
    fields: dict[bytes, Field] = {}
    for s in reversed(group):  # newest first: its types win
        for f in s.fields:
            fields.setdefault(f.name, f)
    cols = [pa.field(field_column(f.name), arrow_type(f.typ)) for f in fields.values()]
    key = pa.field("key", arrow_type(group[-1].key))
    schema = pa.schema([*CONTEXT, key, *FLAGS, *cols], metadata=table_metadata([*CONTEXT, key, *FLAGS, *cols]))
    return Shape(suffix, schema, tuple(fields.values()))


def _writer(shape: Shape, s: Schema) -> Writer:
    index = {f.name: i for i, f in enumerate(shape.fields)}
    return Writer(
        shape,
        converter(s.key),
        tuple((f.name.decode("utf-8", "surrogateescape"), index[f.name], converter(f.typ)) for f in s.fields),
    )


class Layout:
    """Every schema version's table: made once from the run's schemas and
    handed to every task (picklable: schemas only; the rest is rebuilt)."""

    def __init__(self, schemas: Sequence[Schema]) -> None:
        self.schemas = tuple(schemas)
        self._writers: dict[Schema, Writer] | None = None

    def __getstate__(self) -> tuple[Schema, ...]:
        return self.schemas

    def __setstate__(self, state: tuple[Schema, ...]) -> None:
        self.schemas = state
        self._writers = None

    def _build(self) -> dict[Schema, Writer]:
        by_name: dict[bytes, list[Schema]] = {}
        for s in self.schemas:
            by_name.setdefault(s.name, []).append(s)
        writers: dict[Schema, Writer] = {}
        for name, versions in by_name.items():
            groups = _groups(versions)
            for i, group in enumerate(groups):
                suffix = "" if i == 0 else f"@{name_text(name)}_v{group[0].version}"
                shape = _shape(group, suffix)
                for s in group:
                    writers[s] = _writer(shape, s)
        return writers

    def writer(self, schema: Schema) -> Writer:
        if self._writers is None:
            self._writers = self._build()
        w = self._writers.get(schema)
        if w is None:
            # A definition no Handshake of the scan declared (two Handshakes
            # disagreeing on one fingerprint): a table of its own.
            w = self._writers[schema] = _writer(
                _shape([schema], f"@{name_text(schema.name)}_v{schema.version}~"), schema
            )
        return w


def table_metadata(fields: Sequence[pa.Field]) -> dict[bytes, bytes]:
    """ripple.table_version, and pandas metadata that gives the integer and
    boolean columns pandas' nullable dtypes: pandas' default read would make
    them float64 (and lose the low bits of large integers) as soon as one
    value is null.  Doubles stay float64, null as NaN: pandas' Float64
    would read a NaN value as missing."""
    dtypes = {pa.int64(): "Int64", pa.int32(): "Int32", pa.bool_(): "boolean"}
    columns = [
        {
            "name": f.name,
            "field_name": f.name,
            "pandas_type": str(f.type),
            "numpy_type": dtypes[f.type],
            "metadata": None,
        }
        for f in fields
        if f.type in dtypes
    ]
    pandas = {"index_columns": [], "column_indexes": [], "columns": columns, "creator": {"library": "ripple"}}
    return {b"ripple.table_version": TABLE_VERSION.encode(), b"pandas": json.dumps(pandas).encode()}


class TableRows:
    """One table's rows in a task, column by column."""

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.columns: list[list[Any]] = [[] for _ in shape.schema]
        self._nfields = len(shape.fields)
        self._first_field = len(CONTEXT) + 1 + len(FLAGS)

    def __len__(self) -> int:
        return len(self.columns[0])

    def add(self, context: tuple[Any, ...], w: Writer, body: DeltaView) -> None:
        values: list[Any] = [None] * self._nfields
        delta = body.delta
        removed = False
        patch: list[str] | None = None
        if isinstance(delta, Patch):
            fields = w.fields
            patch = []
            for i, v in delta.updates:
                _name, col, conv = fields[i]
                values[col] = apply(conv, v)
                patch.append(self.shape.schema.field(self._first_field + col).name)
        elif isinstance(delta, Remove):
            removed = True
        else:
            row = delta.row
            for name, col, conv in w.fields:
                values[col] = apply(conv, row[name])
        cols = self.columns
        n = 0
        for n, v in enumerate(context):
            cols[n].append(v)
        cols[n + 1].append(apply(w.key, body.key))
        cols[n + 2].append(removed)
        cols[n + 3].append(patch)
        base = n + 4
        for i, v in enumerate(values):
            cols[base + i].append(v)

    def take(self) -> pa.RecordBatch:
        schema = self.shape.schema
        arrays = []
        for f, values in zip(schema, self.columns, strict=True):
            if f.type == TIME:
                # Microseconds, floored (the exact nanoseconds are time_ns).
                arrays.append(pa.array([None if t is None else t // 1000 for t in values], pa.int64()).cast(TIME))
            else:
                arrays.append(pa.array(values, f.type))
        self.columns = [[] for _ in schema]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)
