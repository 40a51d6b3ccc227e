"""The batch pipeline in this process, without Spark: the same plan, the
same tasks one after the other.  The reference the Spark runs are compared
with, and the in-process column of `make bench-spark`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ripple_cli.codec.schema import Schema

from .inputs import InputFile
from .plan import DEFAULT_SPLIT, Plan, decode_plan, scan_tasks
from .scan import scan_task
from .siblingcount import Tally
from .tasks import ConnKey, Item, RankedFrame, Settings, rotated_frames, rotated_rows, task_rows, typed_rows

if TYPE_CHECKING:
    import pyarrow as pa

    from .tablefiles import TypedOut


def plan_local(
    inputs: Sequence[InputFile],
    settings: Settings,
    split_size: int = DEFAULT_SPLIT,
    file_schemas: Sequence[Schema] = (),
) -> Plan:
    tasks = scan_tasks(inputs, split_size)
    scans = [scan_task(t, settings) for t in tasks]
    return decode_plan(tasks, scans, settings, file_schemas)


def plan_rows(plan: Plan, typed: TypedOut | None = None, tallies: dict[int, Tally] | None = None) -> Iterator[Item]:
    """Every task's rows (and the fast lane's batches of rows), in task order; with `typed`, each task also
    writes its typed part files (numbered as the Spark tasks number them);
    with `tallies`, each counts its sibling protocols' messages there
    (under the same numbers)."""

    def tally(i: int) -> Tally | None:
        return None if tallies is None else tallies.setdefault(i, {})

    for i, task in enumerate(plan.tasks):
        t = None if typed is None else typed.task(i)
        yield from typed_rows(task_rows(task, plan.settings, t, tally(i)), t)
    if plan.rotated:
        # The shuffle, in memory: each rotated connection's packets from all its files.
        frames: dict[ConnKey, list[RankedFrame]] = {}
        for part in plan.rotated_parts:
            for key, frame in rotated_frames(part, plan.settings):
                frames.setdefault(key, []).append(frame)
        for j, (key, group) in enumerate(plan.rotated.items()):
            t = None if typed is None else typed.task(len(plan.tasks) + j)
            rows = rotated_rows(group, frames.get(key, []), plan.settings, t, tally(len(plan.tasks) + j))
            yield from typed_rows(rows, t)


def local_rows(
    inputs: Sequence[InputFile],
    settings: Settings,
    split_size: int = DEFAULT_SPLIT,
    file_schemas: Sequence[Schema] = (),
) -> Iterator[dict[str, Any]]:
    """The rows of the inputs, each a dict of its columns as a reader of the
    table gets them (timestamps as datetimes; for readers and tests)."""
    for batch in local_batches(inputs, settings, split_size, file_schemas):
        yield from batch.to_pylist()


def local_batches(
    inputs: Sequence[InputFile],
    settings: Settings,
    split_size: int = DEFAULT_SPLIT,
    file_schemas: Sequence[Schema] = (),
) -> Iterator[pa.RecordBatch]:
    """The rows of the inputs as Arrow record batches, as the Spark tasks make them."""
    from .arrow import record_batches

    return record_batches(plan_rows(plan_local(inputs, settings, split_size, file_schemas)))


def write_local(
    plan: Plan, out: str, fmt: str, partition_by: str | None, overwrite: bool, typed: TypedOut | None = None
) -> tuple[int, int]:
    """`export` without Spark: the rows written to OUT, a local directory
    or one by URL (output.write_table).  Returns (rows, problems)."""
    from ripple_cli.sources.urls import remove

    from .arrow import counted, record_batches
    from .output import check_partitioning, write_table

    check_partitioning(fmt, partition_by)
    counts = [0, 0]

    if overwrite:
        remove(out)
    write_table(counted(record_batches(plan_rows(plan, typed)), counts), out, fmt, partition_by)
    return counts[0], counts[1]
