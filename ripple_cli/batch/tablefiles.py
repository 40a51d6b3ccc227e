"""One task's share of the typed tables, written as it goes: a Parquet part
file per table the task has rows for (zstd), the same from a Spark
executor and in-process.

A part file is named by the task's number (`part-NNNNN.parquet`) and
written under a hidden name first, renamed once whole: a task Spark runs
again writes the same file again, and readers (Spark, pyarrow) skip the
hidden names of a task still running or lost.  OUT may be a URL: each task
writes its own part files through OUT's filesystem (outdir.py), on an
object store under their final names at once (no atomic rename there).
"""

from __future__ import annotations

import contextlib
from functools import cached_property
from typing import TYPE_CHECKING
from urllib.parse import quote

from ripple_cli.codec.delta import CompiledSchema
from ripple_cli.codec.messages import DeltaView
from ripple_cli.protocols import registry
from ripple_cli.protocols.base import ProtoMessage

from .outdir import OutDir
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
        self.files: dict[tuple[str, str], tuple[str, str, pq.ParquetWriter]] = {}  # (path, where staged, writer)
        self.rows = 0
        self.siblings: dict[tuple[str, str], SiblingRows] = {}  # by (protocol, message type)
        # By the CompiledSchema itself (identity): hashing a Schema per Delta costs more than its row.
        self._writers: dict[CompiledSchema, Writer] = {}
        self._parts: dict[tuple[str, str], int] = {}  # sibling part files written so far, by table

    @cached_property
    def _dir(self) -> OutDir:
        return OutDir.of(self.out)  # here, in the task: its own environment's settings

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

        o = self._dir
        d = o.path(dir_name(table[0]), dir_name(table[1]))
        try:
            o.makedirs(d)
            k = self._parts.get(table, 0)
            self._parts[table] = k + 1
            path = f"{d}/part-{self.task:05d}-{k:04d}.parquet"
            staged = o.staged(path)
            pq.write_table(t.take(), staged, compression="zstd", filesystem=o.fs)
            o.publish(staged, path)
        except OSError as e:
            raise o.error(e) from None

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
        o = self._dir
        try:
            if f is None:
                d = o.path(RIPPLE_DIR, dir_name(where[0] + where[1]))
                o.makedirs(d)
                path = f"{d}/part-{self.task:05d}.parquet"
                staged = o.staged(path)
                writer = pq.ParquetWriter(staged, batch.schema, filesystem=o.fs, compression="zstd")
                f = self.files[where] = (path, staged, writer)
            f[2].write_batch(batch)
        except OSError as e:
            raise o.error(e) from None

    def close(self) -> None:
        for where, t in self.tables.items():
            if len(t):
                self._write(where, t)
        for path, staged, writer in self.files.values():
            try:
                writer.close()
                self._dir.publish(staged, path)
            except OSError as e:
                raise self._dir.error(e) from None
        for table, st in self.siblings.items():
            if len(st):
                self._write_sibling(table, st)
        self.files.clear()
        self.tables.clear()
        self.siblings.clear()

    def abort(self) -> None:
        """The task failed: the part files it was still writing are removed.
        Why: closing a writer publishes what it holds (on S3 and GCS an
        upload, even one cut short by the failure, completes when its stream
        is closed or collected), and a part file without its end would then
        sit under its final name; a retry of the task writes the same names
        again.  Best effort: the failure that brought us here is the one to
        report."""
        o = self._dir
        for _path, staged, writer in self.files.values():
            with contextlib.suppress(Exception):  # the task's own error is the one raised
                writer.close()
            with contextlib.suppress(Exception):
                o.fs.delete_file(staged)
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
    o = OutDir.of(out)
    try:
        for d in sibling_dirs(o, [name for name in registry.names() if name != RIPPLE_DIR]):
            unify(d, o)
    except OSError as e:
        raise o.error(e) from None
