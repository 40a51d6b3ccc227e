"""`ripple`: the command group.  Subcommands are imported only when run, so
that `ripple --help` stays instant however heavy a command's imports are."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Sequence
from typing import Any

import click

from ripple_cli import __version__
from ripple_cli.cli.guard import PipeClosed, run_guarded
from ripple_cli.errors import Interrupted
from ripple_cli.terminal.environment import COLOR_MODES, Environment

# name -> (module, attribute, one-line help shown by `ripple --help`)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "decode": ("ripple_cli.cli.commands.decode", "decode", "Print the messages of Ripple streams."),
    "encode": ("ripple_cli.cli.commands.encode", "encode", "Write envelopes from canonical s-expressions."),
    "verify": ("ripple_cli.cli.commands.verify", "verify", "Check framing, CRCs and sequence rules (for CI)."),
    "schema": ("ripple_cli.cli.commands.schema", "schema", "Show, check and extract schemas."),
    "tap": ("ripple_cli.cli.commands.tap", "tap", "Decode live traffic: a transparent proxy, or sniffing."),
    "replay": ("ripple_cli.cli.commands.replay", "replay", "Send a recorded stream or capture to a consumer, paced."),
    "export": ("ripple_cli.cli.commands.export", "export", "Decode capture sets into a table (Parquet, ...) on Spark."),
    "stats": ("ripple_cli.cli.commands.stats", "stats", "Counts, gaps, lags and silences of capture sets (Spark)."),
    "wireshark": (
        "ripple_cli.cli.commands.wireshark",
        "wireshark",
        "Write Wireshark Lua dissectors for Ripple and its siblings.",
    ),
}


def import_command(args: Sequence[str]) -> None:
    """Import the module of the first command `args` name, if any, ahead of
    Click (entry.py does, with the collector off).  An error is left for
    `get_command` to raise again, inside the exit-code wrapper."""
    name = next((a for a in args if a in COMMANDS), None)
    if name is not None:
        with contextlib.suppress(Exception):
            importlib.import_module(COMMANDS[name][0])


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attr, _ = COMMANDS[name]
        cmd = getattr(importlib.import_module(module), attr)
        assert isinstance(cmd, click.Command)
        return cmd

    def invoke(self, ctx: click.Context) -> Any:
        # Click turns a broken pipe into exit status 1 on its own; pass it
        # to our guard instead, which exits quietly with 141 like a C tool.
        try:
            return super().invoke(ctx)
        except BrokenPipeError as e:
            raise PipeClosed() from e
        except KeyboardInterrupt as e:
            raise Interrupted() from e

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # The short help comes from the table above: no import needed.
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="Exit status: 0 clean, 1 problems found, 2 usage, 3 unreadable input. See ripple(1).",
)
@click.version_option(__version__, "-V", "--version", prog_name="ripple")
@click.option(
    "--color",
    "color",
    type=click.Choice(COLOR_MODES),
    default="auto",
    show_default=True,
    help="Colour the output: always, never, or auto (on a terminal, unless $NO_COLOR; $FORCE_COLOR forces it).",
)
@click.pass_context
def cli(ctx: click.Context, color: str) -> None:
    """ripple: see what Ripple workers say on the wire.

    Decode, encode and verify Ripple streams: envelopes with bin_prot
    payloads, as OCaml workers write them to a socket or a dump file.
    """
    if ctx.obj is None:
        ctx.obj = Environment()
    if color != "auto":
        ctx.obj.color_mode = color


def main(args: list[str] | None = None, env: Environment | None = None) -> Any:
    def invoke() -> int | None:
        rv = cli.main(args=args, prog_name="ripple", standalone_mode=False, obj=env)
        return rv if isinstance(rv, int) else 0

    run_guarded(invoke, stderr=env.stderr if env else None)
