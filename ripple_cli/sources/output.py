"""Binary output: a file written whole or not at all, or stdout."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import BinaryIO

from ripple_cli.cli.environment import Environment
from ripple_cli.errors import InputUnreadable, UsageProblem


@contextlib.contextmanager
def binary_output(path: str | None, env: Environment) -> Iterator[BinaryIO]:
    """Yields a stream for envelopes.  A file appears only when everything
    was written (a temporary file renamed at the end), so an error never
    leaves half a stream behind."""
    if path is None or path == "-":
        if env.stdout_isatty:
            raise UsageProblem("refusing to write binary envelopes to a terminal: use -o FILE or a pipe")
        yield env.stdout
        env.stdout.flush()
        return
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".ripple-", dir=directory)
    except OSError as e:
        raise InputUnreadable(f"{path}: cannot write: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
