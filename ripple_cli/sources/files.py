"""Files and stdin as streams of byte chunks, with errors that name the file."""

from __future__ import annotations

import mmap
import os
import stat
import weakref
from collections.abc import Generator, Iterator
from types import ModuleType
from typing import BinaryIO

from ripple_cli.errors import InputUnreadable
from ripple_cli.sexp.atoms import escape_text

from .urls import is_url, open_url

CHUNK_SIZE = 1 << 20
# A regular file this large or larger is read through mmap windows of
# WINDOW bytes (`mapped_chunks`): a decoder that takes buffers
# (StreamDissector.takes_buffers) then works on the page cache itself.
# read() copied each byte into fresh memory, which the kernel had to clear
# first: 70 of `verify`'s 320 ms on a 127 MB stream, where mapping the
# windows takes 3.  Two windows are held at most, so the resident size
# stays flat in the file's size.
MAP_MIN = 4 << 20
WINDOW = 4 << 20


def display_name(path: str) -> str:
    """The name diagnostics give an input: on one line whatever it holds (a
    newline or a control in a file name is escaped as the sexp form escapes
    it), so that each diagnostic stays one line."""
    return "<stdin>" if path == "-" else escape_text(path)


def open_error(name: str, e: OSError, what: str = "cannot open") -> InputUnreadable:
    """The one line every command gives for an input it cannot open:
    `NAME: no such file`, `NAME: is a directory`, ... (exit status 3)."""
    if isinstance(e, FileNotFoundError):
        return InputUnreadable(f"{name}: no such file")
    if isinstance(e, IsADirectoryError):
        return InputUnreadable(f"{name}: is a directory")
    if isinstance(e, PermissionError):
        return InputUnreadable(f"{name}: permission denied")
    return InputUnreadable(f"{name}: {what}: {e.strerror or e}")


def read_chunks(path: str, stdin: BinaryIO, chunk_size: int = CHUNK_SIZE, text: bool = False) -> Iterator[bytes]:
    """The file's bytes in chunks; `-` is stdin, read as data arrives so that
    a pipe gives a live view.  Unless the input may be `text` (typed), a
    terminal as stdin is refused: nobody types a binary stream, and a
    command waiting on one looks hung (gzip -d refuses it too)."""
    name = display_name(path)
    if path == "-":
        yield from _read_stdin(stdin, name, chunk_size, text)
        return
    with _open(path, name) as f:
        yield from _read_stream(f, name, chunk_size, live=False)


def mapped_chunks(path: str, stdin: BinaryIO) -> Iterator[bytes | mmap.mmap]:
    """As `read_chunks`, but a large regular file comes as read-only mmap
    windows (see MAP_MIN), when the fast lane is there to guard them."""
    name = display_name(path)
    if path == "-":
        yield from _read_stdin(stdin, name, CHUNK_SIZE, False)
        return
    with _open(path, name) as f:
        guard = _guard()
        offset = 0
        if guard is not None:
            offset = yield from _mapped_windows(f, name, guard)
        yield from _read_stream(f, name, CHUNK_SIZE, live=False, offset=offset)


def _read_stdin(stdin: BinaryIO, name: str, chunk_size: int, text: bool) -> Iterator[bytes]:
    if not text and stdin.isatty():
        raise InputUnreadable(f"{name}: is a terminal: name a FILE, or send the bytes through a pipe")
    yield from _read_stream(stdin, name, chunk_size, live=True)


def _open(path: str, name: str) -> BinaryIO:
    if is_url(path):
        return open_url(path)
    try:
        return open(path, "rb")
    except OSError as e:
        raise open_error(name, e) from None


def _guard() -> ModuleType | None:
    """The SIGBUS guard (_mapguard.c), unless the pure lane was asked for
    or the extension is not built: then files are read."""
    from ripple_cli.codec.fast import pure_requested

    if pure_requested():
        return None
    try:
        from ripple_cli.sources import _mapguard
    except ImportError:
        return None
    return _mapguard


def _mapped_windows(f: BinaryIO, name: str, guard: ModuleType) -> Generator[mmap.mmap, None, int]:
    """A regular file of MAP_MIN bytes or more as windows to its end, as its
    size is when each window is mapped; returns the offset reached (what a
    writer appends after that is read).  A file that shrinks while it is
    read ends the input with a read error: the pages past its new end read
    as zeros (the guard) until then, and input_events looks again at the
    input's end, when a decoder may have read a window late."""
    try:
        fd = f.fileno()
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return 0
    except (OSError, ValueError, AttributeError):
        return 0
    offset = 0
    faults = guard.faults()
    while True:
        try:
            size = os.fstat(fd).st_size
        except OSError:
            break
        if size < offset:
            raise _shrank(name, size)
        # The first window is a chunk's size: the protocol is told from the
        # first bytes, which are held (copied) until it is.
        length = min(WINDOW if offset else CHUNK_SIZE, size - offset)
        if length == 0 or (offset == 0 and size < MAP_MIN):
            break
        try:
            # No MAP_POPULATE: mapping every page here, in this thread, came
            # out 4-5% slower for verify than the faults the scanner's threads
            # take as they reach the pages (16 at a time; 40 runs interleaved).
            window = mmap.mmap(fd, length, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ, offset=offset)
        except (OSError, ValueError):
            break  # not mappable after all: read() takes over at `offset`
        # The window is unmapped when its last holder lets it go (a decoder
        # may keep its tail until the next one comes): watched until then.
        weakref.finalize(window, guard.unwatch, guard.watch(window))
        yield window
        del window
        if guard.faults() != faults:
            raise _shrank(name, _size(fd))  # the window just given was read past the new end
        offset += length
    f.seek(offset)
    return offset


def _size(fd: int) -> int:
    try:
        return os.fstat(fd).st_size
    except OSError:
        return -1


def _shrank(name: str, size: int) -> InputUnreadable:
    at = f" at offset {size}" if size >= 0 else ""
    return InputUnreadable(f"{name}: read error{at}: the file shrank while it was read")


def mapped_faults() -> int:
    """How many times so far a mapped window was read past its file's end
    (the file shrank), 0 without the guard."""
    guard = _guard()
    return guard.faults() if guard is not None else 0


def shrank(path: str) -> InputUnreadable:
    """The error for a file of `path` that shrank while its windows were read."""
    try:
        size = os.stat(path).st_size
    except OSError:
        size = -1
    return _shrank(display_name(path), size)


def _read_stream(f: BinaryIO, name: str, chunk_size: int, live: bool, offset: int = 0) -> Iterator[bytes]:
    # read1 returns what is there (at most chunk_size) instead of waiting to
    # fill the whole chunk: a pipe's messages show as soon as they arrive.
    reader = getattr(f, "read1", None) if live else None
    while True:
        try:
            data = reader(chunk_size) if reader else f.read(chunk_size)
        except OSError as e:
            raise InputUnreadable(f"{name}: read error at offset {offset}: {e.strerror or e}") from None
        if not data:
            return
        offset += len(data)
        yield data


def read_all(path: str, stdin: BinaryIO, limit: int) -> bytes:
    """A small input whole (schema files, text to encode); refuses more than `limit`."""
    out = bytearray()
    for chunk in read_chunks(path, stdin, text=True):
        out += chunk
        if len(out) > limit:
            raise InputUnreadable(f"{display_name(path)}: larger than {limit} bytes")
    return bytes(out)


def check_output_path(path: str) -> None:
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise InputUnreadable(f"{path}: directory {parent} does not exist")
