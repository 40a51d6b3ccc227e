"""Renderers: decoded items -> text for people or programs.

Every renderer is a pipeline sink (`message`, `problem`, `run`, `flush`)
with a `close`, so a command picks one by `--format` and never cares which
it got.  Formats are registered by name, as commands and protocols are:
adding one is its module, one line here, and its text in ripple-decode(1).
Entries are import paths, loaded on first use.
"""

from __future__ import annotations

import importlib

from ripple_cli.render.base import Renderer, View
from ripple_cli.terminal.environment import Environment

# name -> "module:factory"; factory(env, view) -> Renderer.  The order is
# the order of --format's choices.
FORMATS: dict[str, str] = {
    "sexp": "ripple_cli.render.sexp:line_renderer",
    "hum": "ripple_cli.render.sexp:hum_renderer",
    "table": "ripple_cli.render.table:TableRenderer",
    "json": "ripple_cli.render.json:array_renderer",
    "jsonl": "ripple_cli.render.json:lines_renderer",
}

__all__ = ["FORMATS", "Renderer", "View", "default_format", "make_renderer"]


def default_format(env: Environment) -> str:
    """A table for a person at a terminal, canonical lines for a pipe."""
    return "table" if env.stdout_isatty else "sexp"


def make_renderer(fmt: str, env: Environment, view: View | None = None) -> Renderer:
    module, _, factory = FORMATS[fmt].partition(":")
    renderer: Renderer = getattr(importlib.import_module(module), factory)(env, view or View())
    return renderer
