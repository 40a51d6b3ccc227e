"""The all-messages table's Parquet files, the same whoever wrote them: the
in-process writer (local.py) writes them with pyarrow, and each part file
Spark wrote is written again by pyarrow (`rewrite`, on the executors), with
what Spark's writer cannot add: ripple.table_version and pandas' nullable
dtypes for the integer and boolean columns (tables.table_metadata; pandas'
default read would make a nullable int64 column float64)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pyarrow as pa

from .arrow import ARROW_SCHEMA
from .tables import table_metadata


def file_schema(partition_by: str | None) -> pa.Schema:
    """A part file's columns (a partition column is in its directory
    names, not in the files) and metadata."""
    fields = [f for f in ARROW_SCHEMA if f.name != partition_by]
    return pa.schema(fields, metadata=table_metadata(fields))


def part_files(out: str) -> Iterator[str]:
    """The Parquet part files under OUT (readers skip hidden names: so does this)."""
    for root, dirs, files in os.walk(out):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        for name in sorted(files):
            if name.endswith(".parquet") and not name.startswith((".", "_")):
                yield os.path.join(root, name)


def rewrite(path: str, partition_by: str | None) -> None:
    """One part file Spark wrote, written again as the in-process writer
    writes it (under a hidden name, then renamed: a task run twice does
    it twice, and the file is always whole)."""
    import pyarrow.parquet as pq

    schema = file_schema(partition_by)
    table = pq.read_table(path, partitioning=None).select(schema.names).cast(schema)
    d, name = os.path.split(path)
    tmp = os.path.join(d, f".{name}.tmp")
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, path)
