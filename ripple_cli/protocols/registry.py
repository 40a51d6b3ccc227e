"""The known protocols.  Adding one = its package folder + one line here
(and one in PRIORITY when it is not to be asked at the default rank).

Entries are import paths, loaded on first use, so that `ripple --help`
never imports a dissector, and detection imports a sibling only when the
protocols before it said no: a Ripple stream never loads the others.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
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

# Detection order among protocols whose detectors both say YES (lower
# first; unlisted: DEFAULT_PRIORITY).  Kept here rather than on the classes
# so that the order is known without importing a dissector.
PRIORITY: dict[str, int] = {
    "ripple": 50,  # a whole envelope with a valid CRC is as sure as detection gets
    "rcp": 60,  # a frame with version 1 or a whole response line is nearly as sure
    "pravega": 80,
    "reactive-streams": 150,  # three bytes (a hello) are weaker evidence than a frame with a CRC
}
DEFAULT_PRIORITY = 100

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


def detection_order() -> Iterator[Dissector]:
    """Every dissector, in detection order, each imported only when the
    caller asks for it (detection stops at the first YES)."""
    for name in sorted(PROTOCOLS, key=lambda n: PRIORITY.get(n, DEFAULT_PRIORITY)):
        yield get(name)


def all_dissectors() -> list[Dissector]:
    """Every dissector, in detection order."""
    return list(detection_order())
