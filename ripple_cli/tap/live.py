"""The tap's live view: `--format table` on a terminal.

A rich Live display redrawn a few times a second: per connection and
direction, messages by type, bytes, rate, the last envelope seq and Delta
sequence_no, Delta gaps and duplicates, CRC errors, bytes not decoded, the
last Heartbeat's age and load, and the watermark lag (arrival time minus
the Delta's watermark); the latest messages below; what was not shown or
not decoded at the bottom.  When the tap ends, the live display gives way
to a final summary that stays on the screen.

It is a renderer like the others (message, problem, flush, close), fed by
the tap's printing thread; the counters come from `TapStats`, kept by the
decoding thread, so they count every message even when the screen cannot
keep up.
"""

from __future__ import annotations

import time
from collections import deque

from rich.console import Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from ripple_cli.capture.events import StreamId
from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.protocols.base import LaneKind
from ripple_cli.protocols.item import Decoded, Run, TableRow
from ripple_cli.protocols.origin import Origin
from ripple_cli.render.columns import Column, Trimmed, cell, fitted_table, make_console
from ripple_cli.render.table import time_of_day, type_style
from ripple_cli.tap.stats import StreamStats, TapStats, Totals
from ripple_cli.terminal.environment import Environment

REFRESH = 0.25  # seconds between redraws
LATEST = 10  # latest messages shown under the counters
_RATE_SMOOTHING = 0.3

_SHORT_TYPE = {
    "Handshake": "Hs",
    "Delta": "D",
    "Checkpoint_request": "CkR",
    "Checkpoint_ack": "CkA",
    "Heartbeat": "HB",
    "Schema_negotiation": "Neg",
}


# Below the width of all: the heartbeat and the lag go first, then the last
# Delta, the rate, the types; the counts, bytes and seq stay.
STREAM_COLUMNS = [
    Column("conn", keep=True),  # which connection and way a row is: never dropped
    Column("from -> to", priority=6, shrink=True, min_width=12, max_width=26),
    Column("state", priority=5),
    Column("msgs", keep=True, justify="right"),
    Column("types", priority=4, shrink=True, min_width=8, max_width=40),
    Column("bytes", keep=True, justify="right"),
    Column("msg/s", priority=3, justify="right"),
    Column("seq", keep=True, justify="right"),
    Column("delta#", priority=2, shrink=True, min_width=8),
    Column("gaps", keep=True, justify="right"),
    Column("dups", keep=True, justify="right"),
    Column("crc", keep=True, justify="right"),
    Column("lost", keep=True, justify="right"),
    Column("heartbeat", priority=1),
    Column("wm lag", priority=1, justify="right"),
]

LATEST_COLUMNS = [
    Column("conn", priority=9),
    Column("seq", keep=True, justify="right"),
    Column("time (UTC)", priority=2),
    Column("type", priority=5, shrink=True, min_width=8, max_width=11),
    Column("output", priority=3, shrink=True, min_width=6, max_width=12),
    Column("key", priority=4, shrink=True, min_width=8, max_width=20),
    Column("latest messages", priority=6, shrink=True, flex=True, min_width=18),
]


def human_bytes(n: float) -> str:
    for unit in ("B", "K", "M", "G"):
        if abs(n) < 1024 or unit == "G":
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.1f}{unit}"
        n /= 1024
    raise AssertionError("unreachable")


def human_duration(ns: int) -> str:
    """A signed duration in a few characters: 850us, 123ms, 4.1s, 12m, 3.5h, 400d."""
    sign = "-" if ns < 0 else ""
    s = abs(ns) / 1e9
    if s < 1e-3:
        return f"{sign}{s * 1e6:.0f}us"
    if s < 1:
        return f"{sign}{s * 1e3:.0f}ms"
    if s < 60:
        return f"{sign}{s:.1f}s"
    if s < 3600:
        return f"{sign}{s / 60:.0f}m"
    if s < 86400:
        return f"{sign}{s / 3600:.1f}h"
    return f"{sign}{s / 86400:.0f}d"


def by_type_text(counts: dict[str, int]) -> str:
    return " ".join(f"{n}{_SHORT_TYPE.get(t, '?')}" for t, n in sorted(counts.items(), key=lambda kv: -kv[1]))


class LiveView:
    # The fast lane writes each message's cells; the view keeps the last few
    # of a run (its counters come from TapStats, which counts every message).
    lane = LaneKind.TABLE

    def __init__(self, env: Environment, stats: TapStats, title: str = "", latest: int = LATEST) -> None:
        self.env = env
        self.stats = stats
        self.title = title
        self.console, self._stream = make_console(env)
        self._latest: deque[tuple[Text, ...]] = deque(maxlen=latest)
        self._live: Live | None = None
        self._last_draw = 0.0
        self._rates: dict[StreamId, float] = {}
        self._prev: dict[StreamId, tuple[float, int]] = {}  # stream -> (when, messages)

    # -- the renderer interface -------------------------------------------------

    def message(self, origin: Origin, msg: Decoded) -> None:
        c = msg.cells()
        if c.seq is None:  # no envelope: the capture time, the protocol where the output goes
            when = origin.time_ns
            seq, output, key = "", msg.protocol, ""
        else:
            when, seq, output, key = c.time_ns, str(c.seq), c.output, c.key
        self._latest.append(
            (
                cell(_conn(origin.stream)),
                cell(seq),
                cell("" if when is None else time_of_day(when)),
                cell(msg.type, style=type_style(msg)),
                cell(output),
                cell(key),
                cell(c.summary),
            )
        )

    def run(self, origin: Origin, run: Run, limit: int | None = None) -> None:
        """A run's last messages (up to `limit`, --count's rest), with the
        problems among them, in stream order."""
        keep = self._latest.maxlen or 0
        rows = run.table_rows(limit) if limit is not None else run.last_table_rows(keep)
        # A stream-rule problem follows its message (same offset).
        tail: list[tuple[tuple[int, int], TableRow | Problem]] = [((int(r.offset), 0), r) for r in rows[-keep:]]
        tail += [((p.offset, 1), p) for p in run.last_problems(keep)]
        tail.sort(key=lambda t: t[0])
        for _key, item in tail[-keep:]:
            if isinstance(item, Problem):
                self.problem(origin, item)
            else:
                self._latest.append(
                    (
                        cell(_conn(origin.stream)),
                        Text(item.seq),
                        Text(item.time),
                        Text(item.type, style=item.style),
                        Text(item.output),
                        Text(item.key),
                        Text(item.summary),  # the lane's cells are escaped already
                    )
                )

    def problem(self, origin: Origin, problem: Problem) -> None:
        style = "yellow" if problem.severity is Severity.WARNING else "bold red"
        self._latest.append(
            (
                cell(_conn(origin.stream)),
                cell("" if problem.seq is None else str(problem.seq)),
                cell(""),
                cell(problem.kind, style=style),
                cell(""),
                cell(""),
                cell(problem.describe(), style=style),
            )
        )

    def flush(self) -> None:
        now = time.monotonic()
        if now - self._last_draw < REFRESH:
            return
        self._last_draw = now
        if self._live is None:
            self._live = Live(
                console=self.console,
                auto_refresh=False,
                transient=True,  # the final summary replaces it
                redirect_stdout=False,
                redirect_stderr=False,
                vertical_overflow="crop",
            )
            self._live.start()
        self._live.update(self.render(max_rows=max(4, self.console.height - LATEST - 10)), refresh=True)

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
        self.console.print(self.final_summary(), crop=False)
        self.env.stdout.flush()
        self._stream.detach()  # leave env.stdout open for whoever owns it

    # -- what is drawn ----------------------------------------------------------

    def render(self, max_rows: int | None = None) -> RenderableType:
        streams, totals = self.stats.snapshot()
        self._update_rates(streams)
        head = Text(f"ripple tap: {self.title}", style="bold")
        head.append(f"   {_totals_text(totals)}", style="")
        # The tables are cut at the edge, not the text around them, which wraps.
        parts: list[RenderableType] = [head, Trimmed(self._stream_table(streams, max_rows), crop=True)]
        if self._latest:
            parts.append(Trimmed(self._latest_table(), crop=True))
        parts.append(self._losses(totals))
        return Trimmed(Group(*parts))

    def final_summary(self) -> RenderableType:
        streams, _totals = self.stats.snapshot()
        self._update_rates(streams)
        why = self.stats.ended_by or "the source ended"
        return Trimmed(
            Group(
                Text(f"ripple tap stopped ({why}): {self.title}", style="bold"),
                self._stream_table(streams, None),
                Text(self.stats.summary()),
            )
        )

    def _update_rates(self, streams: list[StreamStats]) -> None:
        now = time.monotonic()
        for st in streams:
            prev = self._prev.get(st.stream)
            self._prev[st.stream] = (now, st.messages)
            if prev is None:
                continue
            dt = now - prev[0]
            if dt > 0:
                inst = (st.messages - prev[1]) / dt
                old = self._rates.get(st.stream)
                self._rates[st.stream] = inst if old is None else old + _RATE_SMOOTHING * (inst - old)

    def _stream_table(self, streams: list[StreamStats], max_rows: int | None) -> RenderableType:
        # Open streams first, by connection; then the most recently closed.
        open_ = sorted((s for s in streams if s.ended is None), key=lambda s: (s.stream.connection, s.stream.direction))
        closed = sorted((s for s in streams if s.ended is not None), key=lambda s: -s.stream.connection)
        rows = open_ + closed
        hidden = 0
        if max_rows is not None and len(rows) > max_rows:
            hidden = len(rows) - (max_rows - 1)
            rows = rows[: max_rows - 1]
        now_ns = time.time_ns()
        t = fitted_table(self.env, STREAM_COLUMNS, [self._stream_row(st, now_ns) for st in rows])
        if hidden:
            return Group(t, Text(f"... {hidden} more", style="dim"))
        return t

    def _stream_row(self, st: StreamStats, now_ns: int) -> tuple[Text, ...]:
        s = st.stream
        src, dst = (s.client, s.server) if s.from_client else (s.server, s.client)
        bad = "bold red"
        rate = self._rates.get(s)
        delta = "" if st.last_delta is None else f"{st.last_delta[0]}#{st.last_delta[1]}"
        hb = ""
        if st.heartbeat is not None:  # its age, then its load
            hb = f"{human_duration(now_ns - st.heartbeat[0])} {st.heartbeat[1]:.2f}"
        dst_text = f":{dst.port}" if dst.host == src.host else str(dst)
        return (
            Text(_conn(s)),
            Text(f"{src} -> {dst_text}"),
            Text(st.ended or "open", style="dim" if st.ended else "green"),
            Text(str(st.messages)),
            Text(by_type_text(st.by_type)),
            Text(human_bytes(st.stream_bytes)),
            Text("" if rate is None or st.ended else f"{rate:.0f}"),
            Text("" if st.last_seq is None else str(st.last_seq)),
            Text(delta),
            Text(str(st.delta_missing or ""), style=bad),
            Text(str(st.delta_duplicates or ""), style=bad),
            Text(str(st.crc_errors or ""), style=bad),
            Text(human_bytes(st.lost) if st.lost else "", style=bad),
            Text(hb),
            Text("" if st.watermark_lag_ns is None else human_duration(st.watermark_lag_ns)),
        )

    def _latest_table(self) -> Table:
        return fitted_table(self.env, LATEST_COLUMNS, list(self._latest))

    def _losses(self, totals: Totals) -> Text:
        st = self.stats
        text = Text(f"not shown: {st.not_shown_messages} messages    not decoded: {totals.not_decoded} bytes")
        if st.not_shown_messages or totals.not_decoded:
            text.stylize("bold yellow")
        return text


def _conn(stream: StreamId | None) -> str:
    return "" if stream is None else f"{stream.connection} {stream.direction}"


def _totals_text(t: Totals) -> str:
    return (
        f"{t.connections} connections ({t.open_connections} open), {t.messages} messages, "
        f"{t.problems} problems, {f'{t.warnings} warnings, ' if t.warnings else ''}{human_bytes(t.stream_bytes)}"
    )
