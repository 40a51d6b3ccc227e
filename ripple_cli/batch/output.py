"""Where export's table goes, written by pyarrow: a local directory or one
by URL (s3://, gs://, hdfs://, file://), laid out as Spark lays out its
own (part files; a partition column as COLUMN=VALUE directories, left out
of the files).  The in-process run writes it all from this process; a
Spark run with an output by URL has each executor write its own part
files (PySpark ships no S3 or GCS connector for Spark's own writer)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from ripple_cli.errors import UsageProblem
from ripple_cli.sources.urls import destination, url_error

if TYPE_CHECKING:
    import pyarrow as pa

EXTENSIONS = {"parquet": "parquet", "jsonl": "json", "csv": "csv"}


def check_partitioning(fmt: str, partition_by: str | None) -> None:
    if partition_by and fmt != "parquet":
        raise UsageProblem(f"--partition-by {partition_by}: -F {fmt} is partitioned on Spark only (parquet is without)")


def write_table(
    batches: Iterable[pa.RecordBatch],
    out: str,
    fmt: str,
    partition_by: str | None,
    part: str = "part-00000",
    empty: bool = True,
) -> None:
    """The batches as part files named PART... under OUT (created if
    need be; other part files already there are left: each Spark task
    writes its own).  `empty`: a JSON or CSV part file even for no rows
    (the one file of an in-process run), or none (a Spark task's)."""
    import pyarrow as pa

    from .arrow import ARROW_SCHEMA, TEXT_SCHEMA, as_text_times
    from .messagefiles import file_schema

    check_partitioning(fmt, partition_by)
    fs, path = destination(out)
    try:
        if fmt == "parquet":
            import pyarrow.dataset as ds

            partitioning = None
            if partition_by:
                partitioning = ds.partitioning(pa.schema([ARROW_SCHEMA.field(partition_by)]), flavor="hive")
            ds.write_dataset(
                iter(batches),
                path,
                # What Spark's part files are given once written (messagefiles.py).
                schema=ARROW_SCHEMA.with_metadata(file_schema(partition_by).metadata),
                format="parquet",
                file_options=ds.ParquetFileFormat().make_write_options(compression="zstd"),
                filesystem=fs,
                partitioning=partitioning,
                basename_template=part + "-{i}.parquet",
                existing_data_behavior="overwrite_or_ignore",
            )
            return
        fs.create_dir(path, recursive=True)
        batches = (b for b in batches if b.num_rows)
        first = next(batches, None)
        if first is None and not empty:
            return
        batches = (as_text_times(b) for b in itertools.chain([first] if first is not None else [], batches))
        with fs.open_output_stream(f"{path.rstrip('/')}/{part}.{EXTENSIONS[fmt]}") as f:
            if fmt == "jsonl":
                for line in _json_lines(batches):
                    f.write(line)
            else:
                import pyarrow.csv as pcsv

                with pcsv.CSVWriter(f, TEXT_SCHEMA) as writer:
                    for batch in batches:
                        writer.write_batch(batch)
    except OSError as e:
        raise url_error(out, e) from None


def _json_lines(batches: Iterable[pa.RecordBatch]) -> Iterator[bytes]:
    for batch in batches:
        for row in batch.to_pylist():
            # As Spark writes JSON: null columns left out.
            text = json.dumps(
                {k: v for k, v in row.items() if v is not None}, ensure_ascii=False, separators=(",", ":")
            )
            yield text.encode() + b"\n"
