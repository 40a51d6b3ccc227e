"""`ripple verify`: check framing, CRCs and stream rules, for CI scripts."""

from __future__ import annotations

import click

from ripple_cli.analysis.report import Report
from ripple_cli.analysis.verify import VerifySink
from ripple_cli.cli.options import (
    OutputPath,
    capture_options,
    filter_option,
    format_option,
    inputs_group,
    max_payload_option,
    protocol_options,
    schemas_option,
    show_group,
    strict_option,
)
from ripple_cli.codec.messages import DeltaMode
from ripple_cli.errors import EXIT_UNREADABLE, InputUnreadable
from ripple_cli.flow.inputs import Inputs
from ripple_cli.flow.pipeline import pump
from ripple_cli.flow.select import Show
from ripple_cli.protocols.base import LaneKind
from ripple_cli.render.verdict import write_reports
from ripple_cli.sources.files import display_name
from ripple_cli.terminal.environment import Environment


@click.command()
@inputs_group
@show_group
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@format_option(("text", "json"), "Default: text.")
@click.option("--junit", "junit", type=OutputPath(dir_okay=False), help="Also write a JUnit XML report to FILE.")
@click.option(
    "--allow-empty",
    is_flag=True,
    help="An input with no message, or none selected by --stream or -Y, is not a failure (exit 0, not 1).",
)
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
    allow_empty: bool,
    strict: bool,
    inputs: Inputs,
    show: Show,
) -> int:
    """Check every envelope and every stream rule of Ripple streams and captures.

    Sibling protocols (ripple decode --list-protocols) are checked by their own rules,
    listed in their man pages (ripple-lumberjack(7), ...).

    Per envelope: magic, version, payload length, CRC, the payload decodes
    exactly, the type is known, a Delta's schema is known (and its key and
    delta decode with it).  Per stream (each direction of each connection
    of a capture): envelope seq strictly increasing; Delta sequence_no per
    (worker, output) from 1 after a Handshake, with gaps and duplicates;
    Schema_negotiation refusals.  With -Y every message is still checked,
    but only matching messages are counted and only their problems
    reported; framing problems, which belong to no message, always are.
    An input with no message, or none selected by --stream or -Y, fails
    (so that a typo cannot turn a CI job green), unless --allow-empty.

    Exit status: 0 clean, 1 problems found or an input with no message, 3
    an input could not be read.
    """
    select = None if show.select.everything else show.select
    # Deltas are only validated, unless -Y looks inside them; without -Y no
    # message is looked at one by one: the fast lane (when built) counts and
    # checks the boring envelopes in bulk.
    deltas = DeltaMode.DECODE if show.select.needs_decoded_deltas else DeltaMode.VALIDATE
    lane = LaneKind.COUNT if select is None else None
    report = Report(strict=strict)
    sink = VerifySink(report, select)
    unreadable: list[str] = []
    try:
        for path in files:
            name = display_name(path)
            first = len(report.sources)
            sink.source(name)
            demux = inputs.demux(name, deltas=deltas, rules=True, lane=lane)
            try:
                pump(inputs.events(path, env), demux, sink)
            except InputUnreadable as e:
                sink.forget()
                unreadable.append(name)
                env.problem_line(f"ripple: {e.message}")
                continue
            sink.end(demux.analyses)
            if not sink.messages and not allow_empty:
                report.nothing(name)
                for src in report.sources[first:]:
                    src.empty = True
                env.problem_line(f"ripple: {name}: {_nothing_line(inputs, show)} (--allow-empty accepts that)")
    except KeyboardInterrupt:
        # Ctrl-C (on a live pipe, say): the report of what was read, as the
        # tap and replay give theirs; exit status 130.  A second Ctrl-C
        # while it is written ends the program (cli/guard.py).
        sink.end([])
        report.interrupted = True
        env.problem_line("ripple: verify: interrupted: the report covers what was read before")
    write_reports(env, report, unreadable, fmt or "text", junit)
    if report.interrupted:
        return report.exit_code
    return EXIT_UNREADABLE if unreadable else report.exit_code


def _nothing_line(inputs: Inputs, show: Show) -> str:
    """What found no message: the input itself, or the selection."""
    params = click.get_current_context().params
    chosen = [f"--port {p}" for p in params.get("ports") or ()]
    if inputs.stream is not None:
        chosen.append(f"--stream {params.get('stream_id')}")
    if not show.select.everything:
        chosen.append(f"-Y {params.get('display_filter')!r}")
    if not chosen:
        return "no message"
    return " and ".join(chosen) + (" select" if len(chosen) > 1 else " selects") + " no message"
