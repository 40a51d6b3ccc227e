"""`decode --list-protocols`: what ripple can decode."""

from __future__ import annotations

from ripple_cli.protocols import registry
from ripple_cli.render.columns import Column, Trimmed, fitted_table, make_console
from ripple_cli.terminal.environment import Environment

COLUMNS = [
    Column("name", keep=True),
    Column("ports", priority=2, shrink=True, min_width=5),
    Column("description", priority=1, wrap=True, min_width=16),
    Column("manual", priority=3, shrink=True, min_width=9),
]


def print_protocol_list(env: Environment) -> None:
    console, stream = make_console(env)
    rows = []
    for name in registry.names():
        d = registry.get(name)
        ports = ",".join(str(p) for p in d.ports) or "-"
        rows.append([name, ports, d.title, "ripple(1)" if name == "ripple" else f"ripple-{name}(7)"])
    console.print(Trimmed(fitted_table(env, COLUMNS, rows, rule=False)), crop=False)
    stream.detach()
    env.stdout.flush()
