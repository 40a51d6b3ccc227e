"""A large regular file is read through mmap windows (sources/files.py):
the windows hold the file's bytes in order, a file that grows is read to
its end, one that shrinks meanwhile is one read error (not a SIGBUS), and
every command gives the same output as from the bytes through a pipe."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ripple_cli.errors import InputUnreadable
from ripple_cli.sources import files
from tests.conftest import EXAMPLES, ROOT

guarded = pytest.mark.skipif(files._guard() is None, reason="no SIGBUS guard: the pure lane, or not built")


def _file(path: Path, size: int) -> bytes:
    data = bytes(i * 7 % 251 for i in range(size))
    path.write_bytes(data)
    return data


@guarded
def test_a_large_file_comes_as_windows_holding_its_bytes(tmp_path: Path) -> None:
    size = files.CHUNK_SIZE + files.WINDOW + 12345
    data = _file(tmp_path / "big", size)
    chunks = list(files.mapped_chunks(str(tmp_path / "big"), sys.stdin.buffer))
    assert [type(c) for c in chunks] == [mmap.mmap, mmap.mmap, mmap.mmap]
    assert [len(c) for c in chunks] == [files.CHUNK_SIZE, files.WINDOW, 12345]
    assert b"".join(chunks) == data


def test_a_small_file_is_read(tmp_path: Path) -> None:
    data = _file(tmp_path / "small", files.MAP_MIN - 1)
    chunks = list(files.mapped_chunks(str(tmp_path / "small"), sys.stdin.buffer))
    assert all(type(c) is bytes for c in chunks)
    assert b"".join(chunks) == data


@guarded
def test_a_file_that_grows_is_read_to_its_end(tmp_path: Path) -> None:
    path = tmp_path / "growing"
    data = _file(path, files.MAP_MIN)
    it = files.mapped_chunks(str(path), sys.stdin.buffer)
    got = [next(it)]
    with open(path, "ab") as f:
        f.write(b"appended")
    got += list(it)
    assert b"".join(got) == data + b"appended"


SHRINK = """
import os, sys
from ripple_cli.errors import InputUnreadable
from ripple_cli.sources import files
path = sys.argv[1]
it = files.mapped_chunks(path, sys.stdin.buffer)
next(it)
window = next(it)
os.truncate(path, files.CHUNK_SIZE + 100)
print(window[99], window[100], window[len(window) - 1])  # the last two past the new end
try:
    next(it)
except InputUnreadable as e:
    print(e.message)
"""


def _run_child(script: str, path: Path) -> str:
    """`script` in a Python of its own (a SIGBUS the guard missed kills it, not the tests): its stdout."""
    r = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, cwd=ROOT, timeout=60, stdin=subprocess.DEVNULL
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.decode()


@guarded
def test_a_file_that_shrinks_while_it_is_read_is_a_read_error_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "shrinking"
    data = _file(path, files.CHUNK_SIZE + files.WINDOW)
    at = files.CHUNK_SIZE + 100
    assert _run_child(SHRINK, path) == (
        f"{data[at - 1]} 0 0\n{path}: read error at offset {at}: the file shrank while it was read\n"
    )


LATE = """
import os, sys
from ripple_cli.capture.events import StreamData, StreamEnd
from ripple_cli.errors import InputUnreadable
from ripple_cli.sources.inputs import input_events
path = sys.argv[1]
events = input_events(path, sys.stdin.buffer)
last = None
for ev in events:
    if isinstance(ev, StreamData):
        last = ev.data
    if isinstance(ev, StreamEnd):
        break
os.truncate(path, 100)
print(last[len(last) - 1])  # a decoder reading its held tail after the source's last look
try:
    next(events)
except InputUnreadable as e:
    print(e.message)
"""


@guarded
def test_a_window_read_after_the_last_one_was_given_still_tells_the_file_shrank(tmp_path: Path) -> None:
    """A decoder may read a window after the source has passed it (the cut
    tail of the last one, windows held until the protocol is told at the
    end): the input's end still says the file shrank."""
    path = tmp_path / "late"
    _file(path, files.CHUNK_SIZE + files.WINDOW + 5000)
    assert _run_child(LATE, path) == f"0\n{path}: read error at offset 100: the file shrank while it was read\n"


def test_the_guard_error_names_the_file_and_offset() -> None:
    e = files._shrank("x.ripple", 42)
    assert isinstance(e, InputUnreadable)
    assert e.message == "x.ripple: read error at offset 42: the file shrank while it was read"


@pytest.fixture(scope="module")
def long_stream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo stream 300 times over (11 MB): three windows, envelopes
    across both seams, and the stream rules broken where the copies join."""
    path = tmp_path_factory.mktemp("mapped") / "long.ripple"
    path.write_bytes((EXAMPLES / "demo.ripple").read_bytes() * 300)
    assert path.stat().st_size > files.CHUNK_SIZE + files.WINDOW
    return path


@pytest.mark.parametrize(
    "args",
    [
        ["verify", "-F", "json"],
        ["decode", "-F", "sexp"],
        ["decode", "-F", "jsonl"],
        ["decode", "-F", "table"],
        ["decode", "-Y", 'type == Delta and key == "AMZN"'],
        ["decode", "--raw"],
    ],
)
def test_a_mapped_file_gives_what_its_bytes_through_a_pipe_give(long_stream: Path, args: list[str]) -> None:
    """The pipe is named /dev/stdin, not `-`: `-` would make decode's table
    a live one (its widths fixed as rows come), which a file's is not."""

    def ripple(path: str, data: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "ripple_cli", *args, path],
            input=data,
            stdin=subprocess.DEVNULL if data is None else None,
            capture_output=True,
            cwd=ROOT,
            timeout=300,
            env={**os.environ, "COLUMNS": "120"},
        )

    mapped = ripple(str(long_stream))
    piped = ripple("/dev/stdin", long_stream.read_bytes())
    name = str(long_stream).encode()
    assert mapped.returncode == piped.returncode
    assert mapped.stderr.replace(name, b"/dev/stdin") == piped.stderr
    assert mapped.stdout.replace(name, b"/dev/stdin") == piped.stdout
    assert len(mapped.stdout) > 500_000
