"""One row per decoded message or problem: the table `ripple export` writes.

Pure: a `RowBuilder` (one per stream direction) turns the decoder's
`Message`s and `Problem`s into rows.  The in-process path and the Spark
tasks both build their rows here, so the two cannot disagree on a value.

A row is a tuple of the values of `COLUMNS`, in that order: built at once,
with no per-column name lookups, and turned into Arrow columns by one
transpose (arrow.py); `row_dict` names its values for readers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ripple_cli.capture.events import StreamId
from ripple_cli.codec import binprot as bp
from ripple_cli.codec.delta import CompiledSchema
from ripple_cli.codec.fast import speedups
from ripple_cli.codec.fast.program import compile_program
from ripple_cli.codec.jsonview import body_to_json, type_name
from ripple_cli.codec.messages import CheckpointAck, DeltaMsg, DeltaView, Handshake, Heartbeat
from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.ripple.message import Message
from ripple_cli.sexp.write import to_string

if TYPE_CHECKING:
    from ripple_cli.codec.fast._speedups import Program

    from .tablefiles import TaskTables

Row = tuple[Any, ...]  # the values of COLUMNS, in order

# (name, type) in table order.  Types are Arrow/Spark names: string, int32,
# int64, bool, timestamp (UTC, microseconds; a row holds the microseconds
# since the epoch, arrow.py makes them timestamps).  Times are also kept as
# nanoseconds (int64): Spark's timestamps stop at microseconds, and the
# envelope's clock does not.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("capture_file", "string"),  # the input file, as given on the command line (or found in a directory)
    ("connection", "int32"),  # connection number in the capture (as decode --list-streams); null: raw stream
    ("direction", "string"),  # c2s / s2c; null: raw stream
    ("src", "string"),  # sender endpoint, captures only
    ("dst", "string"),
    ("community_id", "string"),  # the connection's Community ID (v1, --community-id-seed); null: raw stream
    ("offset", "int64"),  # byte offset in the stream (the direction's reassembled bytes for a capture)
    ("capture_time_ns", "int64"),  # capture time of the packet that completed the message
    ("seq", "int64"),  # envelope fields...
    ("time_ns", "int64"),
    ("time", "timestamp"),  # the envelope time, floored to the microsecond (time_ns: exact)
    ("schema", "string"),
    ("flags", "int32"),
    ("type", "string"),
    ("size", "int64"),  # whole envelope, header and CRC included
    ("payload_length", "int64"),
    ("crc_ok", "bool"),  # true for every message; false for a CRC mismatch row; null for other problems
    ("problem", "string"),  # the problem kind (codec/problems.py KINDS, CAPTURE_KINDS); null for messages
    ("problem_detail", "string"),
    ("severity", "string"),
    ("skipped", "int64"),  # bytes passed over after the problem
    ("worker", "string"),  # the worker of the stream's last Handshake (Heartbeat and Checkpoint_ack: their own)
    ("source_output", "string"),  # Delta fields...
    # Each once, as canonical s-expressions (sexplib's one-line form, as
    # decode prints them); the typed values are the typed tables' columns
    # (export --tables).
    ("key", "string"),
    ("delta", "string"),
    ("schema_known", "bool"),  # false: key and delta are the raw bytes (no schema for the fingerprint)
    ("sequence_no", "int64"),
    ("watermark_ns", "int64"),
    ("msg_json", "string"),  # the payload as typed JSON for the other message types
    ("event_hour", "timestamp"),  # the envelope time's hour (UTC): the default Parquet partition
)
COLUMN_NAMES = tuple(name for name, _ in COLUMNS)
COLUMN_TYPES = dict(COLUMNS)
TIMESTAMPS = tuple(i for i, (_, t) in enumerate(COLUMNS) if t == "timestamp")
PROBLEM = COLUMN_NAMES.index("problem")


def row_dict(row: Row) -> dict[str, Any]:
    return dict(zip(COLUMN_NAMES, row, strict=True))


def _text(b: bytes) -> str:
    # Parquet and CSV want valid UTF-8; what is not shows as \xNN escapes,
    # as decode's JSON does.
    return b.decode("utf-8", "backslashreplace")


def clean_text(s: str) -> str:
    """Text made from wire names with surrogateescape (codec/schema.py
    `text`) as valid UTF-8: the bytes that were not as \\xNN escapes."""
    try:
        s.encode()
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return s


# json.dumps with these arguments, without building an encoder per call
# (check_circular off: decoded values are trees).
_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False).encode


def delta_bytes(payload: bytes) -> tuple[bytes, bytes]:
    """A Delta payload's key and delta, still encoded.  Only for payloads
    the decoder has read whole: nothing is checked twice."""
    n, pos = bp.read_nat0(payload, 0)  # source_output
    n, pos = bp.read_nat0(payload, pos + n)
    key = payload[pos : pos + n]
    n, pos = bp.read_nat0(payload, pos + n)
    return key, payload[pos : pos + n]


# The times a timestamp column holds: years 1 to 9999, as Spark's and
# Python's (a time outside is null there; time_ns still has it).
_FIRST_NS = -62_135_596_800 * 1_000_000_000
_END_NS = 253_402_300_800 * 1_000_000_000
_HOUR_NS = 3600 * 1_000_000_000


def micros(time_ns: int | None) -> int | None:
    """A `timestamp` column's value: the microseconds, floored."""
    if time_ns is None or not _FIRST_NS <= time_ns < _END_NS:
        return None
    return time_ns // 1000


def event_hour(time_ns: int | None) -> int | None:
    """The hour of a time, as a `timestamp` column's value."""
    if time_ns is None or not _FIRST_NS <= time_ns < _END_NS:
        return None
    return (time_ns - time_ns % _HOUR_NS) // 1000


@dataclass(frozen=True, slots=True)
class Where:
    """Where a stream's rows come from: the first columns of each row."""

    capture_file: str
    stream: StreamId | None = None
    community_id: str | None = None  # the Origin's (the Demux's seed): None for a raw stream

    def __post_init__(self) -> None:
        # A file name that is not UTF-8 (surrogateescape'd by the OS layer):
        # its bytes as \xNN escapes, as the wire's names, for Parquet,
        # CSV and SQLite, which take UTF-8 only (it was exit 70).
        object.__setattr__(self, "capture_file", clean_text(self.capture_file))

    def columns(self) -> Row:
        """capture_file, connection, direction, src, dst, community_id."""
        st = self.stream
        if st is None:
            return (self.capture_file, None, None, None, None, None)
        src, dst = (st.client, st.server) if st.from_client else (st.server, st.client)
        return (self.capture_file, st.connection, st.direction, str(src), str(dst), self.community_id)


# The columns a message row leaves empty: problem, problem_detail, severity,
# skipped; and those of a Delta, for the other types.
_NO_PROBLEM = (None, None, None, None)
_NO_DELTA = (None,) * 6
KEY_CACHE = 1 << 16  # keys whose text a builder keeps


class RowBuilder:
    """The rows of one stream direction, in stream order.  It follows the
    stream's Handshakes to give each row its worker; `worker` seeds it when
    the stream is entered part-way (a byte range of a large file)."""

    def __init__(self, where: Where, worker: bytes | None = None, typed: TaskTables | None = None) -> None:
        self.where = where
        self.typed = typed  # export --tables: each decoded Delta also goes to its typed table
        self.base = where.columns()  # the first columns of each row (Where.columns)
        self.worker = worker
        # The worker column of its rows but a Heartbeat's or Checkpoint_ack's.
        self.worker_text = None if worker is None else _text(worker)
        # Keyed by the CompiledSchema itself (identity): holding it keeps it
        # alive, so a key is never reused for another schema.
        self._programs: dict[CompiledSchema, Program | None] = {}
        # A key's canonical text, by schema and encoded key: keys repeat (the
        # same instruments, accounts, desks), and printing them costs more
        # than looking them up.
        self._keys: dict[tuple[CompiledSchema, bytes], str] = {}
        self._fingerprints: dict[bytes, str] = {}

    def place(self, where: Where) -> None:
        """The rows from now on are attributed to `where` (a rotated
        connection's rows, to the file each part was captured in)."""
        if where != self.where:
            self.where = where
            self.base = where.columns()

    def _set_worker(self, worker: bytes) -> None:
        if worker != self.worker:
            self.worker = worker
            self.worker_text = _text(worker)

    def _fingerprint(self, fingerprint: bytes) -> str:
        text = self._fingerprints.get(fingerprint)
        if text is None:
            text = self._fingerprints[fingerprint] = _text(fingerprint)
        return text

    def _program(self, schema: CompiledSchema) -> Program | None:
        # Looked up once per schema: hashing a Schema (compile_program's
        # cache key) costs more than printing a row.
        if schema not in self._programs:
            self._programs[schema] = compile_program(schema.schema) if speedups() is not None else None
        return self._programs[schema]

    def _delta(self, body: DeltaView, payload: bytes) -> tuple[str, str]:
        """key, delta: the texts by the fast lane's C printer when it is
        built (the same text as the Python printer,
        tests/property/test_prop_fast.py, in a fraction of the time)."""
        s = body.schema
        raw_key, raw_delta = delta_bytes(payload)
        prog = self._program(s)
        key = self._keys.get((s, raw_key))
        if key is None:
            text = prog.key_text(raw_key) if prog is not None else None
            if text is None:
                text = to_string(s.key.to_sexp(body.key))
            if len(self._keys) >= KEY_CACHE:
                self._keys.clear()
            key = self._keys[(s, raw_key)] = _text(text)
        delta = prog.delta_text(raw_delta) if prog is not None else None
        if delta is None:
            delta = to_string(s.delta_to_sexp(body.delta))
        return key, _text(delta)

    def message(self, msg: Message, capture_time_ns: int | None) -> Row:
        f = msg.frame
        body = msg.body
        if isinstance(body, Handshake):
            self._set_worker(body.source_worker_id)
        head = (
            *self.base,
            f.offset,
            capture_time_ns,
            f.seq,
            f.time_ns,
            micros(f.time_ns),
            self._fingerprint(f.fingerprint),
            f.flags,
            type_name(f.tag),
            f.size,
            len(f.payload),
            True,  # crc_ok
            *_NO_PROBLEM,
        )
        hour = event_hour(f.time_ns)
        if isinstance(body, DeltaView):
            key, delta = self._delta(body, f.payload)
            row = (
                *head,
                self.worker_text,
                _text(body.source_output),
                key,
                delta,
                True,  # schema_known
                body.sequence_no,
                body.watermark_ns,
                None,  # msg_json
                hour,
            )
            if self.typed is not None:
                self.typed.add(row, body)
            return row
        if isinstance(body, DeltaMsg):
            return (
                *head,
                self.worker_text,
                _text(body.source_output),
                _text(to_string(body.key)),
                _text(to_string(body.delta_bytes)),
                False,  # schema_known
                body.sequence_no,
                body.watermark_ns,
                None,  # msg_json
                hour,
            )
        worker = _text(body.worker_id) if isinstance(body, (Heartbeat, CheckpointAck)) else self.worker_text
        return (*head, worker, *_NO_DELTA, clean_text(_json(body_to_json(body))), hour)

    def problem(self, p: Problem, capture_time_ns: int | None) -> Row:
        return (
            *self.base,
            p.offset if p.offset >= 0 else None,
            capture_time_ns,
            p.seq,
            None,  # time_ns ... payload_length: a problem has no envelope
            None,
            None,
            None,
            None,
            None,
            None,
            False if p.kind == "crc_mismatch" else None,
            p.kind,
            p.detail,
            p.severity.value,
            p.skipped,
            self.worker_text,
            *_NO_DELTA,
            None,  # msg_json
            # A problem has no envelope time; its capture time, when there is
            # one, files it (the same in every task, whatever the split).
            event_hour(capture_time_ns),
        )
