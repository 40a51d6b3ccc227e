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


def record_batch(rows: list[Row]) -> pa.RecordBatch:
    """Rows (tuples in column order) as one batch: transposed in one step,
    each column converted by Arrow at C speed."""
    columns = zip(*rows, strict=True) if rows else ((),) * len(ARROW_SCHEMA)
    arrays = [pa.array(values, type=f.type) for values, f in zip(columns, ARROW_SCHEMA, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


def record_batches(rows: Iterable[Row], size: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    it = iter(rows)
    while chunk := list(islice(it, size)):
        yield record_batch(chunk)
