"""The JSON inside a frame or line: parsed as strictly as the real server
parses it (serde_json), told apart (request, response, event), checked
against the message shapes of rstmdb-protocol's `message.rs`, and turned
into the typed `fields` of a message and its one-line summary."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from ripple_cli.codec.problems import Severity
from ripple_cli.protocols.note import Note

MAX_DEPTH = 128  # serde_json's recursion limit: deeper JSON is an error to the server

OPS = frozenset(
    (
        "HELLO",
        "AUTH",
        "PING",
        "BYE",
        "INFO",
        "PUT_MACHINE",
        "GET_MACHINE",
        "LIST_MACHINES",
        "CREATE_INSTANCE",
        "GET_INSTANCE",
        "LIST_INSTANCES",
        "DELETE_INSTANCE",
        "APPLY_EVENT",
        "BATCH",
        "SNAPSHOT_INSTANCE",
        "WAL_READ",
        "WAL_STATS",
        "COMPACT",
        "WATCH_INSTANCE",
        "WATCH_ALL",
        "UNWATCH",
        # The PyPI client 0.2.1 sends it; the server snapshot read does not know it.
        "FLUSH_ALL",
    )
)

ERROR_CODES = frozenset(
    (
        "UNSUPPORTED_PROTOCOL",
        "BAD_REQUEST",
        "UNAUTHORIZED",
        "AUTH_FAILED",
        "NOT_FOUND",
        "MACHINE_NOT_FOUND",
        "MACHINE_VERSION_EXISTS",
        "MACHINE_VERSION_LIMIT_EXCEEDED",
        "INSTANCE_NOT_FOUND",
        "INSTANCE_EXISTS",
        "INVALID_TRANSITION",
        "GUARD_FAILED",
        "CONFLICT",
        "WAL_IO_ERROR",
        "INTERNAL_ERROR",
        "RATE_LIMITED",
    )
)
RETRYABLE_CODES = frozenset(("WAL_IO_ERROR", "INTERNAL_ERROR", "RATE_LIMITED"))

KINDS = ("request", "response", "event")

# The fields of a stream event (`StreamEvent`) and the JSON type each must have.
_EVENT_FIELDS: tuple[tuple[str, str], ...] = (
    ("subscription_id", "string"),
    ("instance_id", "string"),
    ("machine", "string"),
    ("version", "unsigned integer"),
    ("wal_offset", "unsigned integer"),
    ("from_state", "string"),
    ("to_state", "string"),
    ("event", "string"),
)

_LONE_SURROGATE_HINT = re.compile(rb"\\u[dD][89a-fA-F]")


class _Reject(ValueError):
    """JSON that Python's parser takes but serde_json refuses."""


def _no_constant(name: str) -> Any:
    raise _Reject(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    x = float(text)
    if math.isinf(x):
        raise _Reject(f"number {text[:40]} out of range")
    return x


@dataclass(slots=True)
class Parsed:
    """A payload parsed: `value` is the JSON (None when `ok` is False)."""

    ok: bool
    value: Any = None
    notes: list[Note] = field(default_factory=list)

    @property
    def kind(self) -> str | None:
        """The message kind (request, response or event); None for anything else."""
        if self.ok and isinstance(self.value, dict):
            t = self.value.get("type")
            if isinstance(t, str) and t in KINDS:
                return t
        return None


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int | float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    return "an object"


def _too_deep_or_lone(value: Any, check_depth: bool, check_strings: bool) -> str | None:
    """Depth over serde_json's limit, or a lone surrogate (which Python keeps
    in a string and serde_json refuses): the reason, or None."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, dict):
            if check_depth and depth > MAX_DEPTH:
                return f"nested deeper than {MAX_DEPTH} levels (serde_json's limit)"
            for k, item in v.items():
                if check_strings and not _utf8_clean(k):
                    return "a lone UTF-16 surrogate escape in a key"
                stack.append((item, depth + 1))
        elif isinstance(v, list):
            if check_depth and depth > MAX_DEPTH:
                return f"nested deeper than {MAX_DEPTH} levels (serde_json's limit)"
            stack.extend((item, depth + 1) for item in v)
        elif check_strings and isinstance(v, str) and not _utf8_clean(v):
            return "a lone UTF-16 surrogate escape in a string"
    return None


def _utf8_clean(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse(payload: bytes) -> Parsed:
    """The payload as serde_json would take it: UTF-8, strict JSON (no NaN,
    no numbers out of f64 range, no lone surrogates, depth at most 128)."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as e:
        return Parsed(False, notes=[Note("bad_utf8", f"payload is not UTF-8: invalid byte at {e.start}")])
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except _Reject as e:
        return Parsed(False, notes=[Note("bad_json", f"payload is not JSON: {e}")])
    except json.JSONDecodeError as e:
        # "Invalid control character at": Python's message ends with the "at" already
        where = f"character {e.pos}" if e.msg.endswith(" at") else f"at character {e.pos}"
        return Parsed(False, notes=[Note("bad_json", f"payload is not JSON: {e.msg} {where}")])
    except RecursionError:
        return Parsed(False, notes=[Note("bad_json", f"payload is not JSON: nested deeper than {MAX_DEPTH} levels")])
    except ValueError as e:  # an integer with too many digits for Python's int()
        return Parsed(False, notes=[Note("bad_json", f"payload is not JSON: {str(e)[:80]}")])
    # Cheap tests first: only a payload that could hold the problem is walked.
    deep = payload.count(b"[") + payload.count(b"{") > MAX_DEPTH
    lone = _LONE_SURROGATE_HINT.search(payload) is not None
    if deep or lone:
        reason = _too_deep_or_lone(value, deep, lone)
        if reason is not None:
            return Parsed(False, notes=[Note("bad_json", f"payload is not JSON to serde_json: {reason}")])
    parsed = Parsed(True, value)
    parsed.notes.extend(_check(value))
    return parsed


def _check(value: Any) -> list[Note]:
    """The message shape problems of a parsed payload."""
    if not isinstance(value, dict):
        return [Note("unknown_message", f"payload is {_json_type(value)}, not a message object")]
    t = value.get("type")
    if not isinstance(t, str) or t not in KINDS:
        shown = "no type" if "type" not in value else f"type {json.dumps(t)[:40]}"
        return [Note("unknown_message", f"object with {shown}: not a request, response or event")]
    if t == "request":
        return _check_request(value)
    if t == "response":
        return _check_response(value)
    return _check_event(value)


def _check_id(msg: dict[str, Any], what: str) -> list[Note]:
    if "id" not in msg:
        return [Note("bad_id", f"{what} without an id")]
    if not isinstance(msg["id"], str):
        return [Note("bad_id", f"{what} id is {_json_type(msg['id'])}, not a string")]
    return []


def _check_request(msg: dict[str, Any]) -> list[Note]:
    notes = _check_id(msg, "request")
    op = msg.get("op")
    if op is None:
        notes.append(Note("bad_request", "request without an op"))
    elif not isinstance(op, str):
        notes.append(Note("bad_request", f"request op is {_json_type(op)}, not a string"))
    elif op not in OPS:
        notes.append(Note("unknown_op", f"unknown op {op[:60]} (the server drops the connection)"))
    return notes


def _check_response(msg: dict[str, Any]) -> list[Note]:
    notes = _check_id(msg, "response")
    status = msg.get("status")
    if status not in ("ok", "error"):
        shown = "no status" if "status" not in msg else f"status {json.dumps(status)[:40]}"
        notes.append(Note("bad_response", f"response with {shown}: neither ok nor error"))
        return notes
    if status == "error":
        err = msg.get("error")
        if not isinstance(err, dict):
            notes.append(Note("bad_response", "error response without an error object"))
            return notes
        code = err.get("code")
        if not isinstance(code, str):
            notes.append(Note("bad_response", "error response without an error code"))
        elif code not in ERROR_CODES:
            notes.append(Note("unknown_error_code", f"unknown error code {code[:60]}", Severity.WARNING))
    return notes


def _check_event(msg: dict[str, Any]) -> list[Note]:
    for name, want in _EVENT_FIELDS:
        v = msg.get(name)
        if v is None:
            return [Note("bad_event", f"event without {name}")]
        good = isinstance(v, str) if want == "string" else type(v) is int and v >= 0
        if not good:
            return [Note("bad_event", f"event {name} is {_json_type(v)}, not a {want}")]
    return []


# ---------------------------------------------------------------- the JSON view


def message_fields(parsed: Parsed) -> dict[str, Any]:
    """kind, id, op, status, error_code (those the message has) and `msg`,
    the parsed JSON (null when the payload is not JSON)."""
    out: dict[str, Any] = {"kind": parsed.kind}
    value = parsed.value
    if isinstance(value, dict) and parsed.kind is not None:
        for name in ("id", "op", "status"):
            if name in value:
                out[name] = value[name]
        err = value.get("error")
        if isinstance(err, dict) and "code" in err:
            out["error_code"] = err["code"]
    out["msg"] = value if parsed.ok else None
    return out


def _short(v: Any, limit: int = 40) -> str:
    s = v if isinstance(v, str) else json.dumps(v)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def summary(parsed: Parsed, payload_len: int) -> str:
    """One short line: what the message says."""
    if not parsed.ok:
        return f"{payload_len} bytes, not JSON"
    v = parsed.value
    kind = parsed.kind
    if kind is None or not isinstance(v, dict):
        return f"{_json_type(v)}, not a message"
    if kind == "request":
        text = f"{_short(v.get('op'))} id={_short(v.get('id'))}"
        params = v.get("params")
        if isinstance(params, dict) and params:
            text += " " + " ".join(f"{k}={_short(params[k], 24)}" for k in list(params)[:3])
        return text
    if kind == "response":
        text = f"id={_short(v.get('id'))} {_short(v.get('status'))}"
        err = v.get("error")
        if isinstance(err, dict):
            text += f" {_short(err.get('code'))}: {_short(err.get('message'), 60)}"
        elif isinstance(v.get("result"), dict):
            result = v["result"]
            text += " " + " ".join(f"{k}={_short(result[k], 24)}" for k in list(result)[:3])
        return text
    return (
        f"{_short(v.get('instance_id'))} {_short(v.get('from_state'))} -> {_short(v.get('to_state'))}"
        f" on {_short(v.get('event'))} (subscription {_short(v.get('subscription_id'))})"
    )


def negotiated_mode(parsed: Parsed) -> str | None:
    """The wire mode a HELLO response chose ("jsonl", "binary_json"), or None
    when this is not an ok response carrying one."""
    v = parsed.value
    if parsed.kind != "response" or v.get("status") != "ok":
        return None
    result = v.get("result")
    mode = result.get("wire_mode") if isinstance(result, dict) else None
    return mode if isinstance(mode, str) else None
