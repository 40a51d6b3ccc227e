"""`ripple decode`: print the messages of Ripple streams and captures."""

from __future__ import annotations

from dataclasses import replace

import click

from ripple_cli.analysis.report import Report
from ripple_cli.cli.options import (
    capture_options,
    community_id_seed_option,
    filter_option,
    format_option,
    inputs_group,
    max_payload_option,
    protocol_options,
    schemas_option,
    selection_options,
    show_group,
    view_group,
)
from ripple_cli.codec.messages import DeltaMode
from ripple_cli.flow.inputs import Inputs
from ripple_cli.flow.pipeline import pump
from ripple_cli.flow.select import Show
from ripple_cli.protocols.base import ANYTHING
from ripple_cli.render import FORMATS, View, default_format, make_renderer
from ripple_cli.render.show import ShowSink
from ripple_cli.sources.files import display_name
from ripple_cli.terminal.environment import Environment


@click.command()
@inputs_group
@show_group
@view_group
@click.argument("files", nargs=-1, type=click.Path(allow_dash=True))
@format_option(FORMATS, "Default: table on a terminal, sexp otherwise.")
@schemas_option
@selection_options
@filter_option
@capture_options
@protocol_options
@click.option("--list-protocols", is_flag=True, help="List the protocols ripple knows, with their ports, and exit.")
@click.option("--show-offsets", is_flag=True, help="Show each message's byte offset and size.")
@click.option(
    "--show-connection",
    is_flag=True,
    help="Show each message's connection, direction and Community ID (captures).",
)
@community_id_seed_option
@click.option(
    "--list-streams",
    is_flag=True,
    help="List the connections of the inputs with counts, not messages: a table, or with -F json (jsonl) "
    "a JSON array (a line) of streams.",
)
@click.option("--raw", is_flag=True, help="Apply no schema: Deltas show as the raw delta_msg.")
@max_payload_option
@click.pass_obj
def decode(
    env: Environment,
    files: tuple[str, ...],
    fmt: str | None,
    inputs: Inputs,
    show: Show,
    view: View,
    list_protocols: bool,
    list_streams: bool,
    raw: bool,
) -> int:
    """Print the messages of Ripple streams and captures (FILE, or - for stdin).

    FILE is a raw stream (envelopes back to back), a pcap or a pcapng; in a
    capture every TCP connection is reassembled and decoded on its own.
    Each connection's protocol (Ripple or a sibling: --list-protocols) is
    recognised from its first bytes, unless --protocol or --decode-as says.
    Each message is printed as it is decoded; problems (bad magic, CRC
    mismatch, truncation, capture holes, payloads that do not decode) are
    reported in place and decoding goes on at the next whole envelope.
    Exit status 1 when any problem was seen.
    """
    if list_protocols:
        from ripple_cli.render.protocols import print_protocol_list

        print_protocol_list(env)
        return 0
    if list_streams:
        return _list_streams(env, files or ("-",), inputs, fmt)
    paths = files or ("-",)
    renderer = make_renderer(fmt or default_format(env), env, replace(view, live="-" in paths))
    sink = ShowSink(Report(), renderer, show.select, show.count)
    # Every message as its canonical line or JSON object and nothing else:
    # the fast lane (when built) writes those of the boring envelopes in bulk.
    lane = sink.lane
    deltas = DeltaMode.RAW if raw else DeltaMode.DECODE
    try:
        for path in paths:
            name = display_name(path)
            sink.source(name)
            # A pipe is watched live: each message shows as soon as it is
            # decoded.  A file is read as fast as it goes, output in blocks.
            demux = inputs.demux(name, deltas=deltas, lane=lane, prefilter=show.select.prefilter or ANYTHING)
            if not pump(inputs.events(path, env), demux, sink, path == "-"):
                break
            if inputs.stream is not None and not demux.wanted_any:
                env.problem_line(f"ripple: {name}: {_no_stream_line(inputs.stream, demux.unwanted_raw)}")
    finally:
        renderer.close()
    return sink.report.exit_code


def _no_stream_line(stream: tuple[int, str | None], raw: bool) -> str:
    """Why --stream showed nothing of an input (a hint: the exit status
    stays that of what was read)."""
    number, direction = stream
    chosen = f"--stream {number}:{direction}" if direction else f"--stream {number}"
    if raw:
        return f"{chosen} selects nothing of a raw stream, which has no connection"
    return f"{chosen} selects no stream of this capture (--list-streams lists them)"


def _list_streams(env: Environment, paths: tuple[str, ...], inputs: Inputs, fmt: str | None) -> int:
    from ripple_cli.render.stream_json import LIST_FORMATS, list_streams_json

    if fmt in ("json", "jsonl"):
        return list_streams_json(env, paths, inputs, lines=fmt == "jsonl")
    if fmt not in (None, "table"):
        raise click.BadParameter(
            f"--list-streams prints {', '.join(LIST_FORMATS)}, not {fmt}", param_hint="'--format' / '-F'"
        )
    from ripple_cli.render.streams import list_streams as print_streams

    return print_streams(env, paths, inputs)
