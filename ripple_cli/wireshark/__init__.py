"""Wireshark Lua dissectors written from ripple's own knowledge of the wire:
`generate(protocol, ...)` gives the text of one Lua file (ripple-wireshark(1))."""

from __future__ import annotations

from ripple_cli.wireshark.generate import PROTOCOLS, generate

__all__ = ["PROTOCOLS", "generate"]
