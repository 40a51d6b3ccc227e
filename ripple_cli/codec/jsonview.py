"""The typed JSON form of messages, shape version 1 (documented in
man/ripple-decode.1 and README).

Integers are JSON numbers (exact: int64 values need a reader that keeps
them, e.g. jq 1.7, or Python).  Floats are numbers, except NaN and the
infinities, which are the strings "NaN", "Infinity", "-Infinity".  Byte
strings are JSON strings when they are valid UTF-8, else
{"base64": "..."}.  The shape of every field type is given in values.py.
"""

from __future__ import annotations

import base64
import datetime
import json
from typing import Any

from ripple_cli.codec.envelope import Frame
from ripple_cli.codec.messages import (
    TYPE_NAMES,
    Body,
    CheckpointAck,
    CheckpointRequest,
    DeltaMsg,
    DeltaView,
    Handshake,
    Heartbeat,
    SchemaNegotiation,
)
from ripple_cli.codec.problems import Problem
from ripple_cli.codec.schema import FieldType, Schema, sexp_of_field_type, text
from ripple_cli.codec.values import bytes_to_json, float_to_json
from ripple_cli.sexp.atoms import escape_text
from ripple_cli.sexp.write import to_string

JSON_SHAPE_VERSION = 1


def dumps(obj: Any) -> bytes:
    # allow_nan is off: NaN and infinities are already strings, so any left
    # would be a bug, not silently invalid JSON.
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # A name from the wire that is not UTF-8 (a worker id, a schema,
        # kept with surrogateescape): as every byte string of the JSON form,
        # {"base64": ...}; a key, escaped as the sexp form does.  Never a
        # lone surrogate, which strict JSON readers refuse.
        text = json.dumps(_no_surrogates(obj), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode("utf-8", "backslashreplace")


def _key(k: Any) -> Any:
    """An object's key: a string (not base64), escaped only if it must be."""
    if isinstance(k, str):
        try:
            k.encode("utf-8")
        except UnicodeEncodeError:
            return escape_text(k)
    return k


def _no_surrogates(obj: Any) -> Any:
    if isinstance(obj, str):
        try:
            obj.encode("utf-8")
        except UnicodeEncodeError:
            try:
                return bytes_to_json(obj.encode("utf-8", "surrogateescape"))
            except UnicodeEncodeError:  # a lone surrogate of another kind
                return escape_text(obj)
        return obj
    if isinstance(obj, dict):
        return {_key(k): _no_surrogates(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_no_surrogates(v) for v in obj]
    return obj


def type_text(t: FieldType) -> str:
    return text(to_string(sexp_of_field_type(t)))


def schema_to_json(s: Schema) -> dict[str, Any]:
    return {
        "fingerprint": text(s.fingerprint),
        "name": text(s.name),
        "version": s.version,
        "key": type_text(s.key),
        "fields": [
            {"name": text(f.name), "type": type_text(f.typ), "default": None if f.default is None else text(f.default)}
            for f in s.fields
        ],
    }


def body_to_json(body: Body) -> dict[str, Any]:
    if isinstance(body, DeltaView):
        s = body.schema
        return {
            "source_output": bytes_to_json(body.source_output),
            "key": s.key.to_json(body.key),
            "delta": s.delta_to_json(body.delta),
            "sequence_no": body.sequence_no,
            "watermark_ns": body.watermark_ns,
        }
    if isinstance(body, DeltaMsg):
        return {
            "source_output": bytes_to_json(body.source_output),
            "schema_known": False,
            "key_bytes": base64.b64encode(body.key).decode(),
            "delta_bytes": base64.b64encode(body.delta_bytes).decode(),
            "sequence_no": body.sequence_no,
            "watermark_ns": body.watermark_ns,
        }
    if isinstance(body, Heartbeat):
        return {
            "worker_id": bytes_to_json(body.worker_id),
            "timestamp_ns": body.timestamp_ns,
            "load": float_to_json(body.load),
        }
    if isinstance(body, Handshake):
        return {
            "source_worker_id": bytes_to_json(body.source_worker_id),
            "output_schemas": [
                {"output": bytes_to_json(n), "schema": schema_to_json(s)} for n, s in body.output_schemas
            ],
            "protocol_version": body.protocol_version,
        }
    if isinstance(body, CheckpointRequest):
        return {"checkpoint_id": body.checkpoint_id, "requested_at_ns": body.requested_at_ns}
    if isinstance(body, CheckpointAck):
        return {
            "worker_id": bytes_to_json(body.worker_id),
            "checkpoint_id": body.checkpoint_id,
            "positions": [{"output": bytes_to_json(n), "sequence_no": q} for n, q in body.positions],
        }
    if isinstance(body, SchemaNegotiation):
        return {"ok": body.ok, "errors": [bytes_to_json(e) for e in body.errors]}
    return {"tag": body.tag, "payload": base64.b64encode(body.payload).decode()}


def iso_time(ns: int) -> str:
    """Nanoseconds since the epoch as RFC 3339 UTC with all nine digits."""
    secs, frac = divmod(ns, 1_000_000_000)
    try:
        dt = datetime.datetime.fromtimestamp(secs, datetime.UTC)
    except (OverflowError, OSError, ValueError):
        return f"{ns}ns"
    return dt.strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:09d}Z"


def type_name(tag: int) -> str:
    return TYPE_NAMES.get(tag, f"Unknown({tag})")


def envelope_to_json(f: Frame, body: Body, context: dict[str, Any]) -> dict[str, Any]:
    """An envelope's JSON object; `context` (where it came from) follows "v"."""
    return {
        "v": JSON_SHAPE_VERSION,
        **context,
        "offset": f.offset,
        "size": f.size,
        "seq": f.seq,
        "time_ns": f.time_ns,
        "time": iso_time(f.time_ns),
        "schema": text(f.fingerprint),
        "flags": f.flags,
        "type": type_name(f.tag),
        "msg": body_to_json(body),
    }


def problem_to_json(p: Problem, context: dict[str, Any]) -> dict[str, Any]:
    return {
        "v": JSON_SHAPE_VERSION,
        **context,
        "offset": p.offset if p.offset >= 0 else None,
        "problem": {
            "kind": p.kind,
            "severity": p.severity.value,
            "detail": p.detail,
            "skipped": p.skipped,
            "seq": p.seq,
        },
    }
