"""`decode --list-streams -F json` (an array) or `-F jsonl` (a line per
stream): the connections of the inputs, with counts, for scripts."""

from __future__ import annotations

import dataclasses
from typing import Any

from ripple_cli.analysis.report import Report
from ripple_cli.capture.events import StreamId
from ripple_cli.codec.jsonview import dumps, iso_time
from ripple_cli.codec.messages import DeltaMode
from ripple_cli.codec.problems import Problem
from ripple_cli.errors import InputUnreadable
from ripple_cli.flow.demux import Demux
from ripple_cli.flow.inputs import Inputs
from ripple_cli.flow.pipeline import BaseSink, pump
from ripple_cli.protocols.base import LaneKind
from ripple_cli.protocols.item import Run
from ripple_cli.protocols.origin import Origin
from ripple_cli.sources.files import display_name
from ripple_cli.terminal.environment import Environment

LIST_FORMATS = ("table", "json", "jsonl")


class _Problems(BaseSink):
    """Counts the problems, for the exit status (the Demux counts the rest)."""

    takes_runs = True

    def __init__(self) -> None:
        self.report = Report()

    def run(self, origin: Origin, run: Run) -> None:
        pass

    def problem(self, origin: Origin, problem: Problem) -> None:
        self.report.count(problem)


def _time(ns: int | None) -> str | None:
    return None if ns is None else iso_time(ns)


def stream_record(source: str, stream: StreamId | None, seed: int = 0, **counts: Any) -> dict[str, Any]:
    """A stream's record; a raw stream's connection, endpoints and
    Community ID are null."""
    rec: dict[str, Any] = {"source": source, "stream": None, "connection": None, "direction": None}
    rec.update({"src": None, "dst": None, "community_id": None})
    if stream is not None:
        src, dst = (stream.client, stream.server) if stream.from_client else (stream.server, stream.client)
        rec.update(
            stream=stream.key,
            connection=stream.connection,
            direction=stream.direction,
            src=str(src),
            dst=str(dst),
            community_id=stream.community_id(seed),
        )
    rec.update(counts)
    return rec


def stream_records(demux: Demux) -> list[dict[str, Any]]:
    """One record per stream of an input, in connection order; a stream
    left undecoded has protocol null and its reason as `end`."""
    found = [
        (
            st.stream,
            {
                "protocol": st.protocol,
                "messages": st.messages,
                "bytes": st.bytes,
                "problems": st.problems,
                "by_type": dict(sorted(st.by_type.items())),
                "first_ns": st.first_ns,
                "first": _time(st.first_ns),
                "last_ns": st.last_ns,
                "last": _time(st.last_ns),
                "end": st.ended,
            },
        )
        for st in demux.streams.values()
    ]
    found += [
        (
            s,
            {
                "protocol": None,
                "messages": 0,
                "bytes": 0,
                "problems": 0,
                "by_type": {},
                "first_ns": None,
                "first": None,
                "last_ns": None,
                "last": None,
                "end": why,
            },
        )
        for s, why in demux.undecoded.items()
    ]
    found.sort(key=lambda r: (r[0].connection, r[0].direction) if r[0] is not None else (0, ""))
    for s, counts in found:
        tcp = None if s is None else demux.tcp.get(s)
        counts["tcp"] = None if tcp is None else dataclasses.asdict(tcp)
    return [stream_record(demux.source, s, demux.seed, **counts) for s, counts in found]


def list_streams_json(env: Environment, paths: tuple[str, ...], inputs: Inputs, lines: bool) -> int:
    sink = _Problems()
    records: list[dict[str, Any]] = []
    try:
        for path in paths:
            demux = inputs.demux(display_name(path), deltas=DeltaMode.RAW, lane=LaneKind.COUNT)
            pump(inputs.events(path, env), demux, sink)
            records += stream_records(demux)
    except InputUnreadable:
        _write_records(env, records, lines)  # the files before it, as decode keeps what it printed
        raise
    _write_records(env, records, lines)
    return sink.report.exit_code


def _write_records(env: Environment, records: list[dict[str, Any]], lines: bool) -> None:
    if lines:
        env.stdout.write(b"".join(dumps(r) + b"\n" for r in records))
    else:
        env.stdout.write(b"[\n" + b",\n".join(dumps(r) for r in records) + b"\n]\n" if records else b"[]\n")
    env.stdout.flush()
