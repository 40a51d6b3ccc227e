"""A rich table: the default for a person at a terminal.

Rows are printed in batches of 200 (and, from a live input, at every
pause) so that a long or live stream shows as it goes.  On a terminal the first batch
fits the columns to the line (render/columns.py) and later batches keep
those widths, under one header, until a number outgrows its column (seq
1000 after 999): then the columns are fitted again, under a new header
(`_refit`); in a pipe every cell is whole and a column only ever widens.

A file's batches are its rows 200 at a time (the last one shorter),
whatever pauses the reading makes: the layout and the widths are then the
same for the same messages however their bytes were segmented and however
fast they were decoded (the pauses are timed: pipeline.FLUSH_EVERY).  A
live input (a pipe, the tap) shows its rows at every pause instead, the
first batch fitted to what came.  A fast lane's rows (LaneKind.TABLE) go
into the same batches as messages one by one would.
"""

from __future__ import annotations

from rich.text import Text

from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.protocols import registry
from ripple_cli.protocols.base import LaneKind
from ripple_cli.protocols.item import Decoded, Run, TableRow
from ripple_cli.protocols.origin import Origin
from ripple_cli.render.base import View
from ripple_cli.render.columns import (
    Column,
    PlainRows,
    Trimmed,
    cut,
    escaped,
    fit,
    kept,
    line_width,
    make_console,
    plain_widths,
    table,
)
from ripple_cli.terminal.environment import Environment
from ripple_cli.terminal.words import plural

_BATCH = 200

# A row: its cells' texts, escaped (columns.escaped), and the styles of the
# cells that have one, by index.
Row = tuple[tuple[str, ...], tuple[tuple[int, str], ...]]


def type_style(msg: Decoded) -> str:
    """The type cell's colour, from the message's dissector."""
    return registry.get(msg.protocol).type_styles.get(msg.type, "yellow")


def time_of_day(ns: int) -> str:
    secs, frac = divmod(ns, 1_000_000_000)
    h, rem = divmod(secs % 86400, 3600)
    # Microseconds: enough to order events by eye; json and sexp keep every digit.
    return f"{h:02d}:{rem // 60:02d}:{rem % 60:02d}.{frac // 1000:06d}"


class TableRenderer:
    """Two layouts, chosen at the first batch and kept (one header): the
    envelope layout (seq, envelope time, schema, output, key) when its
    messages all have an envelope seq (Ripple's), or it holds only
    problems; else the protocols' layout (capture time, protocol, a wide
    type), where every message fits and says its protocol."""

    lane = LaneKind.TABLE

    def __init__(self, env: Environment, view: View | None = None) -> None:
        self.env = env
        view = view or View()
        self.show_connection = view.connection
        self.live = view.live
        self.console, self._stream = make_console(env)
        self._items: list[tuple[Origin, TableRow | Decoded | Problem]] = []
        self._protocols: bool | None = None  # the layout, once chosen
        self._header_done = False  # the first row is on its way to rich, with the header
        self._drawn_header = False
        self._widths: list[int | None] | None = None
        self._content: list[int] = []  # on a terminal, each column's widest cell in the batches fitted to

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

    def run(self, origin: Origin, run: Run, limit: int | None = None) -> None:
        rows = run.table_rows(limit)
        items = self._items
        at = 0
        while at < len(rows):  # the batches that messages one by one would make
            take = max(1, _BATCH - len(items))
            items.extend((origin, row) for row in rows[at : at + take])
            at += take
            if len(items) >= _BATCH:
                self._print()

    def problem(self, origin: Origin, problem: Problem) -> None:
        self._items.append((origin, problem))
        if len(self._items) >= _BATCH and self._header_done:  # a run of problems is not held whole
            self._print()

    def _row(self, origin: Origin, item: TableRow | Decoded | Problem) -> Row:
        """The row's cells, escaped, and the styles of those that have one."""
        conn = self._conn(origin)
        at = len(conn)
        if isinstance(item, TableRow):  # a lane's cells, escaped already
            if self._protocols:
                what = " ".join(x for x in (item.output, item.key, item.summary) if x)
                at_time = item.time if origin.time_ns is None else time_of_day(origin.time_ns)
                texts = (*conn, item.offset, at_time, item.protocol, item.type, cut(f"#{item.seq} {what}"))
                return texts, ((at + 3, item.style),)
            # offset, seq, time, short_type; schema, output, key, summary
            texts = item[1:4] + item[5:6] + item[7:11]
            return (*conn, *texts) if conn else texts, ((at + 3, item.style),)
        if isinstance(item, Problem):
            style = "yellow" if item.severity is Severity.WARNING else "bold red"
            # a capture's note (no offset) says in its detail what it skipped
            detail = item.detail + (
                f"; skipped {plural(item.skipped, 'byte')}" if item.skipped and item.offset >= 0 else ""
            )
            offset = "" if item.offset < 0 else str(item.offset)
            if self._protocols:
                texts = (*conn, offset, "", "", escaped(item.kind), escaped(detail))
                return texts, ((at, style), (at + 3, style), (at + 4, style))
            seq = "" if item.seq is None else str(item.seq)
            texts = (*conn, offset, seq, "", escaped(item.kind), "", "", "", escaped(detail))
            return texts, ((at, style), (at + 3, style), (at + 7, style))
        c = item.cells()
        if self._protocols:
            what = " ".join(x for x in (c.output, c.key, c.summary) if x)
            if c.seq is not None:
                what = f"#{c.seq} {what}"
            when = origin.time_ns if origin.time_ns is not None else c.time_ns
            texts = (
                *conn,
                str(item.offset),
                "" if when is None else time_of_day(when),
                escaped(item.protocol),
                escaped(item.type),
                escaped(what),
            )
            return texts, ((at + 3, type_style(item)),)
        kind = escaped(c.short_type or item.type)
        if c.seq is None:
            # In the envelope layout, a message without one: the protocol
            # where the schema goes, the capture time.
            when_text = "" if origin.time_ns is None else time_of_day(origin.time_ns)
            texts = (*conn, str(item.offset), "", when_text, kind, escaped(item.protocol), "", "", escaped(c.summary))
        else:
            texts = (
                *conn,
                str(item.offset),
                str(c.seq),
                "" if c.time_ns is None else time_of_day(c.time_ns),
                kind,
                escaped(c.schema),
                escaped(c.output),
                escaped(c.key),
                escaped(c.summary),
            )
        return texts, ((at + 3, type_style(item)),)

    def _conn(self, origin: Origin) -> tuple[str, ...]:
        if not self.show_connection:
            return ()
        st = origin.stream
        if st is None:
            return ("", "")
        return (escaped(f"{st.connection} {st.direction}"), escaped(origin.community_id or ""))

    def flush(self) -> None:
        """An input pause: from a live input, what waits is shown; from a
        file, a batch still short of _BATCH rows waits for more."""
        if self.live or len(self._items) >= _BATCH:
            self._print()

    def _print(self, final: bool = False) -> None:
        """What waits, as rows; `final`: nothing comes after them."""
        if not self._items:
            return
        first = self._items[:_BATCH]  # what the layout and widths are chosen on
        if self._protocols is None:
            messages = [m for _o, m in first if not isinstance(m, (Problem, TableRow))]  # a lane's rows have a seq
            self._protocols = any(m.cells().seq is None for m in messages)
        columns = self._columns()
        rows = [self._row(origin, item) for origin, item in self._items]
        self._items.clear()
        width = line_width(self.env)
        if width is None:  # a pipe: whole cells, columns that only widen
            widths = fit(columns, plain_widths((texts for texts, _s in rows), len(columns)), None)
            if self._widths is not None:
                widths = [max(a or 0, b or 0) for a, b in zip(widths, self._widths, strict=True)]
            self._widths = widths
        elif self._widths is None:  # a terminal: fitted once, on the first batch, kept for one header
            whole = final and len(rows) <= _BATCH  # all the rows there will be: no room kept for more
            self._content = plain_widths((texts for texts, _s in rows[:_BATCH]), len(columns))
            self._widths = fit(columns, self._content, width, more=not whole)
        else:
            self._refit(columns, rows, width, final)
        self._draw(columns, self._widths, rows)
        self.env.stdout.flush()

    def _refit(self, columns: list[Column], rows: list[Row], width: int, final: bool) -> None:
        """A later batch with a cell that may not be cut (a number: seq 1000
        under a column fitted to seq 999) wider than its column: the columns
        are fitted again, to what every batch held, under a new header, so
        that every row stays one line.  A cell that may be cut is cut."""
        assert self._widths is not None
        # Only the columns whose cells are never cut are measured (offset,
        # seq, time): a batch of a fast lane's rows pays for three columns, not nine.
        widths = self._widths
        fixed = [i for i, c in enumerate(columns) if widths[i] and not (c.shrink or c.flex)]
        widest = plain_widths(([texts[i] for i in fixed] for texts, _s in rows), len(fixed))
        if not any(n > (widths[i] or 0) for i, n in zip(fixed, widest, strict=True)):
            return
        content = plain_widths((texts for texts, _s in rows), len(columns))
        self._content = [max(a, b) for a, b in zip(self._content, content, strict=True)]
        self._widths = fit(columns, self._content, width, more=not final)
        self._header_done = self._drawn_header = False

    def _draw(self, columns: list[Column], widths: list[int | None], rows: list[Row]) -> None:
        """The rows, under the header the first time: rich draws the header
        and what PlainRows does not copy (and everything in colour)."""
        plain = None if self.env.color else PlainRows(columns, widths)
        first = 0 if self._header_done else 1  # the header is drawn by rich, with the first row
        written: list[str | None] = [None] * first
        written += [None] * (len(rows) - first) if plain is None else plain.lines([r[0] for r in rows[first:]])
        lines: list[str] = []
        held: list[Row] = []  # rows for rich, in order with the lines
        for row, line in zip(rows, written, strict=True):
            if line is None:
                if lines:
                    self._stream.write("\n".join(lines) + "\n")
                    lines.clear()
                held.append(row)
                self._header_done = True  # the header is drawn with the first of them
                continue
            if held:
                self._rich(columns, widths, held)
            lines.append(line)
        if held:
            self._rich(columns, widths, held)
        if lines:
            self._stream.write("\n".join(lines) + "\n")

    def _rich(self, columns: list[Column], widths: list[int | None], rows: list[Row]) -> None:
        t = table(columns, widths, header=not self._drawn_header)
        for texts, styles in rows:
            cells = [Text(x) for x in texts]
            for i, style in styles:
                cells[i].style = style
            t.add_row(*kept(cells, widths))
        self.console.print(Trimmed(t), crop=False)
        self._drawn_header = True
        rows.clear()

    def close(self) -> None:
        self._print(final=True)
        self._stream.detach()  # leave env.stdout open for whoever owns it
