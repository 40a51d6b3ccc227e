"""Binary output: a file written whole or not at all, or stdout."""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tempfile
from collections.abc import Iterator
from typing import Any, BinaryIO

from ripple_cli.errors import InputUnreadable, UsageProblem
from ripple_cli.terminal.environment import Environment


def _mode_for(path: str) -> int:
    """The mode the file would have had if opened plainly: an existing
    file's own, else 0666 less the umask (mkstemp makes 0600)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _cannot_write(path: str, e: OSError) -> InputUnreadable:
    return InputUnreadable(f"{path}: cannot write: {e.strerror or e}")


class _Checked(io.BufferedIOBase):
    """The output file, whose write errors (a full disk, a file-size limit,
    /dev/full) are the one line that names it, as stdout's are."""

    def __init__(self, f: BinaryIO, path: str) -> None:
        super().__init__()
        self._f = f
        self._path = path

    def write(self, data: Any) -> int:
        try:
            return self._f.write(data)
        except OSError as e:
            raise _cannot_write(self._path, e) from None

    def flush(self) -> None:
        try:
            self._f.flush()
        except OSError as e:
            raise _cannot_write(self._path, e) from None

    def writable(self) -> bool:
        return True


@contextlib.contextmanager
def _closing(f: BinaryIO, path: str) -> Iterator[BinaryIO]:
    """`f`, checked, then closed: what its close flushes may fail too.
    After an error it is closed quietly (its flush may fail again)."""
    try:
        yield _Checked(f, path)  # type: ignore[misc]
    except BaseException:
        with contextlib.suppress(OSError):
            f.close()
        raise
    try:
        f.close()
    except OSError as e:
        raise _cannot_write(path, e) from None


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
    if os.path.islink(path):
        # Written through, as a redirection would: the rename below would
        # put a file in the link's place and leave its target as it was.
        path = os.path.realpath(path)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = None  # not there yet (or not to be seen): the rename below says why if it cannot be
    if mode is not None and stat.S_ISDIR(mode):
        raise InputUnreadable(f"{path}: is a directory")
    if mode is not None and not stat.S_ISREG(mode):
        # A device, a FIFO, a socket (-o /dev/null, -o /dev/stdout, a named
        # pipe): written as a redirection writes it.  The rename would put a
        # regular file in its place (as root, a /dev/null that fills up).
        try:
            f = open(path, "wb")  # noqa: SIM115 - closed below, after the caller's writes
        except OSError as e:
            raise _cannot_write(path, e) from None
        with _closing(f, path) as out:
            yield out
        return
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".ripple-", dir=directory)
    except OSError as e:
        raise _cannot_write(path, e) from None
    try:
        with _closing(os.fdopen(fd, "wb"), path) as out:
            yield out
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
