"""Which dissectors `ripple wireshark` writes, by protocol name."""

from __future__ import annotations

from collections.abc import Sequence

from ripple_cli.codec.schema import Schema
from ripple_cli.wireshark.ripple import ripple_lua

PROTOCOLS = ("ripple",)


def generate(protocols: Sequence[str], schemas: Sequence[Schema], port: int | None = None) -> str:
    """One Lua file holding the dissectors of `protocols`, in that order."""
    parts = []
    for name in protocols:
        if name == "ripple":
            parts.append(ripple_lua(schemas) if port is None else ripple_lua(schemas, port))
    return "\n".join(parts)
