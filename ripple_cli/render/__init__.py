"""Renderers: decoded messages and problems -> text for people or programs.

Every renderer has the same three calls (`message`, `problem`, `close`) so
a command picks one by `--format` and never cares which it got.
"""

from __future__ import annotations

from ripple_cli.cli.environment import Environment
from ripple_cli.render.base import Renderer

FORMATS = ("sexp", "hum", "table", "json", "jsonl")


def default_format(env: Environment) -> str:
    """A table for a person at a terminal, canonical lines for a pipe."""
    return "table" if env.stdout_isatty else "sexp"


def make_renderer(fmt: str, env: Environment, show_offsets: bool = False, show_connection: bool = False) -> Renderer:
    if fmt in ("sexp", "hum"):
        from ripple_cli.render.sexp import SexpRenderer

        return SexpRenderer(env, hum=fmt == "hum", show_offsets=show_offsets, show_connection=show_connection)
    if fmt in ("json", "jsonl"):
        from ripple_cli.render.json import JsonRenderer

        return JsonRenderer(env, array=fmt == "json")
    from ripple_cli.render.table import TableRenderer

    return TableRenderer(env, show_connection=show_connection)
