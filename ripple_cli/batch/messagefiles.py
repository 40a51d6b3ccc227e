"""The all-messages table's Parquet files, the same whoever writes them
(pyarrow, in this process or in a Spark task: output.write_table): with
ripple.table_version and pandas' nullable dtypes for the integer and
boolean columns (tables.table_metadata; pandas' default read would make a
nullable int64 column float64)."""

from __future__ import annotations

import pyarrow as pa

from .arrow import ARROW_SCHEMA
from .tables import table_metadata


def file_schema(partition_by: str | None) -> pa.Schema:
    """A part file's columns (a partition column is in its directory
    names, not in the files) and metadata."""
    fields = [f for f in ARROW_SCHEMA if f.name != partition_by]
    return pa.schema(fields, metadata=table_metadata(fields))
