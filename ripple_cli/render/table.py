"""A rich table: the default for a person at a terminal.

Rows are printed in batches (every input pause, or every 200 rows) so that
a long or live stream shows as it goes; columns have fixed widths so that
batches line up under one header.
"""

from __future__ import annotations

import io

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.protocols import registry
from ripple_cli.protocols.item import Decoded
from ripple_cli.protocols.origin import Origin
from ripple_cli.render.base import NoRuns, View
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


def make_console(env: Environment) -> tuple[Console, io.TextIOWrapper]:
    stream = io.TextIOWrapper(env.stdout, encoding="utf-8", errors="replace", write_through=True)
    console = Console(
        file=stream,
        force_terminal=env.stdout_isatty,
        no_color=not env.color,
        color_system="auto" if env.color else None,
        width=max(env.width, 60),
        highlight=False,
        emoji=False,
    )
    return console, stream


class TableRenderer(NoRuns):
    """Two layouts, chosen at the first rows and kept (one header): the
    envelope layout (seq, envelope time, schema, output, key) when the first
    rows hold a message with an envelope seq (Ripple's) or only problems,
    else the protocols' layout (capture time, protocol, a wide type), where
    every message fits."""

    def __init__(self, env: Environment, view: View | None = None) -> None:
        self.env = env
        self.show_connection = (view or View()).connection
        self.console, self._stream = make_console(env)
        self._items: list[tuple[Origin, Decoded | Problem]] = []
        self._protocols: bool | None = None  # the layout, once chosen
        self._header_done = False
        # Wider terminals give the name columns room before the summary.
        w = self.console.width
        self._widths = (8, 6, 6) if w < 100 else (12, 8, 8) if w < 110 else (14, 10, 12) if w < 150 else (18, 12, 20)

    def _table(self) -> Table:
        t = Table(
            box=box.SIMPLE_HEAD,
            show_header=not self._header_done,
            show_edge=False,
            pad_edge=False,
            padding=(0, 1),
            collapse_padding=True,
            expand=True,
        )
        if self.show_connection:
            t.add_column("conn", width=7, no_wrap=True)
        t.add_column("offset", justify="right", width=9, no_wrap=True)
        if self._protocols:
            t.add_column("time (UTC)", width=15, no_wrap=True)
            t.add_column("protocol", width=10, no_wrap=True, overflow="ellipsis")
            t.add_column("type", width=16, no_wrap=True, overflow="ellipsis")
            t.add_column("summary", ratio=1, min_width=12, no_wrap=True, overflow="ellipsis")
            return t
        t.add_column("seq", justify="right", width=6, no_wrap=True, overflow="fold")
        t.add_column("time (UTC)", width=15, no_wrap=True)
        t.add_column("type", width=11, no_wrap=True)
        schema_w, output_w, key_w = self._widths
        t.add_column("schema", width=schema_w, no_wrap=True, overflow="ellipsis")
        t.add_column("output", width=output_w, no_wrap=True, overflow="ellipsis")
        t.add_column("key", width=key_w, no_wrap=True, overflow="ellipsis")
        t.add_column("summary", ratio=1, min_width=12, no_wrap=True, overflow="ellipsis")
        return t

    def message(self, origin: Origin, msg: Decoded) -> None:
        self._items.append((origin, msg))
        if len(self._items) >= _BATCH:
            self.flush()

    def problem(self, origin: Origin, problem: Problem) -> None:
        self._items.append((origin, problem))

    def _row(self, origin: Origin, item: Decoded | Problem) -> tuple[Text, ...]:
        conn = self._conn(origin)
        if isinstance(item, Problem):
            style = "yellow" if item.severity is Severity.WARNING else "bold red"
            detail = item.detail + (f"; skipped {item.skipped} bytes" if item.skipped else "")
            offset = Text("" if item.offset < 0 else str(item.offset), style=style)
            kind, detail_text = Text(item.kind, style=style), Text(detail, style=style)
            if self._protocols:
                return (*conn, offset, Text(""), Text(""), kind, detail_text)
            seq = Text("" if item.seq is None else str(item.seq))
            return (*conn, offset, seq, Text(""), kind, Text(""), Text(""), Text(""), detail_text)
        c = item.cells()
        kind = Text(c.short_type or item.type, style=type_style(item))
        if self._protocols:
            what = " ".join(x for x in (c.output, c.key, c.summary) if x)
            if c.seq is not None:
                what = f"#{c.seq} {what}"
            at = origin.time_ns if origin.time_ns is not None else c.time_ns
            return (
                *conn,
                Text(str(item.offset)),
                Text("" if at is None else time_of_day(at)),
                Text(item.protocol),
                Text(item.type, style=type_style(item)),
                Text(what),
            )
        if c.seq is None:
            # In the envelope layout, a message without one: the protocol
            # where the schema goes, the capture time.
            when = Text("" if origin.time_ns is None else time_of_day(origin.time_ns))
            return (
                *conn,
                Text(str(item.offset)),
                Text(""),
                when,
                kind,
                Text(item.protocol),
                Text(""),
                Text(""),
                Text(c.summary),
            )
        return (
            *conn,
            Text(str(item.offset)),
            Text(str(c.seq)),
            Text("" if c.time_ns is None else time_of_day(c.time_ns)),
            kind,
            Text(c.schema),
            Text(c.output),
            Text(c.key),
            Text(c.summary),
        )

    def _conn(self, origin: Origin) -> tuple[Text, ...]:
        if not self.show_connection:
            return ()
        st = origin.stream
        return (Text("" if st is None else f"{st.connection} {st.direction}"),)

    def flush(self) -> None:
        if not self._items:
            return
        if self._protocols is None:
            messages = [m for _o, m in self._items if not isinstance(m, Problem)]
            self._protocols = bool(messages) and not any(m.cells().seq is not None for m in messages)
        table = self._table()
        for origin, item in self._items:
            table.add_row(*self._row(origin, item))
        self._items.clear()
        self.console.print(table)
        self._header_done = True
        self.env.stdout.flush()

    def close(self) -> None:
        self.flush()
        self._stream.detach()  # leave env.stdout open for whoever owns it
