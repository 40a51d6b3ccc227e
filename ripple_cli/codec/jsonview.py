"""The typed JSON form of messages, shape version 1 (documented in
man/ripple-decode.1 and README).

Integers are JSON numbers (exact: int64 values need a reader that keeps
them, e.g. jq 1.7, or Python).  Floats are numbers, except NaN and the
infinities, which are the strings "NaN", "Infinity", "-Infinity".  Byte
strings are JSON strings when they are valid UTF-8, else
{"base64": "..."}.  The shape of every field type is given in values.py.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
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
from ripple_cli.codec.values import b64, bytes_to_json, float_to_json
from ripple_cli.sexp.atoms import escape_text
from ripple_cli.sexp.write import to_string

JSON_SHAPE_VERSION = 1


def dumps(obj: Any) -> bytes:
    return b"".join(dump_chunks(obj))


class JsonArray:
    """An array written an item at a time (`dump_chunks`): a Handshake's
    schemas, whose JSON objects all at once cost some 60 times their
    bytes (a Handshake of 650,000 schemas, legal in 16 MiB: over 1 GB).
    Its items are `item(x)` for each x of `source`, made anew at each
    reading."""

    __slots__ = ("_item", "_source")

    def __init__(self, source: Iterable[Any], item: Callable[[Any], Any]) -> None:
        self._source = source
        self._item = item

    def __iter__(self) -> Iterator[Any]:
        return map(self._item, self._source)

    def __eq__(self, other: object) -> bool:
        """Equal to the list it writes."""
        if isinstance(other, JsonArray):
            other = list(other)
        return isinstance(other, list) and list(self) == other

    __hash__ = None  # type: ignore[assignment]


ARRAY_BATCH = 1024  # items of a JsonArray encoded at once


class _Streamed(Exception):
    """dumps met a JsonArray: the object is written piece by piece."""


def _no_array(o: Any) -> Any:
    if isinstance(o, JsonArray):
        raise _Streamed
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


def dump_chunks(obj: Any) -> Iterator[bytes]:
    """The JSON text of `obj`, in pieces: one for anything without a
    JsonArray; else its items a batch at a time, the rest as json.dumps
    writes it, byte for byte."""
    try:
        yield _dumps(obj)
        return
    except _Streamed:
        pass
    if isinstance(obj, JsonArray):
        yield b"["
        lead = b""
        items = iter(obj)
        while batch := list(islice(items, ARRAY_BATCH)):
            yield lead + _dumps(batch)[1:-1]
            lead = b","
        yield b"]"
    elif isinstance(obj, dict):
        lead = b"{"
        for k, v in obj.items():
            yield lead + _dumps(_key(k)) + b":"
            yield from dump_chunks(v)
            lead = b","
        yield b"}" if lead == b"," else b"{}"
    else:
        lead = b"["
        for v in obj:
            yield lead
            yield from dump_chunks(v)
            lead = b","
        yield b"]" if lead == b"," else b"[]"


def _dumps(obj: Any) -> bytes:
    # allow_nan is off: NaN and infinities are already strings, so any left
    # would be a bug, not silently invalid JSON.
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_no_array)
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


def _output_json(pair: tuple[bytes, Schema]) -> dict[str, Any]:
    name, schema = pair
    return {"output": bytes_to_json(name), "schema": schema_to_json(schema)}


def body_to_json(body: Body, lazy: bool = False) -> dict[str, Any]:
    """`lazy`: a Handshake's schemas as a JsonArray, made as it is written."""
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
            "key_bytes": b64(body.key),
            "delta_bytes": b64(body.delta_bytes),
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
            "output_schemas": (
                JsonArray(body.output_schemas, _output_json) if lazy else list(map(_output_json, body.output_schemas))
            ),
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
    return {"tag": body.tag, "payload": b64(body.payload)}


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
        "msg": body_to_json(body, lazy=True),
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
