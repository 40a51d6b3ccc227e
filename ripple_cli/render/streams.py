"""`decode --list-streams`: the connections of the inputs, with counts."""

from __future__ import annotations

from rich.table import Table

from ripple_cli.cli.environment import Environment
from ripple_cli.codec.jsonview import iso_time
from ripple_cli.flow.demux import Demux
from ripple_cli.render.table import make_console


def print_stream_list(env: Environment, demuxes: list[Demux]) -> None:
    console, stream = make_console(env)
    t = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("source", "stream", "from", "to", "messages", "bytes", "problems", "first", "last", "end"):
        t.add_column(col, justify="right" if col in ("messages", "bytes", "problems") else "left", no_wrap=True)
    for demux in demuxes:
        for st in demux.streams.values():
            s = st.stream
            if s is None:
                ident, src, dst = "-", "", ""
            else:
                a, b = (s.client, s.server) if s.from_client else (s.server, s.client)
                ident, src, dst = s.key, str(a), str(b)
            t.add_row(
                demux.source,
                ident,
                src,
                dst,
                str(st.messages),
                str(st.bytes),
                str(st.problems),
                iso_time(st.first_ns) if st.first_ns is not None else "",
                iso_time(st.last_ns) if st.last_ns is not None else "",
                st.ended or "",
            )
    console.print(t)
    stream.detach()
    env.stdout.flush()
