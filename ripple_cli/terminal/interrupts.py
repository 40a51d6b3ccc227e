"""Ctrl-C for the commands that run until stopped (tap, replay).

A process started with SIGINT ignored keeps it ignored under Python: a
shell script's background job (`ripple tap ... &`) starts so, as does
anything a process that ignores it starts.  `kill -INT` must still stop
these commands as Ctrl-C does (their report, exit 130), so while they run
SIGINT is Python's KeyboardInterrupt whatever it came as."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

Handler = Callable[[int, object], None]


def take_interrupts(on_term: Handler | None = None) -> Callable[[], None]:
    """Installs Ctrl-C's KeyboardInterrupt for SIGINT, and `on_term` (if
    given) for SIGTERM.  Returns what puts the previous ones back.  Off the
    main thread (where Python cannot install one) nothing."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous_term = signal.signal(signal.SIGTERM, on_term) if on_term is not None else None
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)

    def restore() -> None:
        if on_term is not None:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous_term is None else previous_term)
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous_int is None else previous_int)

    return restore
