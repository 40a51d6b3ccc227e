"""The program's surroundings, injected so tests can play terminal or pipe.

Commands never touch `sys.stdout` or `os.environ` directly: they get an
`Environment` (as httpie does), which a test builds with in-memory streams
and `stdout_isatty=True` to check what a terminal user would see.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import BinaryIO, TextIO


@dataclass
class Environment:
    stdin: BinaryIO = field(default_factory=lambda: sys.stdin.buffer)
    stdout: BinaryIO = field(default_factory=lambda: sys.stdout.buffer)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)
    stdout_isatty: bool = field(default_factory=lambda: sys.stdout.isatty())
    stderr_isatty: bool = field(default_factory=lambda: sys.stderr.isatty())
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    width: int = field(default_factory=lambda: shutil.get_terminal_size((120, 24)).columns)

    @property
    def color(self) -> bool:
        """Colour on a terminal unless NO_COLOR is set (https://no-color.org)."""
        return self.stdout_isatty and not self.environ.get("NO_COLOR")

    def problem_line(self, text: str) -> None:
        """A diagnostic on stderr, in order with what stdout has shown."""
        try:
            self.stdout.flush()
        except BrokenPipeError:
            raise
        self.stderr.write(text + "\n")
        self.stderr.flush()
