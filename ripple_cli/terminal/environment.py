"""The program's surroundings, injected so tests can play terminal or pipe.

Commands never touch `sys.stdout` or `os.environ` directly: they get an
`Environment` (as httpie does), which a test builds with in-memory streams
and `stdout_isatty=True` to check what a terminal user would see.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, BinaryIO, TextIO

from ripple_cli.errors import PipeClosed
from ripple_cli.sexp.atoms import escape_lines

COLOR_MODES = ("auto", "always", "never")


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
        return done

    def flush(self) -> None:
        try:
            self._raw.flush()
        except BrokenPipeError as e:
            raise PipeClosed() from e

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._raw.fileno()

    def isatty(self) -> bool:
        return self._raw.isatty()

    def close(self) -> None:
        pass  # the process's stdout: the interpreter closes it at exit


@dataclass
class Environment:
    stdin: BinaryIO = field(default_factory=lambda: sys.stdin.buffer)
    stdout: BinaryIO = field(default_factory=lambda: PipeStdout(sys.stdout.buffer))  # type: ignore[assignment]
    stderr: TextIO = field(default_factory=lambda: sys.stderr)
    stdout_isatty: bool = field(default_factory=lambda: sys.stdout.isatty())
    stderr_isatty: bool = field(default_factory=lambda: sys.stderr.isatty())
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    width: int = field(default_factory=lambda: shutil.get_terminal_size((120, 24)).columns)
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
