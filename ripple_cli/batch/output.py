"""Where export's table goes, written by pyarrow: a local directory or one
by URL (s3://, gs://, hdfs://, file://), laid out as Spark lays out its
own (part files; a partition column as COLUMN=VALUE directories, left out
of the files).  The in-process run writes it all from this process; a
Spark run with an output by URL has each executor write its own part
files (PySpark ships no S3 or GCS connector for Spark's own writer)."""

from __future__ import annotations

import itertools
import json
import posixpath
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from ripple_cli.errors import UsageProblem
from ripple_cli.sources.urls import destination, url_error

if TYPE_CHECKING:
    import pyarrow as pa

EXTENSIONS = {"parquet": "parquet", "jsonl": "json", "csv": "csv"}
ROW_GROUP_ROWS = 1 << 16


def check_partitioning(fmt: str, partition_by: str | None, out_by_url: str | None = None) -> None:
    """Only Parquet is partitioned by pyarrow's writer: in-process, and on
    Spark to an object store (`out_by_url`: Spark's own writer, which
    partitions JSON lines and CSV, writes local paths and file:// only)."""
    if not partition_by or fmt == "parquet":
        return
    if out_by_url is not None:
        raise UsageProblem(
            f"--partition-by {partition_by}: -F {fmt} to {out_by_url} is not partitioned (Spark partitions JSON lines "
            "and CSV only in local paths and file:// URLs): use -F parquet, or --partition-by none"
        )
    raise UsageProblem(
        f"--partition-by {partition_by}: -F {fmt} is partitioned on Spark only: give --master "
        "(e.g. local[*]), or --partition-by none; in-process, only parquet is partitioned"
    )


def make_dir(out: str) -> None:
    """OUT, created if need be (with its parents)."""
    fs, path = destination(out)
    try:
        fs.create_dir(path, recursive=True)
    except OSError as e:
        raise url_error(out, e) from None


def write_table(
    batches: Iterable[pa.RecordBatch],
    out: str,
    fmt: str,
    partition_by: str | None,
    part: str = "part-00000",
    empty: bool = True,
    threads: bool = True,
) -> None:
    """The batches as part files named PART... under OUT (created if
    need be; other part files already there are left: each Spark task
    writes its own).  `empty`: a JSON or CSV part file even for no rows
    (the one file of an in-process run), or none (a Spark task's).
    `threads`: compress and write on pyarrow's threads beside this one (a
    Spark task has the cores Spark gave it, and writes on its own)."""
    import pyarrow as pa

    from .arrow import ARROW_SCHEMA, TEXT_SCHEMA, as_text_times
    from .messagefiles import file_schema
    from .outdir import OutDir

    check_partitioning(fmt, partition_by)
    outdir = OutDir.of(out)
    fs, path = outdir.fs, outdir.root
    try:
        # OUT is there once the table is written, with no row too (pyarrow
        # makes no directory for a dataset of no batch).
        fs.create_dir(path, recursive=True)
        if fmt == "parquet":
            import pyarrow.dataset as ds

            partitioning = None
            schema = ARROW_SCHEMA
            if partition_by:
                field = ARROW_SCHEMA.field(partition_by)
                if pa.types.is_timestamp(field.type):
                    # Its directory names as Spark writes them (which
                    # Spark reads back as timestamps), not pyarrow's.
                    field = field.with_type(pa.string())
                    schema = schema.set(schema.get_field_index(partition_by), field)
                    batches = (spark_times(b, partition_by) for b in batches)
                partitioning = ds.partitioning(pa.schema([field]), flavor="hive")
            # Each part file under a hidden name (readers skip it) until it
            # is whole, where a rename is atomic (OutDir.staged): a run cut
            # short leaves no part file that reads as a whole one.
            written: list[str] = []
            hidden = outdir.renames
            ds.write_dataset(
                iter(batches),
                path,
                # What the part files hold (messagefiles.py).
                schema=schema.with_metadata(file_schema(partition_by).metadata),
                format="parquet",
                file_options=ds.ParquetFileFormat().make_write_options(compression="zstd"),
                filesystem=fs,
                partitioning=partitioning,
                basename_template=("." if hidden else "") + part + "-{i}.parquet" + (".tmp" if hidden else ""),
                file_visitor=lambda f: written.append(f.path),
                existing_data_behavior="overwrite_or_ignore",
                # Row groups of the batches gathered, not one a batch (a
                # capture's lane makes a batch a packet): smaller files,
                # and 40% less time on the bench stream.
                min_rows_per_group=ROW_GROUP_ROWS,
                use_threads=threads,
            )
            for staged in written:
                d, name = posixpath.split(staged)
                outdir.publish(staged, f"{d}/{name.removeprefix('.').removesuffix('.tmp')}" if hidden else staged)
            return
        batches = (b for b in batches if b.num_rows)
        first = next(batches, None)
        if first is None and not empty:
            return
        batches = (as_text_times(b) for b in itertools.chain([first] if first is not None else [], batches))
        final = f"{path.rstrip('/')}/{part}.{EXTENSIONS[fmt]}"
        staged = outdir.staged(final)
        with fs.open_output_stream(staged) as f:
            if fmt == "jsonl":
                for line in _json_lines(batches):
                    f.write(line)
            else:
                import pyarrow.csv as pcsv

                with pcsv.CSVWriter(f, TEXT_SCHEMA) as writer:
                    for batch in batches:
                        writer.write_batch(batch)
        outdir.publish(staged, final)
    except OSError as e:
        raise url_error(out, e) from None


def spark_times(batch: pa.RecordBatch, name: str) -> pa.RecordBatch:
    """The batch with its timestamp column `name` as the text Spark names a
    partition by: 2024-06-20 16:00:00, and the microseconds when there are
    some (.5, .033093: trailing zeros left out)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = batch.column(name)
    # %S of a timestamp[us] has the microseconds: the first 19 characters
    # are up to the whole seconds (years 1 to 9999, as the column holds).
    text = pc.utf8_slice_codeunits(pc.strftime(col, format="%Y-%m-%d %H:%M:%S"), 0, 19)
    micros = pc.cast(col, pa.int64())
    frac = pc.subtract(micros, pc.multiply(pc.divide(micros, 1_000_000), 1_000_000))  # divide truncates
    frac = pc.if_else(pc.less(frac, 0), pc.add(frac, 1_000_000), frac)
    digits = pc.utf8_rtrim(pc.utf8_lpad(pc.cast(frac, pa.string()), 6, "0"), "0")
    text = pc.if_else(pc.equal(frac, 0), text, pc.binary_join_element_wise(text, digits, "."))
    return batch.set_column(batch.schema.get_field_index(name), pa.field(name, pa.string()), text)


def _json_lines(batches: Iterable[pa.RecordBatch]) -> Iterator[bytes]:
    for batch in batches:
        for row in batch.to_pylist():
            # As Spark writes JSON: null columns left out.
            text = json.dumps(
                {k: v for k, v in row.items() if v is not None}, ensure_ascii=False, separators=(",", ":")
            )
            yield text.encode() + b"\n"
