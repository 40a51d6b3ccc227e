"""`decode --list-streams`: the connections of the inputs, with counts."""

from __future__ import annotations

from rich.table import Table

from ripple_cli.cli.environment import Environment
from ripple_cli.flow.demux import Demux
from ripple_cli.render.table import make_console, time_of_day


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
