"""HOST:PORT on the command line."""

from __future__ import annotations

from typing import Any

import click


def split_address(text: str) -> tuple[str, int]:
    """`127.0.0.1:9000`, `[::1]:9000`, `localhost:9000`, `:9000` (no host).

    Raises ValueError with a reason the user can act on."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        raise ValueError("expected HOST:PORT (e.g. 127.0.0.1:9000)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError("an IPv6 address goes in brackets: [::1]:9000")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"{port_text!r} is not a port (0 to 65535)")
    return host, int(port_text)


def address_text(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class HostPort(click.ParamType):  # type: ignore[type-arg]
    name = "host:port"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, int]:
        if isinstance(value, tuple):
            return value
        try:
            return split_address(str(value))
        except ValueError as e:
            self.fail(f"{value!r}: {e}", param, ctx)
