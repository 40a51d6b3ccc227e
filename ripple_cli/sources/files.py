"""Files and stdin as streams of byte chunks, with errors that name the file."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO

from ripple_cli.errors import InputUnreadable
from ripple_cli.sexp.atoms import escape_text

from .urls import is_url, open_url

CHUNK_SIZE = 1 << 20


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
        if not text and stdin.isatty():
            raise InputUnreadable(f"{name}: is a terminal: name a FILE, or send the bytes through a pipe")
        yield from _read_stream(stdin, name, chunk_size, live=True)
        return
    if is_url(path):
        f = open_url(path)
    else:
        try:
            f = open(path, "rb")  # noqa: SIM115 - closed below, after the generator ends
        except OSError as e:
            raise open_error(name, e) from None
    with f:
        yield from _read_stream(f, name, chunk_size, live=False)


def _read_stream(f: BinaryIO, name: str, chunk_size: int, live: bool) -> Iterator[bytes]:
    # read1 returns what is there (at most chunk_size) instead of waiting to
    # fill the whole chunk: a pipe's messages show as soon as they arrive.
    reader = getattr(f, "read1", None) if live else None
    offset = 0
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
