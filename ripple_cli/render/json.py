"""`json` (one array) and `jsonl` (one object per line); problems in-line."""

from __future__ import annotations

from typing import Any

from ripple_cli.codec.jsonview import JSON_SHAPE_VERSION, dump_chunks, dumps, iso_time, problem_to_json
from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.base import LaneKind
from ripple_cli.protocols.item import Decoded, Run
from ripple_cli.protocols.origin import Origin
from ripple_cli.render.base import View
from ripple_cli.terminal.environment import Environment


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


def origin_head(origin: Origin) -> bytes:
    """The start of every object from `origin`, up to its first own key:
    `{"v":1,"source":...,`, as dumps writes it (a fast lane's JSON lines
    follow on from it)."""
    obj = dumps({"v": JSON_SHAPE_VERSION, **origin_json(origin)})
    return obj[:-1] + b","


class JsonRenderer:
    lane = LaneKind.JSON  # a fast lane writes the objects after their head

    def __init__(self, env: Environment, array: bool) -> None:
        self.env = env
        self.array = array
        self._first = True

    def _emit(self, obj: dict[str, Any]) -> None:
        # One piece for nearly every object; a Handshake's schemas come a
        # batch at a time, written as they come (dump_chunks).
        lead = (b"[\n" if self._first else b",\n") if self.array else b""
        tail = b"" if self.array else b"\n"
        self._first = False
        out = self.env.stdout
        pieces = dump_chunks(obj)
        data = lead + next(pieces)
        for piece in pieces:
            out.write(data)
            data = piece
        out.write(data + tail)

    def message(self, origin: Origin, msg: Decoded) -> None:
        self._emit(msg.to_json(origin_json(origin)))

    def run(self, origin: Origin, run: Run, limit: int | None = None) -> None:
        # The lane's lines are objects without their head, one a line (a
        # JSON string escapes every newline): each gets its head, and in an
        # array the separator, in one pass over the text.
        # The text is copied once (the replace): what follows the last line
        # is cut by a view, not by another copy.
        text = run.text if limit is None else run.first_lines(limit)
        if not text:
            return
        head = origin_head(origin)
        out = self.env.stdout
        if self.array:
            sep = b",\n" + head
            out.write((b"[\n" if self._first else b",\n") + head)
            out.write(memoryview(text.replace(b"\n", sep))[: -len(sep)])
        else:
            out.write(head)
            out.write(memoryview(text.replace(b"\n", b"\n" + head))[: -len(head)])
        self._first = False

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
