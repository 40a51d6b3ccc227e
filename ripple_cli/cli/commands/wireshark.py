"""`ripple wireshark`: a Wireshark Lua dissector for Ripple (and its siblings)."""

from __future__ import annotations

import click

from ripple_cli.cli.options import OutputPath, max_payload_option, schemas_option
from ripple_cli.flow.inputs import Inputs
from ripple_cli.sources.output import binary_output
from ripple_cli.terminal.environment import Environment
from ripple_cli.wireshark import PROTOCOLS, generate


@click.command()
@click.argument("inputs", nargs=-1, type=click.Path(allow_dash=True))
@click.option(
    "--output",
    "-o",
    "output",
    type=OutputPath(dir_okay=False, allow_dash=True),
    help="Write the Lua file here (default: stdout).",
)
@click.option(
    "--protocol",
    "protocol",
    type=click.Choice((*PROTOCOLS, "all")),
    default="ripple",
    show_default=True,
    help="The protocol to write a dissector for; all: every one, in one file.",
)
@click.option(
    "--port",
    "port",
    type=click.IntRange(0, 65535),
    metavar="PORT",
    help="Ripple's preferred TCP port, the Lua preference's default (0: none). Default: 7077.",
)
@schemas_option
@max_payload_option
@click.pass_obj
def wireshark(
    env: Environment,
    inputs: tuple[str, ...],
    output: str | None,
    protocol: str,
    port: int | None,
    schemas: tuple[str, ...],
    max_payload: int,
) -> int:
    """Write a Wireshark Lua dissector (load it with tshark -X lua_script:FILE).

    For Ripple by default; --protocol names a sibling protocol, or all.

    Ripple Deltas decode into typed fields with the schemas of --schemas and
    of the Handshakes of INPUTS (Ripple streams or captures, - for stdin),
    as ripple schema extract finds them.  Without either, Deltas show as
    raw key and delta bytes.
    """
    from ripple_cli.wireshark.schemas import collect_schemas

    found = collect_schemas(Inputs(schemas=schemas, max_payload=max_payload), inputs, env)
    names = PROTOCOLS if protocol == "all" else (protocol,)
    if inputs and not found and "ripple" in names:
        # Exit 0 (the dissector is written), but a user who gave inputs expected typed Deltas.
        env.problem_line(f"ripple: wireshark: no schema in {', '.join(inputs)}: Deltas show as raw bytes")
    text = generate(names, found, port).encode("utf-8")
    if output is None or output == "-":
        env.stdout.write(text)
        env.stdout.flush()
        return 0
    with binary_output(output, env) as out:  # its write errors are the one line that names it
        out.write(text)
    return 0
