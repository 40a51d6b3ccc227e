"""Rows as Arrow record batches: what the Spark tasks hand to the JVM
(mapInArrow, no per-row pickling) and what the in-process path writes."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice

import pyarrow as pa

from .rows import COLUMNS, Row

_TYPES = {"string": pa.string(), "int32": pa.int32(), "int64": pa.int64(), "bool": pa.bool_()}
ARROW_SCHEMA = pa.schema([pa.field(name, _TYPES[t]) for name, t in COLUMNS])
BATCH_ROWS = 8192


def record_batches(rows: Iterable[Row], size: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    it = iter(rows)
    while chunk := list(islice(it, size)):
        yield pa.RecordBatch.from_pylist(chunk, schema=ARROW_SCHEMA)


def table(rows: Iterable[Row]) -> pa.Table:
    return pa.Table.from_batches(list(record_batches(rows)), schema=ARROW_SCHEMA)
