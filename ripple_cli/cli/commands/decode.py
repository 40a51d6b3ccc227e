"""`ripple decode`: print the messages of Ripple streams."""

from __future__ import annotations

import click

from ripple_cli.analysis.report import Report
from ripple_cli.analysis.select import Selection
from ripple_cli.cli.environment import Environment
from ripple_cli.cli.options import format_option, max_payload_option, schemas_option, selection_options
from ripple_cli.codec.jsonview import type_name
from ripple_cli.codec.problems import Problem
from ripple_cli.codec.stream import DeltaMode, StreamDecoder
from ripple_cli.render import FORMATS, default_format, make_renderer
from ripple_cli.sources.files import display_name, read_chunks
from ripple_cli.sources.schema_files import load_registry


@click.command()
@click.argument("files", nargs=-1, type=click.Path(allow_dash=True))
@format_option(FORMATS, "Default: table on a terminal, sexp otherwise.")
@schemas_option
@selection_options
@click.option("--show-offsets", is_flag=True, help="Show each message's byte offset and size.")
@click.option("--raw", is_flag=True, help="Apply no schema: Deltas show as the raw delta_msg.")
@max_payload_option
@click.pass_obj
def decode(
    env: Environment,
    files: tuple[str, ...],
    fmt: str | None,
    schemas: tuple[str, ...],
    count: int | None,
    types: tuple[str, ...],
    outputs: tuple[str, ...],
    keys: tuple[str, ...],
    show_offsets: bool,
    raw: bool,
    max_payload: int,
) -> int:
    """Print the messages of Ripple streams (FILE, or - for stdin).

    Each message is printed as it is decoded; problems (bad magic, CRC
    mismatch, truncation, payloads that do not decode) are reported in place
    and decoding goes on at the next whole envelope.  Exit status 1 when any
    problem was seen.
    """
    registry = load_registry(schemas)
    renderer = make_renderer(fmt or default_format(env), env, show_offsets)
    select = Selection(types, outputs, keys)
    report = Report()
    shown = 0
    try:
        for path in files or ("-",):
            name = display_name(path)
            rep = report.source(name)
            decoder = StreamDecoder(registry, DeltaMode.RAW if raw else DeltaMode.DECODE, max_payload)
            for chunk in _chunks_then_end(path, env):
                events = decoder.feed(chunk) if chunk is not None else decoder.finish()
                for ev in events:
                    if isinstance(ev, Problem):
                        report.problem(rep, ev)
                        renderer.problem(name, ev)
                        continue
                    report.message(rep, ev, type_name(ev.frame.tag))
                    if select(ev):
                        renderer.message(name, ev)
                        shown += 1
                        if count is not None and shown >= count:
                            return report.exit_code
                renderer.flush()
    finally:
        renderer.close()
    return report.exit_code


def _chunks_then_end(path: str, env: Environment):  # type: ignore[no-untyped-def]
    """The file's chunks, then None to say it ended."""
    yield from read_chunks(path, env.stdin)
    yield None
