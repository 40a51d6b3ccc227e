"""The batch pipeline in this process, without Spark: the same plan, the
same tasks one after the other.  The reference the Spark runs are compared
with, and the in-process column of `make bench-spark`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ripple_cli.codec.schema import Schema

from .inputs import InputFile
from .plan import DEFAULT_SPLIT, Plan, decode_plan, scan_tasks
from .rows import Row, row_dict
from .scan import scan_task
from .tasks import ConnKey, RankedFrame, Settings, rotated_frames, rotated_rows, task_rows

if TYPE_CHECKING:
    import pyarrow as pa


def plan_local(
    inputs: Sequence[InputFile],
    settings: Settings,
    split_size: int = DEFAULT_SPLIT,
    file_schemas: Sequence[Schema] = (),
) -> Plan:
    tasks = scan_tasks(inputs, split_size)
    scans = [scan_task(t, settings) for t in tasks]
    return decode_plan(tasks, scans, settings, file_schemas)


def plan_rows(plan: Plan) -> Iterator[Row]:
    for task in plan.tasks:
        yield from task_rows(task, plan.settings)
    if plan.rotated:
        # The shuffle, in memory: each rotated connection's packets from all its files.
        frames: dict[ConnKey, list[RankedFrame]] = {}
        for part in plan.rotated_parts:
            for key, frame in rotated_frames(part, plan.settings):
                frames.setdefault(key, []).append(frame)
        for key, group in plan.rotated.items():
            yield from rotated_rows(group, frames.get(key, []), plan.settings)


def local_rows(
    inputs: Sequence[InputFile],
    settings: Settings,
    split_size: int = DEFAULT_SPLIT,
    file_schemas: Sequence[Schema] = (),
) -> Iterator[dict[str, Any]]:
    """The rows of the inputs, each a dict of its columns (for readers and tests)."""
    for row in plan_rows(plan_local(inputs, settings, split_size, file_schemas)):
        yield row_dict(row)


def local_batches(
    inputs: Sequence[InputFile],
    settings: Settings,
    split_size: int = DEFAULT_SPLIT,
    file_schemas: Sequence[Schema] = (),
) -> Iterator[pa.RecordBatch]:
    """The rows of the inputs as Arrow record batches, as the Spark tasks make them."""
    from .arrow import record_batches

    return record_batches(plan_rows(plan_local(inputs, settings, split_size, file_schemas)))


def write_local(plan: Plan, out: str, fmt: str, partition_by: str | None, overwrite: bool) -> tuple[int, int]:
    """`export` without Spark: the rows written to OUT, a local directory
    or one by URL (output.write_table).  Returns (rows, problems)."""
    from ripple_cli.sources.urls import remove

    from .arrow import record_batches
    from .output import check_partitioning, write_table

    check_partitioning(fmt, partition_by)
    counts = [0, 0]

    def counted() -> Iterator[pa.RecordBatch]:
        for batch in record_batches(plan_rows(plan)):
            counts[0] += batch.num_rows
            counts[1] += batch.num_rows - batch.column("problem").null_count
            yield batch

    if overwrite:
        remove(out)
    write_table(counted(), out, fmt, partition_by)
    return counts[0], counts[1]
