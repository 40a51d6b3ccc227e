"""Which dissectors `ripple wireshark` writes, by protocol name: one Lua
file, the shared helpers (lua/common.lua) first, then each protocol's
dissector in a block of its own."""

from __future__ import annotations

from collections.abc import Sequence

from ripple_cli.codec.schema import Schema
from ripple_cli.wireshark.lua import template
from ripple_cli.wireshark.pravega import pravega_lua
from ripple_cli.wireshark.ripple import DEFAULT_PORT, ripple_lua

PROTOCOLS = ("ripple", "lumberjack", "rcp", "pravega", "reactive-streams")


def generate(protocols: Sequence[str], schemas: Sequence[Schema], port: int | None = None) -> str:
    """One Lua file holding the dissectors of `protocols`, in that order."""
    parts = [template("common.lua")]
    for name in protocols:
        if name == "ripple":
            lua = ripple_lua(schemas, DEFAULT_PORT if port is None else port)
        elif name == "pravega":
            lua = pravega_lua()
        else:
            lua = template(f"{name.replace('-', '_')}.lua")
        parts.append(f"do -- {name}\n{lua}end\n")
    return "\n".join(parts)
