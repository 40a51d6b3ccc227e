"""The known protocols.  Adding one = its package folder + one line here.

Entries are import paths, loaded on first use, so that `ripple --help`
never imports a dissector.
"""

from __future__ import annotations

import importlib
from functools import cache

from ripple_cli.protocols.base import Dissector

# name -> "module:ClassName"; the order is the order of --list-protocols.
PROTOCOLS: dict[str, str] = {
    "ripple": "ripple_cli.protocols.ripple:RippleDissector",
    "lumberjack": "ripple_cli.protocols.lumberjack:LumberjackDissector",
    "rcp": "ripple_cli.protocols.rcp:RcpDissector",
    "pravega": "ripple_cli.protocols.pravega:PravegaDissector",
    "reactive-streams": "ripple_cli.protocols.reactive_streams:ReactiveStreamsDissector",
}

AUTO = "auto"


def names() -> list[str]:
    return list(PROTOCOLS)


@cache
def get(name: str) -> Dissector:
    """The dissector registered as `name` (KeyError when there is none)."""
    module, _, cls = PROTOCOLS[name].partition(":")
    dissector = getattr(importlib.import_module(module), cls)()
    assert isinstance(dissector, Dissector) and dissector.name == name, name
    return dissector


def all_dissectors() -> list[Dissector]:
    """Every dissector, in detection order."""
    return sorted((get(n) for n in PROTOCOLS), key=lambda d: d.priority)
