"""`ripple verify`: check framing, CRCs and stream rules, for CI scripts."""

from __future__ import annotations

import click

from ripple_cli.analysis.report import Report, SourceReport
from ripple_cli.capture.events import StreamId
from ripple_cli.cli.environment import Environment
from ripple_cli.cli.options import (
    capture_options,
    filter_option,
    format_option,
    max_payload_option,
    parse_stream_id,
    protocol_choice,
    protocol_options,
    schemas_option,
    strict_option,
)
from ripple_cli.codec.fast.lane import Batch, LaneKind
from ripple_cli.codec.problems import Problem
from ripple_cli.codec.stream import DeltaMode
from ripple_cli.errors import EXIT_UNREADABLE, InputUnreadable
from ripple_cli.flow.demux import Demux
from ripple_cli.flow.select import message_predicate, stream_predicate
from ripple_cli.render.verdict import json_report, junit_report, text_report
from ripple_cli.sources.files import display_name
from ripple_cli.sources.inputs import input_events
from ripple_cli.sources.schema_files import load_registry


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@format_option(("text", "json"), "Default: text.")
@click.option("--junit", "junit", type=click.Path(dir_okay=False), help="Also write a JUnit XML report to FILE.")
@schemas_option
@strict_option
@filter_option
@capture_options
@protocol_options
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
    protocol: str,
    decode_as: tuple[str, ...],
    max_inflate: int,
    max_payload: int,
) -> int:
    """Check every envelope and every stream rule of Ripple streams and captures.

    Sibling protocols (--list-protocols) are checked by their own rules,
    listed in their man pages (ripple-lumberjack(7), ...).

    Per envelope: magic, version, payload length, CRC, the payload decodes
    exactly, the type is known, a Delta's schema is known (and its key and
    delta decode with it).  Per stream (each direction of each connection
    of a capture): envelope seq strictly increasing; Delta sequence_no per
    (worker, output) from 1 after a Handshake, with gaps and duplicates;
    Schema_negotiation refusals.  With -Y every message is still checked,
    but only matching messages are counted and only their problems
    reported; framing problems, which belong to no message, always are.

    Exit status: 0 clean, 1 problems found, 3 an input could not be read.
    """
    choice = protocol_choice(protocol, decode_as, ports, max_payload, max_inflate)
    registry = load_registry(schemas)
    select = message_predicate(display_filter=display_filter) if display_filter else None
    want_stream = stream_predicate(parse_stream_id(stream_id))
    report = Report(strict=strict)
    unreadable: list[str] = []
    for path in files:
        name = display_name(path)
        per_stream: dict[StreamId | None, SourceReport] = {}
        # Deltas are only validated, unless -Y looks inside them.
        mode = DeltaMode.DECODE if select is not None and select.needs_decoded_deltas else DeltaMode.VALIDATE
        # Without -Y no message is looked at one by one: the fast lane
        # (when built) counts and checks the boring envelopes in bulk.
        lane = LaneKind.COUNT if select is None else None
        demux = Demux(name, registry, mode, max_payload, check_rules=True, want=want_stream, choice=choice, lane=lane)
        # With -Y, a problem that belongs to a message (it has a seq) is kept
        # only when that message matches; it comes just before the message
        # (payload) or just after it (stream rules), at the same offset.
        pending: list[tuple[SourceReport, Problem]] = []
        last: tuple[int, bool] = (-1, True)  # (offset, matched) of the last message
        try:
            events = input_events(path, env.stdin, ports=frozenset(ports), max_flows=max_flows)
            while True:
                event = next(events, None)
                for origin, item in demux.feed_batches(event) if event is not None else demux.finish_batches():
                    rep = per_stream.get(origin.stream)
                    if rep is None:
                        label = name if origin.stream is None else f"{name} [{origin.stream.label}]"
                        rep = per_stream[origin.stream] = report.source(label)
                    if isinstance(item, Batch):
                        report.batch(rep, item)
                        continue
                    if isinstance(item, Problem):
                        if select is None or item.seq is None:
                            report.problem(rep, item)
                        elif item.offset == last[0]:
                            if last[1]:
                                report.problem(rep, item)
                        else:
                            pending.append((rep, item))
                        continue
                    matched = select is None or select(origin, item)
                    last = (item.offset, matched)
                    for prep, p in pending:
                        if matched or p.offset != item.offset:
                            report.problem(prep, p)
                    pending.clear()
                    if matched:
                        report.message(rep, item)
                if event is None:
                    break
            for prep, p in pending:
                report.problem(prep, p)
            for stream, protocol, summary in demux.analyses:
                rep = per_stream.get(stream)
                if rep is not None:
                    rep.analysis = {"protocol": protocol, **summary}
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
        from ripple_cli.sources.output import binary_output

        with binary_output(junit, env) as f:
            f.write(junit_report(report, unreadable))
    if unreadable:
        return EXIT_UNREADABLE
    return report.exit_code
