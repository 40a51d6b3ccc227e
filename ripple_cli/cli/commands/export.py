"""`ripple export`: capture sets to a table of decoded messages, on Spark."""

from __future__ import annotations

import os

import click

from ripple_cli.batch.rows import COLUMN_NAMES
from ripple_cli.batch.run import BatchArgs, BatchRun
from ripple_cli.cli.batch_options import batch_options
from ripple_cli.cli.options import OutputPath
from ripple_cli.errors import InputUnreadable, UsageProblem
from ripple_cli.sources.urls import check_parent, exists, is_url
from ripple_cli.terminal.environment import Environment

FORMATS = ("parquet", "jsonl", "csv")
DEFAULT_PARTITION = "event_hour"


@click.command()
@click.option(
    "--output",
    "-o",
    "out",
    required=True,
    type=OutputPath(),
    help="The directory to write (Spark's part files): a path or a URL (s3://, gs://, hdfs://, file://).",
)
@click.option(
    "--format",
    "-F",
    "fmt",
    type=click.Choice(FORMATS),
    default="parquet",
    show_default=True,
    help="Table format: parquet, jsonl (one JSON object a line) or csv with a header.",
)
@click.option(
    "--partition-by",
    metavar="COLUMN",
    default=None,
    help=f"Partition the output by this column; `none` for no partitioning. "
    f"Default: {DEFAULT_PARTITION} (the envelope time's hour) for parquet, none otherwise.",
)
@click.option("--overwrite", is_flag=True, help="Replace OUT if it exists (default: refuse).")
@batch_options
@click.pass_obj
def export(
    env: Environment,
    out: str,
    fmt: str,
    partition_by: str | None,
    overwrite: bool,
    batch: BatchArgs,
) -> int:
    """Decode INPUT... (files, directories, globs; raw streams, pcap and
    pcapng, mixed) into one row per message and per problem, written to OUT
    as a table, on Spark (embedded local Spark by default).

    Raw streams are split into byte ranges decoded in parallel; captures
    are decoded whole, one task each, and a connection continued across
    rotated capture files is reassembled across them.  A Handshake anywhere
    in the input serves every task.  The rows are the same whatever the
    parallelism.  Exit status 0 once OUT is written: problems found in the
    input are rows of the table (see the problem column).
    """
    if partition_by is None:
        partition_by = DEFAULT_PARTITION if fmt == "parquet" else "none"
    if partition_by != "none" and partition_by not in COLUMN_NAMES:
        raise UsageProblem(f"--partition-by: {partition_by!r} is not a column (columns: {', '.join(COLUMN_NAMES)})")
    if exists(out) and not overwrite:
        raise InputUnreadable(f"{out}: already exists (--overwrite replaces it)")
    if is_url(out):
        check_parent(out)
    else:
        parent = os.path.dirname(os.path.abspath(out))
        if not os.path.isdir(parent):
            raise InputUnreadable(f"{out}: directory {parent} does not exist")
    run = BatchRun(env, batch)
    partition = None if partition_by == "none" else partition_by
    # Absolute, as the inputs: the executors do not share the driver's working directory.
    where = out if is_url(out) else os.path.abspath(out)
    if run.without_spark("export"):
        from ripple_cli.batch.local import write_local

        plan = run.plan_in_process()
        rows, problems = write_local(plan, where, fmt, partition, overwrite)
        messages, how = rows - problems, "; in-process, without Spark"
    else:
        with run.spark() as (session, watcher):
            from ripple_cli.batch import job

            plan = run.plan(session, watcher)
            frame, counters = run.frame(session, plan)
            job.write_rows(frame, where, fmt, partition, overwrite)
        messages, problems, how = counters.messages, counters.problems.value, ""
    part = "" if partition_by == "none" else f", partitioned by {partition_by}"
    run.note(
        f"export: {run.describe_inputs(plan)}; {messages:,} messages, "
        f"{problems:,} problems -> {out} ({fmt}{part}{how}) in {run.elapsed():.1f} s"
    )
    return 0
