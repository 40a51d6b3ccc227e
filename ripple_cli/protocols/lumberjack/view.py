"""The JSON view and the one-line summary of each Lumberjack frame.

JSON fields (besides protocol, offset, size and type, which every protocol
has): `version`, then per type
    Window      count, batch (1, 2, ... in this stream), previous_count (null for the first)
    Ack         seq, keepalive (seq 0)
    Data        seq, pairs (the pair count), event (an object: key -> value)
    Json        seq, length, event (the parsed document; null when invalid or not parsed), payload (only then)
    Compressed  length, inflated_size, frames (frames directly inside; both null when not inflated),
                complete (every frame inside was read: false after bad_zlib, inflate_limit...)
and `in_compressed` on every frame found inside a `C` frame.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ripple_cli.protocols.base import json_bytes
from ripple_cli.protocols.lumberjack.wire import Ack, Compressed, Data, Json, LumberjackFrame, Window
from ripple_cli.sexp.atoms import escape_text

SUMMARY_WIDTH = 100
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


# What the parsed form of one J payload may take: small arrays and objects
# take 20-100 times their bytes as Python objects.
MAX_EVENT_OBJECTS = 128 << 20
_OBJECT = 64  # bytes of objects per value: a small list, dict, string or number, and its slot


def object_cost(payload: bytes) -> int:
    """About what `parse_json(payload)` would take, from the bytes that
    start or separate values (counted at C speed, over-counting those in
    strings): decided before parsing, so a bomb is never built."""
    marks = payload.count(b"[") + payload.count(b"{") + payload.count(b",") + payload.count(b":")
    return _OBJECT * (marks + 1) + len(payload)


def parse_json(payload: bytes) -> tuple[Any, str | None]:
    """A J payload as a JSON value, or (None, why it is not valid JSON).
    Strict: UTF-8, no NaN/Infinity, no lone surrogates (they could not be
    printed as UTF-8 again)."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, f"not UTF-8 (byte {e.start})"
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as e:
        at = len(text[: e.pos].encode("utf-8"))
        # "Expecting value" -> "Expecting value at byte 0"; "Invalid control character at" -> "... at byte 5"
        return None, f"{e.msg} byte {at}" if e.msg.endswith(" at") else f"{e.msg} at byte {at}"
    except RecursionError:
        return None, "nested too deeply to parse"
    except ValueError as e:  # NaN/Infinity, integers of more than 4300 digits
        return None, str(e)
    if _SURROGATE_ESCAPE.search(text):
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            return None, "a \\u escape gives a lone surrogate"
        except RecursionError:
            return None, "nested too deeply to parse"
    return value, None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    """A JSON number as a double, as the Beats and Logstash readers hold it;
    one past the double's range (1e400) has no value there, nor in ripple's
    JSON output, which is strict: refused, as RCP's payloads refuse it."""
    x = float(text)
    if math.isinf(x):
        raise ValueError(f"number {text[:40]} out of range")
    return x


# One for all payloads: building one costs.
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)


def data_event(frame: Data) -> dict[str, Any]:
    """D pairs as an object.  A key that repeats keeps its last value (as
    the Java and Go readers' maps do); keys that are not UTF-8 show their
    bytes as \\xNN.  The text form keeps every pair as sent."""
    return {k.decode("utf-8", "backslashreplace"): json_bytes(v) for k, v in frame.pairs}


def fields_of(frame: LumberjackFrame, in_compressed: int | None, extra: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"version": frame.version}
    if isinstance(frame, Window):
        out["count"] = frame.count
    elif isinstance(frame, Ack):
        out.update(seq=frame.seq, keepalive=frame.seq == 0)
    elif isinstance(frame, Data):
        out.update(seq=frame.seq, pairs=len(frame.pairs), event=data_event(frame))
    elif isinstance(frame, Json):
        out.update(seq=frame.seq, length=len(frame.payload))
    elif isinstance(frame, Compressed):
        out["length"] = len(frame.payload)
    out.update(extra)
    if in_compressed is not None:
        out["in_compressed"] = in_compressed
    return out


def summary_of(frame: LumberjackFrame, fields: dict[str, Any]) -> str:
    if isinstance(frame, Window):
        prev = fields.get("previous_count")
        text = f"window {frame.count}" + (f" (was {prev})" if prev is not None and prev != frame.count else "")
    elif isinstance(frame, Ack):
        text = f"ack {frame.seq}" + (" (keepalive)" if frame.seq == 0 else "")
    elif isinstance(frame, Data):
        pairs = " ".join(f"{_short(k)}={_short(v)}" for k, v in frame.pairs)
        text = f"#{frame.seq} {pairs}" if pairs else f"#{frame.seq} (no pairs)"
    elif isinstance(frame, Json):
        text = f"#{frame.seq} {_short(frame.payload)}" if frame.payload else f"#{frame.seq} (empty)"
    else:
        inflated = fields.get("inflated_size")
        text = f"zlib {len(frame.payload)} bytes"
        if inflated is not None:
            text += f" -> {inflated} bytes, {fields.get('frames')} frames"
    if "in_compressed" in fields:
        text = f"in C@{fields['in_compressed']}: {text}"
    return text if len(text) <= SUMMARY_WIDTH else text[: SUMMARY_WIDTH - 3] + "..."


def _short(b: bytes) -> str:
    """The start of a field, escaped as the sexp form and every table
    escape it (ESC as \\027, a byte that is not UTF-8 as \\255)."""
    return escape_text(b[: SUMMARY_WIDTH + 1].decode("utf-8", "surrogateescape"))
