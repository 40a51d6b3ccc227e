"""The `ripple` executable's first lines (pyproject's script, `python -m
ripple_cli`): the command's modules imported with Python's collector off."""

from __future__ import annotations

import gc
import sys
from typing import Any


def main() -> Any:
    # Imports make classes and functions, no garbage; yet the collector
    # runs full passes over them, about 12 ms of a 93 ms `ripple verify` of
    # the demo (measured: 93 -> 81 ms).  So it is off while the command's
    # modules are imported, what they made is frozen out of later passes,
    # and it is on again, as usual, for the command's own work.
    gc.disable()
    try:
        from ripple_cli.cli.main import import_command
        from ripple_cli.cli.main import main as run

        import_command(sys.argv[1:])
    finally:
        gc.freeze()
        gc.enable()
    return run()
