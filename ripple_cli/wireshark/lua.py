"""Lua literals for the generated dissectors."""

from __future__ import annotations

from importlib import resources


def lua_string(s: bytes) -> str:
    """A Lua string literal of exactly these bytes (decimal escapes, Lua 5.2)."""
    out = []
    for b in s:
        if 0x20 <= b <= 0x7E and b not in (0x22, 0x5C):
            out.append(chr(b))
        else:
            out.append(f"\\{b:03d}")
    return '"' + "".join(out) + '"'


def template(name: str) -> str:
    """A static part of a dissector, shipped as package data (lua/NAME)."""
    return resources.files("ripple_cli.wireshark").joinpath("lua", name).read_text("utf-8")


def fill(text: str, values: dict[str, str]) -> str:
    """The template with each `@@NAME@@` replaced by its value."""
    for name, value in values.items():
        marker = f"@@{name}@@"
        assert marker in text, marker
        text = text.replace(marker, value)
    return text
