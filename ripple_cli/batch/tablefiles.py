"""One task's share of the typed tables, written as it goes: a Parquet part
file per table the task has rows for (zstd), the same from a Spark
executor and in-process.

A part file is named by the task's number (`part-NNNNN.parquet`) and
written under a hidden name first, renamed once whole: a task Spark runs
again writes the same file again, and readers (Spark, pyarrow) skip the
hidden names of a task still running or lost.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import quote

from ripple_cli.codec.delta import CompiledSchema
from ripple_cli.codec.messages import DeltaView
from ripple_cli.protocols import registry
from ripple_cli.protocols.base import ProtoMessage

from .rows import COLUMN_NAMES, Row, Where
from .siblings import SiblingRows, sibling_dirs, unify
from .tables import CONTEXT, Layout, TableRows, Writer

if TYPE_CHECKING:
    import pyarrow.parquet as pq

BATCH_ROWS = 8192
RIPPLE_DIR = "ripple"  # OUT/ripple/OUTPUT/: the typed tables of Ripple's source outputs

# Each context column's place in an all-messages row (time: the nanoseconds, made a timestamp later).
_CONTEXT_INDEX = tuple(COLUMN_NAMES.index("time_ns" if f.name == "time" else f.name) for f in CONTEXT)
_OUTPUT = COLUMN_NAMES.index("source_output")


def dir_name(name: str) -> str:
    """A table's directory: the output's name, %-escaped where a file name
    could not hold it, and never hidden from readers (a leading . or _)."""
    text = quote(name, safe="@~_-.+=,")
    if not text or text in (".", "..") or text[0] in "._":
        text = f"%{ord(text[0]) if text else 0:02X}{text[1:]}" if text else "%00"
    return text


class TaskTables:
    """The rows one task gives each typed table; `close` writes the rest."""

    def __init__(self, out: str, layout: Layout, task: int) -> None:
        self.out = out
        self.layout = layout
        self.task = task
        self.tables: dict[tuple[str, str], TableRows] = {}
        self.files: dict[tuple[str, str], tuple[str, str, pq.ParquetWriter]] = {}  # (path, its hidden name, writer)
        self.rows = 0
        self.siblings: dict[tuple[str, str], SiblingRows] = {}  # by (protocol, message type)
        # By the CompiledSchema itself (identity): hashing a Schema per Delta costs more than its row.
        self._writers: dict[CompiledSchema, Writer] = {}
        self._parts: dict[tuple[str, str], int] = {}  # sibling part files written so far, by table

    def sibling(self, where: Where, time_ns: int | None, msg: ProtoMessage) -> None:
        """A sibling protocol's message, to its (protocol, type) table."""
        table = (msg.protocol, msg.type)
        t = self.siblings.get(table)
        if t is None:
            t = self.siblings[table] = SiblingRows()
        t.add((*where.columns(), time_ns, time_ns, msg.offset, msg.size), msg)
        if len(t) >= BATCH_ROWS:
            self._write_sibling(table, t)

    def _write_sibling(self, table: tuple[str, str], t: SiblingRows) -> None:
        # Each batch a file of its own: its column types are its rows' (unify
        # makes the files agree once every task is done).
        import pyarrow.parquet as pq

        d = os.path.join(self.out, dir_name(table[0]), dir_name(table[1]))
        os.makedirs(d, exist_ok=True)
        k = self._parts.get(table, 0)
        self._parts[table] = k + 1
        name = f"part-{self.task:05d}-{k:04d}.parquet"
        tmp = os.path.join(d, f".{name}.tmp")
        pq.write_table(t.take(), tmp, compression="zstd")
        os.replace(tmp, os.path.join(d, name))

    def add(self, row: Row, body: DeltaView) -> None:
        output = row[_OUTPUT]
        w = self._writers.get(body.schema)
        if w is None:
            w = self._writers[body.schema] = self.layout.writer(body.schema.schema)
        where = (output, w.shape.suffix)
        t = self.tables.get(where)
        if t is None:
            t = self.tables[where] = TableRows(w.shape)
        t.add(tuple(row[i] for i in _CONTEXT_INDEX), w, body)
        self.rows += 1
        if len(t) >= BATCH_ROWS:
            self._write(where, t)

    def _write(self, where: tuple[str, str], t: TableRows) -> None:
        import pyarrow.parquet as pq

        batch = t.take()
        f = self.files.get(where)
        if f is None:
            d = os.path.join(self.out, RIPPLE_DIR, dir_name(where[0] + where[1]))
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, f"part-{self.task:05d}.parquet")
            tmp = os.path.join(d, f".part-{self.task:05d}.parquet.tmp")
            f = self.files[where] = (path, tmp, pq.ParquetWriter(tmp, batch.schema, compression="zstd"))
        f[2].write_batch(batch)

    def close(self) -> None:
        for where, t in self.tables.items():
            if len(t):
                self._write(where, t)
        for path, tmp, writer in self.files.values():
            writer.close()
            os.replace(tmp, path)
        for table, st in self.siblings.items():
            if len(st):
                self._write_sibling(table, st)
        self.files.clear()
        self.tables.clear()
        self.siblings.clear()


class TypedOut:
    """Where the typed tables go and their layout: handed to every task
    (picklable), which makes its own `TaskTables` from it."""

    def __init__(self, out: str, layout: Layout) -> None:
        self.out = out
        self.layout = layout

    def task(self, number: int) -> TaskTables:
        return TaskTables(self.out, self.layout, number)


def finish_tables(out: str) -> None:
    """Once every task is done: the sibling tables' part files made to agree."""
    for d in sibling_dirs(out, [name for name in registry.names() if name != RIPPLE_DIR]):
        unify(d)
