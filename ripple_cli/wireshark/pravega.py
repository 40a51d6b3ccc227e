"""The Pravega dissector: the static Lua (lua/pravega.lua) with the command
names and body layouts of ripple's own decoder (protocols/pravega) written
in as Lua tables, so that both read the same fields."""

from __future__ import annotations

from ripple_cli.codec.envelope import DEFAULT_MAX_PAYLOAD
from ripple_cli.protocols.pravega.commands import COMMANDS, HEADER_SIZE, MAX_EVENT_SIZE
from ripple_cli.protocols.pravega.stream import MAX_TRACKED_READS
from ripple_cli.protocols.pravega.wire import LAYOUTS
from ripple_cli.wireshark.lua import fill, lua_string, template


def pravega_lua() -> str:
    names = ", ".join(f"[{code}] = {lua_string(name.encode())}" for code, (name, _side) in sorted(COMMANDS.items()))
    layouts = []
    for code, layout in sorted(LAYOUTS.items()):
        fields = ", ".join(
            f"{{{lua_string(f.name.encode())}, {lua_string(f.kind.value.encode())}, {str(f.optional).lower()}}}"
            for f in layout
        )
        layouts.append(f"    [{code}] = {{{fields}}},\n")
    sides = ", ".join(f"[{code}] = {lua_string(side.value.encode())}" for code, (_n, side) in sorted(COMMANDS.items()))
    values = {
        "NAMES": "{" + names + "}",
        "LAYOUTS": "{\n" + "".join(layouts) + "}",
        "SIDES": "{" + sides + "}",
        "MAX_PENDING": str(min(MAX_EVENT_SIZE + HEADER_SIZE, DEFAULT_MAX_PAYLOAD)),
        "MAX_PAYLOAD": str(DEFAULT_MAX_PAYLOAD),
        "MAX_TRACKED_READS": str(MAX_TRACKED_READS),
    }
    return fill(template("pravega.lua"), values)
