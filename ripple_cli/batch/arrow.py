"""Rows as Arrow record batches: what the Spark tasks hand to the JVM
(mapInArrow, no per-row pickling) and what the in-process path writes."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from ripple_cli.codec.fast.layout import ROW_BITMAPS, ROW_INT64, ROW_STRINGS

from .rows import COLUMN_NAMES, COLUMNS, Row, RowBuilder
from .tables import TIME as TIMESTAMP

if TYPE_CHECKING:
    from ripple_cli.protocols.ripple.lane import LaneRun

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


def record_batches(items: Iterable[Row | pa.RecordBatch], size: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """Rows, and batches the fast lane made (`run_batch`), in their order, as
    batches of about `size` rows: a capture's lane makes a batch per
    packet, too small to write one by one."""
    rows: list[Row] = []
    pieces: list[pa.RecordBatch] = []
    held = 0
    for item in items:
        if isinstance(item, tuple):
            rows.append(item)
            held += 1
        else:
            if rows:
                pieces.append(record_batch(rows))
                rows = []
            if not pieces and item.num_rows >= size // 2:
                yield item  # a raw stream's run: big enough as it is, not copied
                continue
            pieces.append(item)
            held += item.num_rows
        if held >= size:
            if rows:
                pieces.append(record_batch(rows))
                rows = []
            yield pieces[0] if len(pieces) == 1 else pa.concat_batches(pieces)
            pieces = []
            held = 0
    if rows:
        pieces.append(record_batch(rows))
    if pieces:
        yield pieces[0] if len(pieces) == 1 else pa.concat_batches(pieces)


_INT64 = {name: i for i, name in enumerate(ROW_INT64)}
_STRINGS = {name: i for i, name in enumerate(ROW_STRINGS)}
_BITMAP = {name: i for i, name in enumerate(ROW_BITMAPS)}


def counted(batches: Iterable[pa.RecordBatch], counts: list[int]) -> Iterator[pa.RecordBatch]:
    """The batches, each one's rows added to counts[0] and its problems to
    counts[1] as it goes by (what export reports)."""
    for batch in batches:
        counts[0] += batch.num_rows
        counts[1] += batch.num_rows - batch.column("problem").null_count
        yield batch


def batch_rows(batch: pa.RecordBatch) -> Iterator[Row]:
    """A batch's rows as tuples, timestamps as their microseconds (as a row
    holds them)."""
    columns = [(c.cast(pa.int64()) if c.type == TIMESTAMP else c).to_pylist() for c in batch.columns]
    return zip(*columns, strict=True)


def rows_before(batch: pa.RecordBatch, end: int) -> pa.RecordBatch:
    """The rows of a run's batch whose offset is before `end` (offsets grow)."""
    return batch.slice(0, pc.sum(pc.less(batch.column("offset"), end)).as_py() or 0)


_CONSTANTS: dict[tuple[object, pa.DataType], pa.Array] = {}
_CONSTANTS_KEPT = 256


def constant(value: object, type_: pa.DataType, n: int) -> pa.Array:
    """n times the value (None: null): a slice of one array made once for
    the value, and again only when a longer one is asked for (every run
    has its file name, connection, capture time... n times)."""
    made = _CONSTANTS.get((value, type_))
    if made is None or len(made) < n:
        if len(_CONSTANTS) >= _CONSTANTS_KEPT:
            _CONSTANTS.clear()
        size = max(n, 2 * len(made)) if made is not None else n
        made = pa.nulls(size, type_) if value is None else pa.repeat(pa.scalar(value, type_), size)
        _CONSTANTS[(value, type_)] = made
    return made.slice(0, n)


def run_batch(builder: RowBuilder, run: LaneRun, capture_time_ns: int | None) -> pa.RecordBatch:
    """The rows of a fast-lane run (LaneKind.ROWS) as one batch: the
    scanner's buffers (codec/fast/rowsout.h) wrapped as they are, the
    columns all its rows share from the builder, no Python value made per
    row.  The same values as `builder.message` gives each message
    (tests/property/test_prop_rows.py)."""
    assert run.columns is not None
    n, ints, strings, bitmaps = run.columns
    bits = [pa.py_buffer(b) for b in bitmaps]
    has_delta = bits[_BITMAP["has_delta"]]

    def ints_of(name: str, type_: pa.DataType, valid: pa.Buffer | None = None) -> pa.Array:
        return pa.Array.from_buffers(type_, n, [valid, pa.py_buffer(ints[_INT64[name]])])

    def text_of(name: str, valid: pa.Buffer | None = None) -> pa.Array:
        offsets, data = strings[_STRINGS[name]]
        return pa.Array.from_buffers(pa.string(), n, [valid, pa.py_buffer(offsets), pa.py_buffer(data)])

    def same(value: object, type_: pa.DataType) -> pa.Array:
        return constant(value, type_, n)

    own = bitmaps[_BITMAP["own_worker"]]
    if not own.strip(b"\0"):  # no Heartbeat or Checkpoint_ack: the run's worker
        worker = same(builder.worker_text, pa.string())
    else:
        worker = text_of("worker", bits[_BITMAP["own_worker"]])
        if builder.worker_text is not None:
            worker = pc.fill_null(worker, builder.worker_text)
    # capture_file ... community_id; a problem's columns (not there: null)
    shared = dict(zip(COLUMN_NAMES[:6], builder.base, strict=True))
    arrays: dict[str, pa.Array] = {
        "offset": ints_of("offset", pa.int64()),
        "capture_time_ns": same(capture_time_ns, pa.int64()),
        "seq": ints_of("seq", pa.int64()),
        "time_ns": ints_of("time_ns", pa.int64()),
        "time": ints_of("time", TIMESTAMP),
        "schema": text_of("schema"),
        "flags": same(0, pa.int32()),  # the lane takes flags 0 only
        "type": text_of("type"),
        "size": ints_of("size", pa.int64()),
        "payload_length": ints_of("payload_length", pa.int64()),
        "crc_ok": same(True, pa.bool_()),
        "worker": worker,
        "source_output": text_of("source_output", has_delta),
        "key": text_of("key", has_delta),
        "delta": text_of("delta", has_delta),
        "schema_known": pa.Array.from_buffers(pa.bool_(), n, [has_delta, bits[_BITMAP["schema_known"]]]),
        "sequence_no": ints_of("sequence_no", pa.int64(), has_delta),
        "watermark_ns": ints_of("watermark_ns", pa.int64(), bits[_BITMAP["has_watermark"]]),
        "msg_json": text_of("msg_json", bits[_BITMAP["has_msg_json"]]),
        "event_hour": ints_of("event_hour", TIMESTAMP),
    }
    columns = [arrays[f.name] if f.name in arrays else same(shared.get(f.name), f.type) for f in ARROW_SCHEMA]
    return pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA)


def as_text_times(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch with its timestamps as RFC 3339 text: what JSON lines and
    CSV hold."""
    import pyarrow.compute as pc

    arrays = [pc.strftime(col, format=TEXT_TIMESTAMP) if col.type == TIMESTAMP else col for col in batch.columns]
    return pa.RecordBatch.from_arrays(arrays, schema=TEXT_SCHEMA)
