"""`decode --list-protocols`: what ripple can decode."""

from __future__ import annotations

from rich.table import Table

from ripple_cli.protocols import registry
from ripple_cli.render.table import make_console
from ripple_cli.terminal.environment import Environment


def print_protocol_list(env: Environment) -> None:
    console, stream = make_console(env)
    t = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("name", "ports", "description", "manual"):
        t.add_column(col, no_wrap=col != "description")
    for name in registry.names():
        d = registry.get(name)
        ports = ",".join(str(p) for p in d.ports) or "-"
        t.add_row(name, ports, d.title, "ripple(1)" if name == "ripple" else f"ripple-{name}(7)")
    console.print(t)
    stream.detach()
    env.stdout.flush()
