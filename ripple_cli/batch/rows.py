"""One row per decoded message or problem: the table `ripple export` writes.

Pure: a `RowBuilder` (one per stream direction) turns the decoder's
`Message`s and `Problem`s into flat dicts of the columns in `COLUMNS`.  The
in-process path and the Spark tasks both build their rows here, so the two
cannot disagree on a value.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ripple_cli.capture.events import StreamId
from ripple_cli.codec.delta import CompiledSchema
from ripple_cli.codec.fast import speedups
from ripple_cli.codec.fast.program import compile_program
from ripple_cli.codec.jsonview import body_to_json, iso_time, type_name
from ripple_cli.codec.messages import CheckpointAck, DeltaMsg, DeltaView, Handshake, Heartbeat, read_delta_msg
from ripple_cli.codec.problems import Problem
from ripple_cli.codec.stream import Message
from ripple_cli.sexp.write import to_string

if TYPE_CHECKING:
    from ripple_cli.codec.fast._speedups import Program

Row = dict[str, Any]

# (name, type) in table order.  Types are Arrow/Spark names: string, int32,
# int64, bool.  Times are kept as nanoseconds (int64): Spark's timestamps
# stop at microseconds, and the envelope's clock does not.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("capture_file", "string"),  # the input file, as given on the command line (or found in a directory)
    ("connection", "int32"),  # connection number in the capture (as decode --list-streams); null: raw stream
    ("direction", "string"),  # c2s / s2c; null: raw stream
    ("src", "string"),  # sender endpoint, captures only
    ("dst", "string"),
    ("offset", "int64"),  # byte offset in the stream (the direction's reassembled bytes for a capture)
    ("capture_time_ns", "int64"),  # capture time of the packet that completed the message
    ("seq", "int64"),  # envelope fields...
    ("time_ns", "int64"),
    ("time", "string"),  # RFC 3339 with nanoseconds, UTC
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
    ("key", "string"),  # canonical s-expression (sexplib's one-line form)
    ("key_json", "string"),  # typed JSON (shape version 1, as decode --format json)
    ("delta", "string"),
    ("delta_json", "string"),
    ("schema_known", "bool"),  # false: key and delta are the raw bytes (no schema for the fingerprint)
    ("sequence_no", "int64"),
    ("watermark_ns", "int64"),
    ("msg_json", "string"),  # the payload as typed JSON for the other message types
    ("event_hour", "string"),  # yyyy-mm-ddThh of the envelope time (UTC): the default Parquet partition
)
COLUMN_NAMES = tuple(name for name, _ in COLUMNS)
COLUMN_TYPES = dict(COLUMNS)


def _text(b: bytes) -> str:
    # Parquet and CSV want valid UTF-8; what is not shows as \xNN escapes,
    # as decode's JSON does.
    return b.decode("utf-8", "backslashreplace")


def _json(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def delta_texts(body: DeltaView, payload: bytes, prog: Program | None) -> tuple[bytes, bytes]:
    """The key's and the delta's canonical text.  The fast lane's C printer
    (`prog`, when built) writes them from the payload's bytes, the same text
    as the Python printer (tests/property/test_prop_fast.py) in a fraction
    of the time."""
    if prog is not None:
        raw = read_delta_msg(payload)
        key, delta = prog.key_text(raw.key), prog.delta_text(raw.delta_bytes)
        if key is not None and delta is not None:
            return key, delta
    s = body.schema
    return to_string(s.key.to_sexp(body.key)), to_string(s.delta_to_sexp(body.delta))


def event_hour(time_ns: int | None) -> str | None:
    if time_ns is None:
        return None
    t = iso_time(time_ns)
    return t[:13] if t.endswith("Z") else None


@dataclass(frozen=True, slots=True)
class Where:
    """Where a stream's rows come from: constant columns of each row."""

    capture_file: str
    stream: StreamId | None = None

    def columns(self) -> Row:
        st = self.stream
        if st is None:
            return {"capture_file": self.capture_file, "connection": None, "direction": None, "src": None, "dst": None}
        src, dst = (st.client, st.server) if st.from_client else (st.server, st.client)
        return {
            "capture_file": self.capture_file,
            "connection": st.connection,
            "direction": st.direction,
            "src": str(src),
            "dst": str(dst),
        }


def empty_row() -> Row:
    return dict.fromkeys(COLUMN_NAMES)


class RowBuilder:
    """The rows of one stream direction, in stream order.  It follows the
    stream's Handshakes to give each row its worker; `worker` seeds it when
    the stream is entered part-way (a byte range of a large file)."""

    def __init__(self, where: Where, worker: bytes | None = None) -> None:
        self.where = where
        self.worker = worker
        self._base = where.columns()
        self._programs: dict[int, Program | None] = {}  # id(CompiledSchema) -> its C program
        self._second: int | None = None  # the last envelope time's second, and its text
        self._second_text = ""

    def _time(self, time_ns: int) -> str:
        # Messages come many to a second: format the date once per second.
        sec, frac = divmod(time_ns, 1_000_000_000)
        if sec != self._second:
            t = iso_time(sec * 1_000_000_000)
            if not t.endswith("Z"):
                return iso_time(time_ns)
            self._second, self._second_text = sec, t[:19]
        return f"{self._second_text}.{frac:09d}Z"

    def _program(self, schema: CompiledSchema) -> Program | None:
        # Looked up once per schema: hashing a Schema (compile_program's
        # cache key) costs more than printing a row.
        sid = id(schema)
        if sid not in self._programs:
            self._programs[sid] = compile_program(schema.schema) if speedups() is not None else None
        return self._programs[sid]

    def message(self, msg: Message, capture_time_ns: int | None) -> Row:
        f = msg.frame
        body = msg.body
        row = empty_row()
        row.update(self._base)
        if isinstance(body, Handshake):
            self.worker = body.source_worker_id
        row.update(
            offset=f.offset,
            capture_time_ns=capture_time_ns,
            seq=f.seq,
            time_ns=f.time_ns,
            time=(time := self._time(f.time_ns)),
            schema=_text(f.fingerprint),
            flags=f.flags,
            type=type_name(f.tag),
            size=f.size,
            payload_length=len(f.payload),
            crc_ok=True,
            worker=None if self.worker is None else _text(self.worker),
            event_hour=time[:13] if time.endswith("Z") else None,
        )
        if isinstance(body, DeltaView):
            s = body.schema
            key, delta = delta_texts(body, f.payload, self._program(s))
            row.update(
                source_output=_text(body.source_output),
                key=_text(key),
                key_json=_json(s.key.to_json(body.key)),
                delta=_text(delta),
                delta_json=_json(s.delta_to_json(body.delta)),
                schema_known=True,
                sequence_no=body.sequence_no,
                watermark_ns=body.watermark_ns,
            )
        elif isinstance(body, DeltaMsg):
            row.update(
                source_output=_text(body.source_output),
                key=_text(to_string(body.key)),
                key_json=_json({"base64": base64.b64encode(body.key).decode()}),
                delta=_text(to_string(body.delta_bytes)),
                delta_json=_json({"base64": base64.b64encode(body.delta_bytes).decode()}),
                schema_known=False,
                sequence_no=body.sequence_no,
                watermark_ns=body.watermark_ns,
            )
        else:
            if isinstance(body, (Heartbeat, CheckpointAck)):
                row["worker"] = _text(body.worker_id)
            row["msg_json"] = _json(body_to_json(body))
        return row

    def problem(self, p: Problem, capture_time_ns: int | None) -> Row:
        row = empty_row()
        row.update(self._base)
        row.update(
            offset=p.offset if p.offset >= 0 else None,
            capture_time_ns=capture_time_ns,
            seq=p.seq,
            crc_ok=False if p.kind == "crc_mismatch" else None,
            problem=p.kind,
            problem_detail=p.detail,
            severity=p.severity.value,
            skipped=p.skipped,
            worker=None if self.worker is None else _text(self.worker),
            # A problem has no envelope time; its capture time, when there is
            # one, files it (the same in every task, whatever the split).
            event_hour=event_hour(capture_time_ns),
        )
        return row
