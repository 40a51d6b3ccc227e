"""`ripple verify`: check framing, CRCs and stream rules, for CI scripts."""

from __future__ import annotations

import click

from ripple_cli.analysis.report import Report, SourceReport
from ripple_cli.analysis.sequence import SequenceChecker
from ripple_cli.capture.events import StreamId
from ripple_cli.cli.environment import Environment
from ripple_cli.cli.options import (
    capture_options,
    filter_option,
    format_option,
    max_payload_option,
    parse_stream_id,
    schemas_option,
    strict_option,
)
from ripple_cli.codec.jsonview import type_name
from ripple_cli.codec.problems import Problem
from ripple_cli.codec.stream import DeltaMode
from ripple_cli.errors import EXIT_UNREADABLE, InputUnreadable
from ripple_cli.flow.demux import Demux
from ripple_cli.flow.select import message_predicate, stream_predicate
from ripple_cli.render.verdict import json_report, junit_report, text_report
from ripple_cli.sources.files import display_name
from ripple_cli.sources.inputs import input_events
from ripple_cli.sources.output import binary_output
from ripple_cli.sources.schema_files import load_registry


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@format_option(("text", "json"), "Default: text.")
@click.option("--junit", "junit", type=click.Path(dir_okay=False), help="Also write a JUnit XML report to FILE.")
@schemas_option
@strict_option
@filter_option
@capture_options
@max_payload_option
@click.pass_obj
def verify(
    env: Environment,
    files: tuple[str, ...],
    fmt: str | None,
    junit: str | None,
    schemas: tuple[str, ...],
    strict: bool,
    display_filter: str | None,
    ports: tuple[int, ...],
    stream_id: str | None,
    max_flows: int,
    max_payload: int,
) -> int:
    """Check every envelope and every stream rule of Ripple streams and captures.

    Per envelope: magic, version, payload length, CRC, the payload decodes
    exactly, the type is known, a Delta's schema is known (and its key and
    delta decode with it).  Per stream (each direction of each connection
    of a capture): envelope seq strictly increasing; Delta sequence_no per
    (worker, output) from 1 after a Handshake, with gaps and duplicates;
    Schema_negotiation refusals.  With -Y, only matching messages are
    counted and checked against the stream rules; framing problems are
    always reported.

    Exit status: 0 clean, 1 problems found, 3 an input could not be read.
    """
    registry = load_registry(schemas)
    select = message_predicate(display_filter=display_filter) if display_filter else None
    want_stream = stream_predicate(parse_stream_id(stream_id))
    report = Report(strict=strict)
    unreadable: list[str] = []
    for path in files:
        name = display_name(path)
        per_stream: dict[StreamId | None, SourceReport] = {}
        demux = Demux(name, registry, DeltaMode.VALIDATE, max_payload, check_rules=select is None, want=want_stream)
        checkers: dict[StreamId | None, SequenceChecker] = {}
        try:
            events = input_events(path, env.stdin, ports=frozenset(ports), max_flows=max_flows)
            while True:
                event = next(events, None)
                for origin, item in demux.feed(event) if event is not None else demux.finish():
                    rep = per_stream.get(origin.stream)
                    if rep is None:
                        label = name if origin.stream is None else f"{name} [{origin.stream.label}]"
                        rep = per_stream[origin.stream] = report.source(label)
                    if isinstance(item, Problem):
                        report.problem(rep, item)
                        continue
                    if select is not None:
                        if not select(origin, item):
                            continue
                        # Stream rules over the selected messages only.
                        checker = checkers.get(origin.stream)
                        if checker is None:
                            st = demux.streams[origin.stream]
                            checker = checkers[origin.stream] = SequenceChecker(st.decoder.messages.registry)
                        for p in checker.observe(item):
                            report.problem(rep, p)
                    report.message(rep, item, type_name(item.frame.tag))
                if event is None:
                    break
        except InputUnreadable as e:
            for rep in per_stream.values():
                report.sources.remove(rep)
            unreadable.append(name)
            env.problem_line(f"ripple: {e.message}")
            continue
        if not per_stream:
            report.source(name)  # an empty input is still a verified stream
    if (fmt or "text") == "json":
        env.stdout.write(json_report(report, unreadable))
    else:
        env.stdout.write(text_report(report, unreadable).encode())
    env.stdout.flush()
    if junit:
        with binary_output(junit, env) as f:
            f.write(junit_report(report, unreadable))
    if unreadable:
        return EXIT_UNREADABLE
    return report.exit_code
