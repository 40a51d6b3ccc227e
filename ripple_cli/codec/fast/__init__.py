"""The codec's fast lane: the common case of decoding and verifying, in C.

The pure-Python codec (framing, messages, delta, text, the stream rules) is
what ripple does.  `_speedups` (a C extension built from the sources next
to this file by `pip install`) only takes over the boring envelopes: whole
and valid, a known payload type that decodes exactly, no warning, no
Handshake, no first Delta of an output.  It stops at anything else and the
Python code takes that envelope, so every problem it does not produce
itself is still worded by the same Python code.  See protocols/ripple/lane.py for how
the two are interleaved, program.py for schemas compiled for C.

`RIPPLE_PURE=1` in the environment turns the fast lane off (the tests run
the CLI both ways); a machine where the extension could not be built runs
pure without being asked.  The extension is used only when the tables it
was compiled with (opcodes, record layout) are layout.py's: a stale or
mismatched build is refused with one line on stderr rather than trusted.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
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
    return checked(_speedups)


def checked(accel: ModuleType) -> ModuleType | None:
    """The module when its `LAYOUT` is layout.py's; else None (the pure lane),
    said in one line on stderr: the C lane would misread programs or
    records, and print or report wrong things without failing."""
    from ripple_cli.codec.fast.layout import LAYOUT

    theirs = getattr(accel, "LAYOUT", None)
    if theirs == LAYOUT:
        # A Handshake's pairs as the C reader keeps them: a sequence like
        # the pure lane's (codec/messages.py), which compares with it.
        Sequence.register(accel.OutputSchemas)
        return accel
    if isinstance(theirs, dict):
        what = ", ".join(k for k in sorted(LAYOUT.keys() | theirs.keys()) if theirs.get(k) != LAYOUT.get(k))
    else:
        what = "no LAYOUT"
    print(
        f"ripple: warning: the C fast lane was built from other tables than layout.py ({what}); "
        "running without it (rebuild it: pip install -e .)",
        file=sys.stderr,
    )
    return None
