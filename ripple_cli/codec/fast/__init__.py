"""The codec's fast lane: the common case of decoding and verifying, in C.

The pure-Python codec (framing, messages, delta, text, the stream rules) is
what ripple does.  `_speedups` (a C extension built from the sources next
to this file by `pip install`) only takes over the boring envelopes: whole
and valid, a known payload type that decodes exactly, no warning, no
Handshake, no first Delta of an output.  It stops at anything else and the
Python code takes that envelope, so every problem it does not produce
itself is still worded by the same Python code.  See lane.py for how the
two are interleaved, program.py for schemas compiled for C.

`RIPPLE_PURE=1` in the environment turns the fast lane off (the tests run
the CLI both ways); a machine where the extension could not be built runs
pure without being asked.
"""

from __future__ import annotations

import os
from functools import cache
from types import ModuleType


def pure_requested() -> bool:
    return os.environ.get("RIPPLE_PURE", "") not in ("", "0")


def speedups() -> ModuleType | None:
    """The extension module, or None: not built here, or RIPPLE_PURE is set.
    Read at each call, so that a test can switch it."""
    if pure_requested():
        return None
    return _load()


@cache
def _load() -> ModuleType | None:
    try:
        from ripple_cli.codec.fast import _speedups
    except ImportError:
        return None
    return _speedups
