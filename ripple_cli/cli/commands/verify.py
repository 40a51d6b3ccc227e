"""`ripple verify`: check framing, CRCs and stream rules, for CI scripts."""

from __future__ import annotations

import click

from ripple_cli.analysis.report import Report
from ripple_cli.analysis.sequence import SequenceChecker
from ripple_cli.cli.environment import Environment
from ripple_cli.cli.options import format_option, max_payload_option, schemas_option, strict_option
from ripple_cli.codec.jsonview import type_name
from ripple_cli.codec.problems import Problem
from ripple_cli.codec.stream import DeltaMode, StreamDecoder
from ripple_cli.errors import EXIT_UNREADABLE, InputUnreadable
from ripple_cli.render.verdict import json_report, junit_report, text_report
from ripple_cli.sources.files import display_name, read_chunks
from ripple_cli.sources.output import binary_output
from ripple_cli.sources.schema_files import load_registry


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@format_option(("text", "json"), "Default: text.")
@click.option("--junit", "junit", type=click.Path(dir_okay=False), help="Also write a JUnit XML report to FILE.")
@schemas_option
@strict_option
@max_payload_option
@click.pass_obj
def verify(
    env: Environment,
    files: tuple[str, ...],
    fmt: str | None,
    junit: str | None,
    schemas: tuple[str, ...],
    strict: bool,
    max_payload: int,
) -> int:
    """Check every envelope and every stream rule of Ripple streams.

    Per envelope: magic, version, payload length, CRC, the payload decodes
    exactly, the type is known, a Delta's schema is known (and its key and
    delta decode with it).  Per stream: envelope seq strictly increasing;
    Delta sequence_no per (worker, output) from 1 after a Handshake, with
    gaps and duplicates; Schema_negotiation refusals.

    Exit status: 0 clean, 1 problems found, 3 an input could not be read.
    """
    registry = load_registry(schemas)
    report = Report(strict=strict)
    unreadable: list[str] = []
    for path in files:
        name = display_name(path)
        rep = report.source(name)
        decoder = StreamDecoder(registry, DeltaMode.VALIDATE, max_payload)
        checker = SequenceChecker(decoder.messages.registry)
        try:
            chunks = read_chunks(path, env.stdin)
            while True:
                chunk = next(chunks, None)
                events = decoder.feed(chunk) if chunk is not None else decoder.finish()
                for ev in events:
                    if isinstance(ev, Problem):
                        report.problem(rep, ev)
                    else:
                        report.message(rep, ev, type_name(ev.frame.tag))
                        for p in checker.observe(ev):
                            report.problem(rep, p)
                if chunk is None:
                    break
        except InputUnreadable as e:
            report.sources.remove(rep)
            unreadable.append(name)
            env.problem_line(f"ripple: {e.message}")
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
