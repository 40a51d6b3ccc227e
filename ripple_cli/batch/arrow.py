"""Rows as Arrow record batches: what the Spark tasks hand to the JVM
(mapInArrow, no per-row pickling) and what the in-process path writes."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice

import pyarrow as pa

from .rows import COLUMNS, Row
from .tables import TIME as TIMESTAMP

_TYPES = {"string": pa.string(), "int32": pa.int32(), "int64": pa.int64(), "bool": pa.bool_(), "timestamp": TIMESTAMP}
ARROW_SCHEMA = pa.schema([pa.field(name, _TYPES[t]) for name, t in COLUMNS])
BATCH_ROWS = 8192
# A timestamp as text in JSON lines and CSV: RFC 3339, microseconds, UTC
# (Spark's writers are given the same, job.TEXT_TIMESTAMP).
TEXT_TIMESTAMP = "%Y-%m-%dT%H:%M:%SZ"  # %S: seconds with the microseconds
TEXT_SCHEMA = pa.schema([pa.field(f.name, pa.string() if f.type == TIMESTAMP else f.type) for f in ARROW_SCHEMA])


def record_batch(rows: list[Row]) -> pa.RecordBatch:
    """Rows (tuples in column order) as one batch: transposed in one step,
    each column converted by Arrow at C speed (a timestamp column from its
    microseconds)."""
    columns = zip(*rows, strict=True) if rows else ((),) * len(ARROW_SCHEMA)
    arrays = [
        pa.array(values, pa.int64()).cast(f.type) if f.type == TIMESTAMP else pa.array(values, type=f.type)
        for values, f in zip(columns, ARROW_SCHEMA, strict=True)
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


def record_batches(rows: Iterable[Row], size: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    it = iter(rows)
    while chunk := list(islice(it, size)):
        yield record_batch(chunk)


def as_text_times(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch with its timestamps as RFC 3339 text: what JSON lines and
    CSV hold."""
    import pyarrow.compute as pc

    arrays = [pc.strftime(col, format=TEXT_TIMESTAMP) if col.type == TIMESTAMP else col for col in batch.columns]
    return pa.RecordBatch.from_arrays(arrays, schema=TEXT_SCHEMA)
