"""Exit codes and the errors that carry them.

Errors carry their exit code; `ripple_cli.cli.guard.run_guarded` is the one
place they are turned into a line on stderr and a process exit status.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_PROBLEMS = 1  # problems found in the input (or an encode input that is not valid)
EXIT_USAGE = 2  # bad command line
EXIT_UNREADABLE = 3  # an input could not be opened or read
EXIT_INTERNAL = 70  # a bug in ripple (EX_SOFTWARE)
EXIT_INTERRUPTED = 130  # Ctrl-C
EXIT_TERMINATED = 143  # SIGTERM to the tap or replay (128 + 15): stopped as by Ctrl-C, with its summary
EXIT_BROKEN_PIPE = 141  # the reader of stdout went away (128 + SIGPIPE), as a C tool would

EXIT_CODES = {
    EXIT_OK: "success: no problem found",
    EXIT_PROBLEMS: "problems found in the input (verify, decode), or invalid text (encode), or incompatible schemas",
    EXIT_USAGE: "bad command line",
    EXIT_UNREADABLE: (
        "an input file could not be opened or read, an output could not be written, or a schema file is not valid"
    ),
    EXIT_INTERNAL: "internal error (a bug: please report it, with RIPPLE_DEBUG=1 for a traceback)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
    EXIT_TERMINATED: "tap: stopped by SIGTERM (kill, a service manager), after its summary",
    EXIT_BROKEN_PIPE: "stdout was closed by its reader (e.g. | head); nothing is printed",
}


class PipeClosed(Exception):
    """stdout's reader went away (`| head`).  Deliberately not an OSError,
    so that neither Click nor rich (which would exit 1) handles it: it
    reaches `run_guarded`, which exits quietly with EXIT_BROKEN_PIPE."""


class Interrupted(Exception):
    """Ctrl-C within a command, passed on as itself: Click would turn
    KeyboardInterrupt into Abort after writing an empty line to stderr,
    a stray line in a log."""


class RippleError(Exception):
    """An error to report in one line; `exit_code` says which kind."""

    exit_code = EXIT_PROBLEMS

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InputUnreadable(RippleError):
    exit_code = EXIT_UNREADABLE


class UsageProblem(RippleError):
    exit_code = EXIT_USAGE


class InvalidInput(RippleError):
    exit_code = EXIT_PROBLEMS
