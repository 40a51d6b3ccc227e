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

from ripple_cli.cli.environment import Environment
from ripple_cli.codec.jsonview import type_name
from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.codec.schema import text
from ripple_cli.flow.items import Decoded
from ripple_cli.flow.origin import Origin
from ripple_cli.protocols.base import ProtoMessage
from ripple_cli.render.summary import key_text, output_text, summary

_BATCH = 200
_TYPE_STYLE = {
    "Delta": "cyan",
    "Handshake": "bold green",
    "Heartbeat": "dim",
    "Schema_negotiation": "green",
    "Checkpoint_request": "magenta",
    "Checkpoint_ack": "magenta",
}


def proto_style(msg: ProtoMessage) -> str:
    from ripple_cli.protocols import registry

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


class TableRenderer:
    def __init__(self, env: Environment, show_connection: bool = False) -> None:
        self.env = env
        self.show_connection = show_connection
        self.console, self._stream = make_console(env)
        self._rows: list[tuple[Text, ...]] = []
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
        if isinstance(msg, ProtoMessage):
            self._proto(origin, msg)
            return
        f = msg.frame
        name = type_name(f.tag)
        style = _TYPE_STYLE.get(name, "yellow")
        self._rows.append(
            (
                *self._conn(origin),
                Text(str(f.offset)),
                Text(str(f.seq)),
                Text(time_of_day(f.time_ns)),
                Text(name.replace("Checkpoint_", "Ckpt_").replace("Schema_negotiation", "Negotiation"), style=style),
                Text(text(f.fingerprint)),
                Text(output_text(msg.body)),
                Text(key_text(msg.body)),
                Text(summary(msg.body)),
            )
        )
        if len(self._rows) >= _BATCH:
            self.flush()

    def _proto(self, origin: Origin, msg: ProtoMessage) -> None:
        """A sibling protocol's message: no envelope, so the capture time,
        and the protocol's name where Ripple shows the schema."""
        self._rows.append(
            (
                *self._conn(origin),
                Text(str(msg.offset)),
                Text(""),
                Text("" if origin.time_ns is None else time_of_day(origin.time_ns)),
                Text(msg.type, style=proto_style(msg)),
                Text(msg.protocol),
                Text(""),
                Text(""),
                Text(msg.summary),
            )
        )
        if len(self._rows) >= _BATCH:
            self.flush()

    def _conn(self, origin: Origin) -> tuple[Text, ...]:
        if not self.show_connection:
            return ()
        st = origin.stream
        return (Text("" if st is None else f"{st.connection} {st.direction}"),)

    def problem(self, origin: Origin, problem: Problem) -> None:
        style = "yellow" if problem.severity is Severity.WARNING else "bold red"
        detail = problem.detail + (f"; skipped {problem.skipped} bytes" if problem.skipped else "")
        self._rows.append(
            (
                *self._conn(origin),
                Text("" if problem.offset < 0 else str(problem.offset), style=style),
                Text("" if problem.seq is None else str(problem.seq)),
                Text(""),
                Text(problem.kind, style=style),
                Text(""),
                Text(""),
                Text(""),
                Text(detail, style=style),
            )
        )

    def flush(self) -> None:
        if not self._rows:
            return
        table = self._table()
        for row in self._rows:
            table.add_row(*row)
        self._rows.clear()
        self.console.print(table)
        self._header_done = True
        self.env.stdout.flush()

    def close(self) -> None:
        self.flush()
        self._stream.detach()  # leave env.stdout open for whoever owns it
