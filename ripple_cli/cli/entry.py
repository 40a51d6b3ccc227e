"""The `ripple` executable's first lines (pyproject's script, `python -m
ripple_cli`): the command's modules imported with Python's collector off."""

from __future__ import annotations

import gc
import sys
from typing import Any, NoReturn


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
    try:
        return run()
    except SystemExit as e:
        if "pyarrow" in sys.modules:
            leave(e.code if isinstance(e.code, int) else 0)
        raise


def leave(code: int) -> NoReturn:
    """The end of a run that loaded pyarrow, its work done: Python's own
    shutdown (its threads joined, its exit handlers run, stdio flushed),
    then out before C++'s static destructors.  Those tear down pyarrow's
    thread pools, where a thread still joinable now and then aborts a run
    that did all its work: "terminate called without an active
    exception", exit 134 (apache/arrow#34314; seen in this project's CI on
    `export --tables`, local files only)."""
    import atexit
    import os
    import threading

    for t in threading.enumerate():
        if t is not threading.main_thread() and not t.daemon:
            t.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass  # said already by the command (<stdout>: cannot write), or closed
    os._exit(code)
