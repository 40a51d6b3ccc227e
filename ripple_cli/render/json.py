"""`json` (one array) and `jsonl` (one object per line); problems in-line."""

from __future__ import annotations

import json
from typing import Any

from ripple_cli.codec.jsonview import iso_time, problem_to_json
from ripple_cli.codec.problems import Problem
from ripple_cli.codec.values import bytes_to_json
from ripple_cli.protocols.item import Decoded
from ripple_cli.protocols.origin import Origin
from ripple_cli.render.base import NoRuns, View
from ripple_cli.sexp.atoms import escape_text
from ripple_cli.terminal.environment import Environment


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


def origin_json(origin: Origin) -> dict[str, Any]:
    """Where a message came from: the input, and for a capture the
    connection, direction, endpoints, Community ID and capture time (a raw
    stream has none of them)."""
    ctx: dict[str, Any] = {"source": origin.source}
    st = origin.stream
    if st is not None:
        src, dst = (st.client, st.server) if st.from_client else (st.server, st.client)
        ctx["connection"] = st.connection
        ctx["direction"] = st.direction
        ctx["src"] = str(src)
        ctx["dst"] = str(dst)
        ctx["community_id"] = origin.community_id
    if origin.time_ns is not None:
        ctx["capture_time_ns"] = origin.time_ns
        ctx["capture_time"] = iso_time(origin.time_ns)
    return ctx


class JsonRenderer(NoRuns):
    def __init__(self, env: Environment, array: bool) -> None:
        self.env = env
        self.array = array
        self._first = True

    def _emit(self, obj: dict[str, Any]) -> None:
        data = dumps(obj)
        if self.array:
            data = (b"[\n" if self._first else b",\n") + data
        else:
            data += b"\n"
        self._first = False
        self.env.stdout.write(data)

    def message(self, origin: Origin, msg: Decoded) -> None:
        self._emit(msg.to_json(origin_json(origin)))

    def problem(self, origin: Origin, problem: Problem) -> None:
        self._emit(problem_to_json(problem, origin_json(origin)))

    def flush(self) -> None:
        self.env.stdout.flush()

    def close(self) -> None:
        if self.array:
            self.env.stdout.write(b"[]\n" if self._first else b"\n]\n")
        self.flush()


def array_renderer(env: Environment, view: View) -> JsonRenderer:
    return JsonRenderer(env, array=True)


def lines_renderer(env: Environment, view: View) -> JsonRenderer:
    return JsonRenderer(env, array=False)
