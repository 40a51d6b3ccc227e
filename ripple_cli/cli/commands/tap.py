"""`ripple tap`: decode Ripple traffic live, as a transparent proxy or by
sniffing an interface."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import click

from ripple_cli.analysis.report import Report
from ripple_cli.capture.pcapng_writer import ROTATE_HELP, Rotation, parse_rotation
from ripple_cli.cli.options import (
    MAX_CONNECTIONS,
    ByteSize,
    OutputPath,
    capture_options,
    filter_option,
    format_option,
    group,
    inputs_group,
    max_payload_option,
    protocol_options,
    schemas_option,
    selection_options,
    show_group,
    view_group,
)
from ripple_cli.errors import UsageProblem
from ripple_cli.flow.inputs import Inputs
from ripple_cli.flow.protocol_choice import RIPPLE
from ripple_cli.flow.select import Show
from ripple_cli.protocols.base import ANYTHING, LaneKind
from ripple_cli.render import FORMATS, View, default_format, make_renderer
from ripple_cli.render.base import Renderer
from ripple_cli.tap.proxy import HostPort, ProxySource, parse_hostport
from ripple_cli.tap.record import Recorder
from ripple_cli.tap.session import NICE, Session, Source
from ripple_cli.tap.sniff import SniffSource
from ripple_cli.tap.stats import TapStats

if TYPE_CHECKING:
    from ripple_cli.tap.live import LiveView
from ripple_cli.terminal.environment import Environment


class HostPortType(click.ParamType):  # type: ignore[type-arg]
    name = "host:port"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> HostPort:
        if isinstance(value, HostPort):
            return value
        try:
            return parse_hostport(str(value))
        except ValueError as e:
            self.fail(str(e), param, ctx)


@dataclass(frozen=True)
class Place:
    """Where the traffic is tapped: --listen, --upstream, --max-connections (a
    proxy) or -i, -f (sniffing)."""

    listen: HostPort | None
    upstream: HostPort | None
    interface: str | None
    bpf: str | None
    max_connections: int


@dataclass(frozen=True)
class Recording:
    """-w FILE and its --rotate rules."""

    path: str | None
    rotation: Rotation

    def recorder(self, source: Source, interface: str | None) -> Recorder | None:
        return Recorder(self.path, self.rotation, source.synthesize, interface) if self.path else None


def _recording(write_path: str | None, rotate: tuple[str, ...]) -> Recording:
    try:
        rotation = parse_rotation(rotate)
    except ValueError as e:
        raise UsageProblem(f"--rotate: {e}") from None
    if rotate and write_path is None:
        raise UsageProblem("--rotate needs -w FILE")
    return Recording(write_path, rotation)


@click.command()
@inputs_group
@show_group
@view_group
@group("place", Place, "listen", "upstream", "interface", "bpf", "max_connections")
@group("recording", _recording, "write_path", "rotate")
@click.option("--listen", type=HostPortType(), metavar="HOST:PORT", help="Proxy: accept connections here (:PORT: all).")
@click.option("--upstream", type=HostPortType(), metavar="HOST:PORT", help="Proxy: forward each connection here.")
@click.option("-i", "--interface", metavar="IFACE", help="Sniff this interface with tcpdump instead (root needed).")
@click.option("-f", "--bpf", metavar="FILTER", help="Sniffing: a BPF filter for tcpdump, e.g. 'host 10.0.0.2'.")
@format_option(FORMATS, "Default: a live table on a terminal, sexp otherwise.")
@schemas_option
@selection_options
@filter_option
@capture_options
@protocol_options
@click.option("--show-connection", is_flag=True, help="Show each message's connection and direction.")
@max_payload_option
@click.option(
    "--max-connections",
    type=click.IntRange(min=1, max=MAX_CONNECTIONS),
    metavar="N",
    default=1024,
    show_default=True,
    help="Proxy: connections open at once; more are refused (closed at once, with a note).",
)
@click.option(
    "-w",
    "--write",
    "write_path",
    type=OutputPath(dir_okay=False),
    metavar="FILE",
    help="Record what is tapped (pcapng).",
)
@click.option("--rotate", multiple=True, metavar="SPEC", help=f"With -w: start new files by {ROTATE_HELP}. Repeatable.")
@click.option(
    "--buffer",
    type=ByteSize(),
    default="64M",
    show_default=True,
    help="Memory for what waits: copies to decode (or record), decoded messages to show. "
    "Beyond it, copies and messages are dropped and counted; traffic never is.",
)
@click.option(
    "--nice",
    type=click.IntRange(0, 19),
    metavar="N",
    default=NICE,
    show_default=True,
    help="Added to the CPU niceness of decoding, printing and recording (not of forwarding): "
    "at 19 they run only when the traffic and its endpoints leave a core free.",
)
@click.pass_obj
def tap(
    env: Environment,
    fmt: str | None,
    inputs: Inputs,
    show: Show,
    view: View,
    place: Place,
    recording: Recording,
    buffer: int,
    nice: int,
) -> int:
    """Decode Ripple (and sibling protocols') traffic live: as a proxy (--listen, --upstream) or by
    sniffing an interface (-i).

    As a proxy, every connection to --listen is relayed to --upstream, its
    bytes unchanged and never held up: decoding works on a copy, and when it
    cannot keep up, copies (never traffic) are dropped and counted.  Closing
    either side closes the other (FIN as FIN, reset as reset).  Sniffing runs
    tcpdump and reads its packets as `decode` reads a capture.

    Messages print as they pass; on a terminal a live table shows each
    connection's counters.  Ctrl-C stops (exit status 130) with a summary,
    including how many messages were not shown and bytes not decoded.
    """
    source = _source(place, inputs, buffer)
    stats = TapStats()
    printer, live_view = _printer(env, fmt or default_format(env), view, stats)
    # As `decode` does: the fast lane (when built) writes the sexp lines or
    # JSON of the boring envelopes in C, or passes over those a selection
    # cannot choose.
    prefilter = show.select.prefilter
    lane = printer.lane if show.select.everything else None if prefilter is None else LaneKind.SELECT
    # The live view's counters follow each stream's numbering (its gaps,
    # last Delta, heartbeats): the dissectors keep it, the lane's runs too.
    choice = inputs.choice(
        registry=inputs.registry, lane=lane, prefilter=prefilter or ANYTHING, progress=live_view is not None
    )
    if not isinstance(source, SniffSource):
        # Sniffing sees every connection: as decode does with a capture,
        # those that show no known protocol are left alone, unless --port
        # says which to decode.  A proxy's connections are all meant to be
        # decoded: as --protocol says, else as what their first bytes show,
        # else as Ripple.
        choice = replace(choice, undetected=RIPPLE if choice.auto else choice.protocol)
    demux = inputs.demux(source.name, choice)
    recorder = recording.recorder(source, place.interface)
    session = Session(
        source,
        demux,
        show.select,
        printer,
        stats,
        Report(),
        count=show.count,
        buffer=buffer,
        recorder=recorder,
        nice=nice,
    )

    def started(title: str) -> None:
        if live_view is not None:
            live_view.title = title
        _stderr(env, f"ripple: tap: {title}")

    try:
        code = session.run(started)
    finally:
        source.close()
    if not (live_view is not None and session.printer_closed):
        _stderr(env, f"ripple: tap: {stats.summary()}")  # the live view printed its own
    if session.record_error is not None:
        _stderr(env, f"ripple: tap: {session.record_error}")
    return code


def _given(*names: str) -> list[str]:
    """Which of these options the command line gave: their defaults say nothing."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return []
    line = click.core.ParameterSource.COMMANDLINE
    return ["--" + n.replace("_", "-") for n in names if ctx.get_parameter_source(n) is line]


def _source(place: Place, inputs: Inputs, buffer: int) -> Source:
    p = place
    if p.interface is not None:
        if p.listen is not None or p.upstream is not None:
            raise UsageProblem("-i sniffs; --listen and --upstream proxy: choose one")
        if given := _given("max_connections"):
            raise UsageProblem(f"{given[0]} applies to the proxy (--listen); sniffing (-i) has --max-flows")
        return SniffSource(p.interface, p.bpf, inputs.ports, inputs.max_flows, inputs.reassembly_window)
    if p.listen is None or p.upstream is None:
        raise UsageProblem("give --listen HOST:PORT and --upstream HOST:PORT (proxy), or -i IFACE (sniff)")
    if p.bpf is not None or inputs.ports:
        raise UsageProblem("-f and --port apply to sniffing (-i); a proxy sees only its own connections")
    if given := _given("max_flows", "reassembly_window"):
        raise UsageProblem(
            f"{' and '.join(given)} {'apply' if len(given) > 1 else 'applies'} to sniffing (-i), "
            "whose packets are reassembled; "
            "a proxy has --max-connections"
        )
    if p.upstream.host is None:
        raise UsageProblem("--upstream needs a host: HOST:PORT")
    return ProxySource(p.listen, p.upstream, p.max_connections, buffer)


def _printer(env: Environment, fmt: str, view: View, stats: TapStats) -> tuple[Renderer, LiveView | None]:
    """The renderer of --format; on a terminal the table is the live view."""
    if fmt == "table" and env.stdout_isatty:
        from ripple_cli.tap.live import LiveView

        live_view = LiveView(env, stats)
        return live_view, live_view
    return make_renderer(fmt, env, View(connection=view.connection, live=True)), None


def _stderr(env: Environment, line: str) -> None:
    # Not env.problem_line: that flushes stdout first, which may be blocked.
    env.stderr.write(line + "\n")
    env.stderr.flush()
