"""`decode --list-streams`: the connections of the inputs, with counts."""

from __future__ import annotations

from typing import TextIO

from rich.console import Console

from ripple_cli.analysis.report import Report
from ripple_cli.capture.events import TcpCounts
from ripple_cli.codec.messages import DeltaMode
from ripple_cli.codec.problems import Problem
from ripple_cli.errors import InputUnreadable
from ripple_cli.flow.demux import Demux
from ripple_cli.flow.inputs import Inputs
from ripple_cli.flow.pipeline import BaseSink, pump
from ripple_cli.protocols.base import LaneKind
from ripple_cli.protocols.item import Run
from ripple_cli.protocols.origin import Origin
from ripple_cli.render.columns import (
    GAP,
    Column,
    PlainRows,
    Trimmed,
    escaped,
    fit,
    fitted_table,
    kept,
    line_width,
    make_console,
    plain_widths,
    table,
)
from ripple_cli.render.table import time_of_day
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
        self.report.count(problem)


def list_streams(env: Environment, paths: tuple[str, ...], inputs: Inputs) -> int:
    """`decode --list-streams`: each input's connections, counted (the
    fast lane counts the boring envelopes)."""
    report = Report()
    sink = _ProblemCount(report)
    demuxes = []
    try:
        for path in paths:
            demux = inputs.demux(display_name(path), deltas=DeltaMode.RAW, lane=LaneKind.COUNT)
            pump(inputs.events(path, env), demux, sink)
            demuxes.append(demux)
    except InputUnreadable:
        # decode stops at a file it cannot read, and what came before stays
        # shown: here, the table of the files before it
        if demuxes:
            print_stream_list(env, demuxes)
        raise
    print_stream_list(env, demuxes)
    return report.exit_code


def stream_columns(several: bool) -> list[Column]:
    """Below the width of all: the Community ID goes, then the last and
    first times, then the end, the protocol, the endpoints; the stream and
    the counts stay."""
    source = [Column("source", priority=8, shrink=True, min_width=10, max_width=30)] if several else []
    return [
        *source,
        Column("stream", keep=True),  # what the row is: never dropped
        Column("protocol", priority=5, shrink=True),
        Column("from", priority=7, shrink=True, min_width=10),
        Column("to", priority=6, shrink=True, min_width=10),
        Column("community_id", extra=True),
        Column("msgs", keep=True, justify="right"),
        Column("bytes", keep=True, justify="right"),
        Column("problems", keep=True, justify="right"),
        Column("first (UTC)", priority=3),
        Column("last (UTC)", priority=2),
        Column("end", priority=4, shrink=True, min_width=8),
        # TCP reassembly's counts (capture/reassembly.py): the first to go on a narrow line.
        *(Column(name, extra=True, justify="right") for name in TCP_COLUMNS),
    ]


TCP_COLUMNS = ("ooo", "retx", "unseen", "held")


def tcp_cells(tcp: TcpCounts | None) -> list[str]:
    """Out of order, retransmitted, acked unseen, held; blank for a raw stream."""
    if tcp is None:
        return [""] * len(TCP_COLUMNS)
    return [str(n) for n in (tcp.out_of_order, tcp.retransmitted, tcp.acked_unseen, tcp.held)]


def print_stream_list(env: Environment, demuxes: list[Demux]) -> None:
    console, stream = make_console(env)
    several = len(demuxes) > 1
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
                ident, src, dst, cid = "-", "", "", ""
            else:
                a, b = (s.client, s.server) if s.from_client else (s.server, s.client)
                ident, src, dst, cid = s.key, str(a), str(b), s.community_id(demux.seed)
            cells = [demux.source] if several else []
            cells += [
                ident,
                protocol,
                src,
                dst,
                cid,
                msgs,
                size,
                problems,
                time_of_day(first) if first is not None else "",
                time_of_day(last) if last is not None else "",
                end,
                *tcp_cells(None if s is None else demux.tcp.get(s)),
            ]
            rows_out.append(cells)
    columns = stream_columns(several)
    if env.color or not rows_out:
        console.print(Trimmed(fitted_table(env, columns, rows_out, rule=False)), crop=False)
    else:
        _plain_table(console, stream, columns, [[escaped(c) for c in row] for row in rows_out], line_width(env))
    stream.detach()
    env.stdout.flush()


def _plain_table(
    console: Console, out: TextIO, columns: list[Column], rows: list[list[str]], width: int | None
) -> None:
    """The table as `fitted_table` draws it, its rows written by PlainRows:
    rich took 2.5 ms and 14 KB a row (a capture of 30,000 connections
    listed in 150 s); a row PlainRows does not copy is drawn by rich."""
    widths = fit(columns, plain_widths(rows, len(columns)), width, GAP["plain"], more=False)
    console.print(Trimmed(table(columns, widths, rule=False)), crop=False)  # the header
    lines = PlainRows(columns, widths).lines(rows)
    for row, line in zip(rows, lines, strict=True):
        if line is None:
            t = table(columns, widths, header=False, rule=False)
            t.add_row(*kept(row, widths))
            console.print(Trimmed(t), crop=False)
        else:
            out.write(line + "\n")
