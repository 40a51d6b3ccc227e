"""`ripple decode`: print the messages of Ripple streams and captures."""

from __future__ import annotations

import time

import click

from ripple_cli.analysis.report import Report
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
    selection_options,
)
from ripple_cli.codec.fast.lane import Batch, LaneKind
from ripple_cli.codec.problems import Problem
from ripple_cli.codec.stream import DeltaMode
from ripple_cli.flow.demux import Demux
from ripple_cli.flow.select import message_predicate, stream_predicate
from ripple_cli.render import FORMATS, default_format, make_renderer
from ripple_cli.render.sexp import SexpRenderer
from ripple_cli.sources.files import display_name
from ripple_cli.sources.inputs import input_events
from ripple_cli.sources.schema_files import load_registry

_FLUSH_EVERY = 0.1  # seconds: a live pipe shows messages within this


@click.command()
@click.argument("files", nargs=-1, type=click.Path(allow_dash=True))
@format_option(FORMATS, "Default: table on a terminal, sexp otherwise.")
@schemas_option
@selection_options
@filter_option
@capture_options
@protocol_options
@click.option("--list-protocols", is_flag=True, help="List the protocols ripple knows, with their ports, and exit.")
@click.option("--show-offsets", is_flag=True, help="Show each message's byte offset and size.")
@click.option("--show-connection", is_flag=True, help="Show each message's connection and direction (captures).")
@click.option("--list-streams", is_flag=True, help="List the connections of the inputs with counts, not messages.")
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
    display_filter: str | None,
    ports: tuple[int, ...],
    stream_id: str | None,
    max_flows: int,
    protocol: str,
    decode_as: tuple[str, ...],
    max_inflate: int,
    list_protocols: bool,
    show_offsets: bool,
    show_connection: bool,
    list_streams: bool,
    raw: bool,
    max_payload: int,
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
    choice = protocol_choice(protocol, decode_as, ports, max_payload, max_inflate)
    registry = load_registry(schemas)
    select = message_predicate(types, outputs, keys, display_filter)
    want_stream = stream_predicate(parse_stream_id(stream_id))
    port_set = frozenset(ports)
    report = Report()
    if list_streams:
        from ripple_cli.render.streams import print_stream_list

        demuxes = []
        for path in files or ("-",):
            demux = Demux(
                display_name(path),
                registry,
                DeltaMode.RAW,
                max_payload,
                want=want_stream,
                choice=choice,
                lane=LaneKind.COUNT,
            )
            for ev in input_events(path, env.stdin, port_set, max_flows):
                _count_only(report, demux.feed_batches(ev))
            _count_only(report, demux.finish_batches())
            demuxes.append(demux)
        print_stream_list(env, demuxes)
        return report.exit_code

    fmt = fmt or default_format(env)
    renderer = make_renderer(fmt, env, show_offsets, show_connection)
    mode = DeltaMode.RAW if raw else DeltaMode.DECODE
    # Every message in its canonical line and nothing else: the fast lane
    # (when built) writes the lines of the boring envelopes in bulk.
    plain = isinstance(renderer, SexpRenderer) and renderer.plain_lines and select.everything
    sexp_lines = renderer if plain and isinstance(renderer, SexpRenderer) else None
    lane = LaneKind.SEXP if sexp_lines is not None else None
    shown = 0
    last_flush = time.monotonic()
    try:
        for path in files or ("-",):
            name = display_name(path)
            rep = report.source(name)
            demux = Demux(name, registry, mode, max_payload, want=want_stream, choice=choice, lane=lane)
            events = input_events(path, env.stdin, port_set, max_flows)
            # A pipe is watched live: show each message as soon as it is
            # decoded.  A file is read as fast as it goes, output in blocks.
            live = path == "-"
            while True:
                event = next(events, None)
                outputs_ = demux.feed_batches(event) if event is not None else demux.finish_batches()
                for origin, item in outputs_:
                    if isinstance(item, Batch):
                        assert sexp_lines is not None
                        report.batch(rep, item)
                        if count is not None and shown + item.messages >= count:
                            sexp_lines.lines(origin, item.first_lines(count - shown))
                            return report.exit_code
                        sexp_lines.lines(origin, item.text)
                        shown += item.messages
                        continue
                    if isinstance(item, Problem):
                        report.problem(rep, item)
                        renderer.problem(origin, item)
                        continue
                    report.message(rep, item)
                    if count is not None and shown >= count:
                        return report.exit_code
                    if select(origin, item):
                        renderer.message(origin, item)
                        shown += 1
                        if count is not None and shown >= count:
                            return report.exit_code
                now = time.monotonic()
                if event is None or (live and outputs_) or now - last_flush >= _FLUSH_EVERY:
                    renderer.flush()
                    last_flush = now
                if event is None:
                    break
    finally:
        renderer.close()
    return report.exit_code


def _count_only(report: Report, outputs: list) -> None:  # type: ignore[type-arg]
    for _origin, item in outputs:
        if isinstance(item, Problem) and report.is_problem(item):
            report.dropped["problems"] += 1
