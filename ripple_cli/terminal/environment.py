"""The program's surroundings, injected so tests can play terminal or pipe.

Commands never touch `sys.stdout` or `os.environ` directly: they get an
`Environment` (as httpie does), which a test builds with in-memory streams
and `stdout_isatty=True` to check what a terminal user would see.
"""

from __future__ import annotations

import errno
import io
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, BinaryIO, TextIO

from ripple_cli.errors import InputUnreadable, PipeClosed
from ripple_cli.sexp.atoms import escape_lines

COLOR_MODES = ("auto", "always", "never")


def _write_failed(e: OSError) -> InputUnreadable:
    # a full disk (`> /dev/full`), a closed stdout (`>&-`): one line, exit 3
    return InputUnreadable(f"<stdout>: cannot write: {e.strerror or e}")


class PipeStdout(io.BufferedIOBase):
    """The process's binary stdout, for every writer (ours, rich's, a text
    wrapper around it): a broken pipe raises `PipeClosed`, not the
    BrokenPipeError that rich and Click would each turn into exit status 1,
    so that every format and command ends the same way (141, quietly)."""

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__()
        self._raw = raw

    def write(self, data: Any) -> int:
        # A reader that goes away in the middle of a write leaves it short,
        # with no error (SIGPIPE is ignored): write the rest, which fails.
        view = memoryview(data).cast("B")
        done = 0
        try:
            while done < len(view):
                n = self._raw.write(view[done:])
                if not n:
                    raise OSError(f"stdout took {n!r} bytes")
                done += n
        except BrokenPipeError as e:
            raise PipeClosed() from e
        except OSError as e:
            raise _write_failed(e) from None
        return done

    def flush(self) -> None:
        try:
            self._raw.flush()
        except BrokenPipeError as e:
            raise PipeClosed() from e
        except OSError as e:
            raise _write_failed(e) from None

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._raw.fileno()

    def isatty(self) -> bool:
        return self._raw.isatty()

    def close(self) -> None:
        pass  # the process's stdout: the interpreter closes it at exit


class ClosedStream(io.RawIOBase):
    """Stands for a standard stream the process was started without
    (`<&-`, `>&-`: Python then has None there): reading or writing it fails
    as a closed descriptor does, so the command gives its one line about
    the input or output, not an AttributeError."""

    def readinto(self, buffer: Any) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def write(self, data: Any) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True


def _stdin() -> BinaryIO:
    return sys.stdin.buffer if sys.stdin is not None else ClosedStream()  # type: ignore[return-value]


def _width() -> int:
    """The terminal's width, by shutil.get_terminal_size's rule (COLUMNS,
    else stdout's terminal, else 120) without importing shutil: it brings
    bz2 and lzma, a few ms of every command's start-up."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):  # no stdout, closed, detached, not a terminal
            columns = 0
    return columns or 120


def _stdout() -> BinaryIO:
    raw = sys.stdout.buffer if sys.stdout is not None else ClosedStream()
    return PipeStdout(raw)  # type: ignore[arg-type, return-value]


@dataclass
class Environment:
    stdin: BinaryIO = field(default_factory=_stdin)
    stdout: BinaryIO = field(default_factory=_stdout)
    # without a stderr the diagnostics have nowhere to go; the exit status still tells
    stderr: TextIO = field(default_factory=lambda: sys.stderr if sys.stderr is not None else io.StringIO())
    stdout_isatty: bool = field(default_factory=lambda: sys.stdout is not None and sys.stdout.isatty())
    stderr_isatty: bool = field(default_factory=lambda: sys.stderr is not None and sys.stderr.isatty())
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    width: int = field(default_factory=_width)
    # --color: always, never, or auto (the environment and the terminal decide)
    color_mode: str = "auto"

    @property
    def color(self) -> bool:
        """Whether stdout gets colour: --color always or never says so;
        else NO_COLOR (https://no-color.org) turns it off, FORCE_COLOR
        (https://force-color.org) on, and otherwise a terminal has it and a
        pipe does not.  Either variable counts only when not empty."""
        if self.color_mode != "auto":
            return self.color_mode == "always"
        if self.environ.get("NO_COLOR"):
            return False
        if self.environ.get("FORCE_COLOR"):
            return True
        return self.stdout_isatty

    def problem_line(self, text: str) -> None:
        """A diagnostic on stderr, in order with what stdout has shown."""
        try:
            self.stdout.flush()
        except BrokenPipeError:
            raise
        self.stderr.write(escape_lines(text) + "\n")  # no control, whatever it quotes
        self.stderr.flush()
