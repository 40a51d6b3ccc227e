"""`decode --list-streams`: the connections of the inputs, with counts."""

from __future__ import annotations

from rich.table import Table

from ripple_cli.analysis.report import Report
from ripple_cli.codec.messages import DeltaMode
from ripple_cli.codec.problems import Problem
from ripple_cli.flow.demux import Demux
from ripple_cli.flow.inputs import Inputs
from ripple_cli.flow.pipeline import BaseSink, pump
from ripple_cli.protocols.base import LaneKind
from ripple_cli.protocols.item import Run
from ripple_cli.protocols.origin import Origin
from ripple_cli.render.table import make_console, time_of_day
from ripple_cli.sources.files import display_name
from ripple_cli.terminal.environment import Environment


class _ProblemCount(BaseSink):
    """A sink that only counts problems (the Demux counts the rest)."""

    takes_runs = True

    def __init__(self, report: Report) -> None:
        self.report = report

    def run(self, origin: Origin, run: Run) -> None:
        pass

    def problem(self, origin: Origin, problem: Problem) -> None:
        if self.report.is_problem(problem):
            self.report.dropped["problems"] += 1


def list_streams(env: Environment, paths: tuple[str, ...], inputs: Inputs) -> int:
    """`decode --list-streams`: each input's connections, counted (the
    fast lane counts the boring envelopes)."""
    report = Report()
    sink = _ProblemCount(report)
    demuxes = []
    for path in paths:
        demux = inputs.demux(display_name(path), deltas=DeltaMode.RAW, lane=LaneKind.COUNT)
        pump(inputs.events(path, env), demux, sink)
        demuxes.append(demux)
    print_stream_list(env, demuxes)
    return report.exit_code


def print_stream_list(env: Environment, demuxes: list[Demux]) -> None:
    console, stream = make_console(env)
    several = len(demuxes) > 1
    cols = ["source"] if several else []
    cols += ["stream", "protocol", "from", "to", "msgs", "bytes", "problems", "first (UTC)", "last (UTC)", "end"]
    rows_out: list[list[str]] = []
    for demux in demuxes:
        rows = [
            (
                st.stream,
                st.protocol,
                str(st.messages),
                str(st.bytes),
                str(st.problems),
                st.first_ns,
                st.last_ns,
                st.ended or "",
            )
            for st in demux.streams.values()
        ]
        rows += [(s, "", "0", "0", "0", None, None, why) for s, why in demux.undecoded.items()]
        rows.sort(key=lambda r: (r[0].connection, r[0].direction) if r[0] is not None else (0, ""))
        for s, protocol, msgs, size, problems, first, last, end in rows:
            if s is None:
                ident, src, dst = "-", "", ""
            else:
                a, b = (s.client, s.server) if s.from_client else (s.server, s.client)
                ident, src, dst = s.key, str(a), str(b)
            cells = [demux.source] if several else []
            cells += [
                ident,
                protocol,
                src,
                dst,
                msgs,
                size,
                problems,
                time_of_day(first) if first is not None else "",
                time_of_day(last) if last is not None else "",
                end,
            ]
            rows_out.append(cells)
    t = Table(box=None, pad_edge=False, header_style="bold")
    for i, col in enumerate(cols):
        # Every column keeps its full width but the last, which gives way.
        widest = max([len(col)] + [len(r[i]) for r in rows_out])
        last = col == "end"
        t.add_column(
            col,
            justify="right" if col in ("msgs", "bytes", "problems") else "left",
            no_wrap=True,
            min_width=None if last else widest,
            overflow="ellipsis",
        )
    for cells in rows_out:
        t.add_row(*cells)
    console.print(t)
    stream.detach()
    env.stdout.flush()
