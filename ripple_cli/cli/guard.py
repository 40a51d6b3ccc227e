"""The wrapper every invocation runs in: exceptions become exit codes.

Bad input gives one line on stderr and a documented exit code, never a
traceback; a closed pipe (`| head`) ends the program quietly with 141,
whatever wrote: the Environment's stdout turns a broken pipe into
`PipeClosed`, which neither Click nor rich intercepts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import NoReturn, TextIO

import click

from ripple_cli.errors import EXIT_BROKEN_PIPE, EXIT_INTERNAL, EXIT_INTERRUPTED, Interrupted, PipeClosed, RippleError
from ripple_cli.sexp.atoms import escape_lines

__all__ = ["PipeClosed", "run_guarded"]


def _stderr_line(stderr: TextIO, text: str) -> None:
    try:
        # Whatever the message quotes (a name from the wire, a file name that
        # is not UTF-8), escaped as the sexp form does: no control reaches
        # the terminal, and each line the message means is one line.
        stderr.write(escape_lines(text.rstrip("\n")) + "\n")
        stderr.flush()
    except (BrokenPipeError, OSError):
        pass


def _stdout_to_devnull() -> None:
    # Further writes to a dead pipe or a full disk (at interpreter exit,
    # flushing) would fail again, with a message of Python's; point stdout
    # at /dev/null first, as the Python docs advise.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _quiet_broken_pipe() -> NoReturn:
    _stdout_to_devnull()
    sys.exit(EXIT_BROKEN_PIPE)


# Click 8.2's error for a group given no command (its message is the help).
_NO_ARGS_IS_HELP: type = getattr(click.exceptions, "NoArgsIsHelpError", type(None))


def _usage_line(e: click.UsageError, prog: str) -> str:
    """A bad command line in one line, as every other error: Click's own
    form is four (its usage, a hint, a blank line, the error).  `ripple:
    decode: Invalid value for '--count' / '-c': -1 is not in the range
    x>=0. (see 'ripple decode --help')`."""
    path = e.ctx.command_path if e.ctx is not None else prog
    command = path.partition(" ")[2]
    where = f"{prog}: {command}: " if command else f"{prog}: "
    hint = f" (see '{path} --help')" if e.ctx is not None else ""
    return where + e.format_message() + hint


def run_guarded(main: Callable[[], int | None], stderr: TextIO | None = None, prog: str = "ripple") -> NoReturn:
    err = stderr or sys.stderr
    try:
        code = main()
    except click.exceptions.Exit as e:
        code = e.exit_code
    except click.UsageError as e:
        if isinstance(e, _NO_ARGS_IS_HELP):  # `ripple schema` alone: its help, as Click shows it
            e.show(file=err)
        else:
            _stderr_line(err, _usage_line(e, prog))
        code = e.exit_code
    except click.ClickException as e:
        e.show(file=err)
        code = e.exit_code
    except click.exceptions.Abort:  # Ctrl-C: Click has already ended the line (^C) it was on
        _stderr_line(err, f"{prog}: interrupted")
        code = EXIT_INTERRUPTED
    except RippleError as e:
        _stderr_line(err, f"{prog}: {e.message}")
        code = e.exit_code
    except (BrokenPipeError, PipeClosed):
        _quiet_broken_pipe()
    except (KeyboardInterrupt, Interrupted):
        # A terminal shows ^C where the cursor was: the line goes below it.
        if getattr(err, "isatty", lambda: False)():
            _stderr_line(err, "")
        _stderr_line(err, f"{prog}: interrupted")
        code = EXIT_INTERRUPTED
    except Exception as e:
        if os.environ.get("RIPPLE_DEBUG"):
            raise
        _stderr_line(err, f"{prog}: internal error: {type(e).__name__}: {e} (set RIPPLE_DEBUG=1 for a traceback)")
        code = EXIT_INTERNAL
    if sys.stdout is None:  # started with stdout closed (`>&-`)
        sys.exit(code or 0)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_broken_pipe()
    except ValueError:
        pass  # stdout already closed (a text wrapper around it was dropped): nothing left to flush
    except OSError:
        _stdout_to_devnull()  # the command has said why (`<stdout>: cannot write`)
    sys.exit(code or 0)
