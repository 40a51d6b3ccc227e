"""A rich table: the default for a person at a terminal.

Rows are printed in batches (every input pause, or every 200 rows) so that
a long or live stream shows as it goes.  On a terminal the first batch
fits the columns to the line (render/columns.py) and later batches keep
those widths, under one header; in a pipe every cell is whole and a
column only ever widens.

The first batch of a file is its first 200 rows, or all of them when
there are fewer, whatever pauses the reading makes: the layout and the
widths are then the same for the same messages however their bytes were
segmented.  A live input (a pipe, the tap) shows its rows at every pause
instead, the first batch fitted to what came.
"""

from __future__ import annotations

from rich.text import Text

from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.protocols import registry
from ripple_cli.protocols.item import Decoded
from ripple_cli.protocols.origin import Origin
from ripple_cli.render.base import NoRuns, View
from ripple_cli.render.columns import Column, Trimmed, cell, fit, kept, line_width, make_console, measure, table
from ripple_cli.terminal.environment import Environment

_BATCH = 200


def type_style(msg: Decoded) -> str:
    """The type cell's colour, from the message's dissector."""
    return registry.get(msg.protocol).type_styles.get(msg.type, "yellow")


def time_of_day(ns: int) -> str:
    secs, frac = divmod(ns, 1_000_000_000)
    h, rem = divmod(secs % 86400, 3600)
    # Microseconds: enough to order events by eye; json and sexp keep every digit.
    return f"{h:02d}:{rem // 60:02d}:{rem % 60:02d}.{frac // 1000:06d}"


class TableRenderer(NoRuns):
    """Two layouts, chosen at the first batch and kept (one header): the
    envelope layout (seq, envelope time, schema, output, key) when its
    messages all have an envelope seq (Ripple's), or it holds only
    problems; else the protocols' layout (capture time, protocol, a wide
    type), where every message fits and says its protocol."""

    def __init__(self, env: Environment, view: View | None = None) -> None:
        self.env = env
        view = view or View()
        self.show_connection = view.connection
        self.live = view.live
        self.console, self._stream = make_console(env)
        self._items: list[tuple[Origin, Decoded | Problem]] = []
        self._protocols: bool | None = None  # the layout, once chosen
        self._header_done = False
        self._widths: list[int | None] | None = None

    def _columns(self) -> list[Column]:
        # The Community ID is the first to go on a narrow line.
        conn = [Column("conn", priority=7), Column("community_id", extra=True)] if self.show_connection else []
        offset = Column("offset", keep=True, at_least=9, justify="right")
        time = Column("time (UTC)", priority=2)
        summary = Column("summary", priority=6, shrink=True, flex=True, min_width=18)
        if self._protocols:
            return [
                *conn,
                offset,
                time,
                Column("protocol", priority=3, shrink=True, min_width=6, max_width=10),
                # max_width: Ripple's Schema_negotiation whole; longer Pravega command names are cut.
                Column("type", priority=5, shrink=True, min_width=8, max_width=18),
                summary,
            ]
        return [
            *conn,
            offset,
            Column("seq", keep=True, at_least=6, justify="right"),
            time,
            # at_least: "Negotiation", the longest of Ripple's short type names.
            Column("type", priority=5, shrink=True, min_width=8, max_width=11, at_least=11),
            Column("schema", priority=1, shrink=True, min_width=8, max_width=18),
            Column("output", priority=3, shrink=True, min_width=6, max_width=12),
            Column("key", priority=4, shrink=True, min_width=8, max_width=20),
            summary,
        ]

    def message(self, origin: Origin, msg: Decoded) -> None:
        self._items.append((origin, msg))
        if len(self._items) >= _BATCH:
            self._print()

    def problem(self, origin: Origin, problem: Problem) -> None:
        self._items.append((origin, problem))
        if len(self._items) >= _BATCH and self._header_done:  # a run of problems is not held whole
            self._print()

    def _row(self, origin: Origin, item: Decoded | Problem) -> tuple[Text, ...]:
        conn = self._conn(origin)
        if isinstance(item, Problem):
            style = "yellow" if item.severity is Severity.WARNING else "bold red"
            detail = item.detail + (f"; skipped {item.skipped} bytes" if item.skipped else "")
            offset = cell("" if item.offset < 0 else str(item.offset), style=style)
            kind, detail_text = cell(item.kind, style=style), cell(detail, style=style)
            if self._protocols:
                return (*conn, offset, cell(""), cell(""), kind, detail_text)
            seq = cell("" if item.seq is None else str(item.seq))
            return (*conn, offset, seq, cell(""), kind, cell(""), cell(""), cell(""), detail_text)
        c = item.cells()
        kind = cell(c.short_type or item.type, style=type_style(item))
        if self._protocols:
            what = " ".join(x for x in (c.output, c.key, c.summary) if x)
            if c.seq is not None:
                what = f"#{c.seq} {what}"
            at = origin.time_ns if origin.time_ns is not None else c.time_ns
            return (
                *conn,
                cell(str(item.offset)),
                cell("" if at is None else time_of_day(at)),
                cell(item.protocol),
                cell(item.type, style=type_style(item)),
                cell(what),
            )
        if c.seq is None:
            # In the envelope layout, a message without one: the protocol
            # where the schema goes, the capture time.
            when = cell("" if origin.time_ns is None else time_of_day(origin.time_ns))
            return (
                *conn,
                cell(str(item.offset)),
                cell(""),
                when,
                kind,
                cell(item.protocol),
                cell(""),
                cell(""),
                cell(c.summary),
            )
        return (
            *conn,
            cell(str(item.offset)),
            cell(str(c.seq)),
            cell("" if c.time_ns is None else time_of_day(c.time_ns)),
            kind,
            cell(c.schema),
            cell(c.output),
            cell(c.key),
            cell(c.summary),
        )

    def _conn(self, origin: Origin) -> tuple[Text, ...]:
        if not self.show_connection:
            return ()
        st = origin.stream
        if st is None:
            return (cell(""), cell(""))
        return (cell(f"{st.connection} {st.direction}"), cell(origin.community_id or ""))

    def flush(self) -> None:
        """An input pause: what waits is shown, except, from a file, a first
        batch still short of _BATCH rows, which waits for more."""
        if self._header_done or self.live or len(self._items) >= _BATCH:
            self._print()

    def _print(self, final: bool = False) -> None:
        """What waits, as rows; `final`: nothing comes after them."""
        if not self._items:
            return
        first = self._items[:_BATCH]  # what the layout and widths are chosen on
        if self._protocols is None:
            messages = [m for _o, m in first if not isinstance(m, Problem)]
            self._protocols = any(m.cells().seq is None for m in messages)
        columns = self._columns()
        rows = [self._row(origin, item) for origin, item in self._items]
        self._items.clear()
        width = line_width(self.env)
        if width is None:  # a pipe: whole cells, columns that only widen
            widths = fit(columns, measure(columns, rows), None)
            if self._widths is not None:
                widths = [max(a or 0, b or 0) for a, b in zip(widths, self._widths, strict=True)]
            self._widths = widths
        elif self._widths is None:  # a terminal: fitted once, on the first batch, kept for one header
            whole = final and len(rows) <= _BATCH  # all the rows there will be: no room kept for more
            self._widths = fit(columns, measure(columns, rows[:_BATCH]), width, more=not whole)
        t = table(columns, self._widths, header=not self._header_done)
        for row in rows:
            t.add_row(*kept(row, self._widths))
        self.console.print(Trimmed(t))
        self._header_done = True
        self.env.stdout.flush()

    def close(self) -> None:
        self._print(final=True)
        self._stream.detach()  # leave env.stdout open for whoever owns it
