"""`ripple replay`: send a recorded stream or capture to a live consumer, paced."""

from __future__ import annotations

from dataclasses import dataclass

import click

from ripple_cli.cli.options import (
    MAX_TIMEOUT,
    PORT_HELP_NO_PROTOCOL,
    Number,
    capture_options_with,
    format_option,
    group,
    inputs_group,
    max_payload_option,
)
from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.errors import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PROBLEMS,
    EXIT_TERMINATED,
    InvalidInput,
    RippleError,
    UsageProblem,
)
from ripple_cli.flow.inputs import Inputs
from ripple_cli.protocols.origin import Origin
from ripple_cli.render.base import problem_text
from ripple_cli.replay.address import HostPort, address_text
from ripple_cli.replay.renumber import check_room
from ripple_cli.replay.run import ReplayOptions
from ripple_cli.replay.run import replay as run_replay
from ripple_cli.replay.schedule import Mode, Pacing
from ripple_cli.replay.source import Clock, load_recordings
from ripple_cli.replay.stats import ReplayStats
from ripple_cli.sources.files import display_name
from ripple_cli.terminal.environment import Environment
from ripple_cli.terminal.interrupts import take_interrupts


@dataclass(frozen=True)
class Timing:
    """--topspeed, --multiplier, --pps, --maxsleep, --clock."""

    pacing: Pacing
    clock: Clock


@dataclass(frozen=True)
class Sending:
    """--loop, --limit, --renumber, --renumber-from, --handshake-timeout, --handshake."""

    loops: int
    limit: int | None
    renumber: bool
    renumber_from: int | None
    handshake_timeout: float
    handshake: str = "wait"


def _timing(
    topspeed: bool, multiplier: float | None, pps: float | None, maxsleep: float | None, clock: str | None
) -> Timing:
    return Timing(_pacing(topspeed, multiplier, pps, maxsleep, clock), Clock(clock or Clock.ENVELOPE.value))


# -x and --pps: at least a millionth (a gap a million times as long); a
# smaller rate would put the schedule past any clock.
MIN_RATE = 1e-6


@click.command()
@inputs_group
@group("timing", _timing, "topspeed", "multiplier", "pps", "maxsleep", "clock")
@group("sending", Sending, "loops", "limit", "renumber", "renumber_from", "handshake_timeout", "handshake")
@click.argument("source", type=click.Path(allow_dash=True))
@click.option("--to", "to", type=HostPort(), metavar="HOST:PORT", help="Connect to the consumer here.")
@click.option(
    "--listen",
    "listen",
    type=HostPort(),
    metavar="HOST:PORT",
    help="Instead, wait for a consumer to connect here (port 0: any free port, printed).",
)
@click.option("--topspeed", "-t", is_flag=True, help="Send as fast as possible, no pacing.")
@click.option(
    "--multiplier",
    "-x",
    type=Number(min=MIN_RATE),
    metavar="X",
    help="Replay X times faster than recorded (0.5: half speed). Default: 1, as recorded.",
)
@click.option("--pps", type=Number(min=MIN_RATE), metavar="N", help="Send N messages per second, evenly.")
@click.option(
    "--clock",
    "clock",
    type=click.Choice([c.value for c in Clock]),
    default=None,
    help="Times that --multiplier follows: the envelopes' timestamps (default) or the capture's packet times.",
)
@click.option(
    "--loop",
    "loops",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="N",
    help="Send the messages after the Handshake N times over (the Handshake once).",
)
@click.option(
    "--limit", type=click.IntRange(min=1), metavar="N", help="Send at most N messages in all, Handshakes included."
)
@click.option(
    "--maxsleep",
    type=Number(min=0),
    metavar="MS",
    help="Never wait more than MS milliseconds between two messages (the schedule after it moves up).",
)
@click.option(
    "--renumber",
    is_flag=True,
    help="Rewrite envelope seq and each output's Delta sequence_no (from 1, or --renumber-from), "
    "continuing across --loop, with new CRCs.",
)
@click.option(
    "--renumber-from",
    type=click.IntRange(min=1, max=(1 << 62) - 1),
    metavar="N",
    help="With --renumber, the first number (default 1). For a worker that remembers the last sequence_no "
    "applied across runs, start above it, e.g. --renumber-from $(date +%s%N).",
)
@click.option(
    "--handshake-timeout",
    type=Number(min=0, min_open=True, max=MAX_TIMEOUT),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="How long to wait to connect (a refused connection is tried again until then), and for the peer's "
    "answer to the Handshake.",
)
@click.option(
    "--handshake",
    type=click.Choice(("wait", "none")),
    default="wait",
    show_default=True,
    help="wait: send the rest only after the peer's Schema_negotiation; none: do not wait for one "
    "(a consumer that never answers: nc, ripple tap).",
)
@format_option(("text", "json"), "Default: text on stderr; json prints the report on stdout.")
@capture_options_with(PORT_HELP_NO_PROTOCOL)
@max_payload_option
@click.pass_obj
def replay(
    env: Environment,
    source: str,
    to: tuple[str, int] | None,
    listen: tuple[str, int] | None,
    fmt: str | None,
    inputs: Inputs,
    timing: Timing,
    sending: Sending,
) -> int:
    """Replay a Ripple stream or capture (SOURCE, or - for stdin) to a consumer.

    ripple plays the producer: it sends the recorded Handshake, waits for the
    peer's Schema_negotiation (ok false: its errors are printed, exit 1),
    then sends every other envelope of the source, in order, each at its
    time.  Only whole envelopes with a valid CRC are sent; problems in the
    source are reported on stderr and skipped (exit 1 at the end).

    SOURCE is a raw stream (one connection) or a pcap/pcapng: by default
    every client-to-server direction in it is replayed, one after another,
    each on a connection of its own; --stream N (or N:c2s) picks one.  The
    source is read whole before the first connection.

    Pacing follows absolute targets (start + (t - t0) / X), so waits never
    add up to drift; several messages due at once go in one write.  The
    report (stderr, or stdout with --format json) gives messages, bytes,
    elapsed time, achieved rate and the lag of sends behind the schedule.

    Exit status: 0 done, 1 problems in the source or the peer refused or
    closed the connection, 3 the connection was refused, 130 Ctrl-C.
    """
    if (to is None) == (listen is None):
        raise UsageProblem("give one of --to HOST:PORT (connect) or --listen HOST:PORT (wait for a consumer)")
    if sending.renumber_from is not None and not sending.renumber:
        raise UsageProblem(f"--renumber-from {sending.renumber_from}: give --renumber too (it numbers from N)")
    name = display_name(source)
    source_problems = 0

    def on_problem(origin: Origin, p: Problem) -> None:
        nonlocal source_problems
        if p.severity is Severity.ERROR:
            source_problems += 1
        env.problem_line(problem_text(origin, p))

    recordings = load_recordings(
        source,
        env.stdin,
        ports=inputs.ports,
        max_flows=inputs.max_flows,
        window=inputs.reassembly_window,
        stream=inputs.stream,
        max_payload=inputs.max_payload,
        clock=timing.clock,
        on_problem=on_problem,
    )
    if not recordings:
        stream_id = None if inputs.stream is None else ":".join(str(x) for x in inputs.stream if x is not None)
        where = f"stream {stream_id}" if stream_id else "the client-to-server direction of any connection"
        raise InvalidInput(f"{name}: nothing to replay: no whole Ripple envelope in {where}")

    if sending.renumber:
        check_room(sending.renumber_from or 1, recordings, sending.loops, sending.limit)
    peer = address_text(*(to or listen))  # type: ignore[misc]
    pacing = timing.pacing
    stats = ReplayStats(peer, pacing.describe(), pacing.paced, skipped=source_problems)
    opts = _options(to, listen, pacing, sending, inputs.max_payload)
    terminated: list[bool] = []

    def on_term(_signum: int, _frame: object) -> None:
        # SIGTERM (kill, systemd, docker stop) stops it as Ctrl-C does: the report, then 143.
        terminated.append(True)
        raise KeyboardInterrupt

    restore = take_interrupts(on_term)  # kill -INT stops it even where SIGINT came ignored
    try:
        run_replay(recordings, opts, stats, lambda text: env.problem_line(f"ripple: {text}"))
    except KeyboardInterrupt:
        stats.interrupted = True
        _report(env, stats, fmt)
        return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    except RippleError as e:
        # The text report only when something was streamed: a refused
        # connection or Handshake is said in one line.  The JSON report
        # always, with why it stopped: a script reading it gets an object.
        if stats.streamed or fmt == "json":
            stats.stopped = stats.stopped or e.message
            _report(env, stats, fmt)
        raise
    finally:
        restore()
    _report(env, stats, fmt)
    return EXIT_PROBLEMS if source_problems else EXIT_OK


def _options(
    to: tuple[str, int] | None, listen: tuple[str, int] | None, pacing: Pacing, s: Sending, max_payload: int
) -> ReplayOptions:
    return ReplayOptions(
        to,
        listen,
        pacing,
        s.loops,
        s.limit,
        s.renumber,
        s.handshake_timeout,
        max_payload,
        s.renumber_from or 1,
        wait_answer=s.handshake == "wait",
    )


def _pacing(
    topspeed: bool, multiplier: float | None, pps: float | None, maxsleep: float | None, clock: str | None
) -> Pacing:
    chosen = [flag for flag, on in (("--topspeed", topspeed), ("--multiplier", multiplier), ("--pps", pps)) if on]
    if len(chosen) > 1:
        raise UsageProblem(f"{' and '.join(chosen)}: choose one way to pace")
    if clock is not None and (topspeed or pps):
        raise UsageProblem(f"--clock: {chosen[0]} does not follow recorded times")
    maxsleep_ns = None if maxsleep is None else int(maxsleep * 1e6)
    if topspeed:
        return Pacing(Mode.TOPSPEED)
    if pps:
        return Pacing(Mode.PPS, pps=pps, maxsleep_ns=maxsleep_ns)
    return Pacing(Mode.MULTIPLIER, multiplier=multiplier or 1.0, maxsleep_ns=maxsleep_ns)


def _report(env: Environment, stats: ReplayStats, fmt: str | None) -> None:
    if fmt == "json":
        env.stdout.write(stats.to_json().encode() + b"\n")
        env.stdout.flush()
    else:
        env.stderr.write(stats.to_text() + "\n")
        env.stderr.flush()
