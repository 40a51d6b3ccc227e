"""Standard streams as a shell may hand them over: closed, a full disk, a
pipe or a FIFO where a file is expected.  Each gives the command's one line
and a documented exit status, never an internal error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, run_cli

DEMO = EXAMPLES / "demo.ripple"
PCAP = EXAMPLES / "capture.pcap"
SCHEMA = EXAMPLES / "schemas" / "vwap_v2.sexp"


def ripple(args: list[str], **kw: object) -> subprocess.CompletedProcess[bytes]:
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    return subprocess.run([sys.executable, "-m", "ripple_cli", *args], timeout=120, **kw)  # type: ignore[call-overload, no-any-return]


def _closed_stdin(args: list[str]) -> subprocess.CompletedProcess[bytes]:
    # `<&-`: the process starts without a descriptor 0
    return subprocess.run(
        ["sh", "-c", 'exec "$@" <&-', "sh", sys.executable, "-m", "ripple_cli", *args],
        capture_output=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "args",
    [["decode", "-"], ["encode"], ["verify", "-"], ["schema", "show", "-"], ["replay", "--to", "127.0.0.1:9", "-"]],
)
def test_a_closed_stdin_is_an_unreadable_input(args: list[str]) -> None:
    r = _closed_stdin(args)
    assert r.returncode == 3, r.stderr
    assert r.stderr.decode() == "ripple: <stdin>: read error at offset 0: Bad file descriptor\n"


@pytest.mark.parametrize(
    "args", [["decode", str(DEMO)], ["decode", "-F", "table", str(DEMO)], ["verify", "-F", "json", str(DEMO)]]
)
def test_a_full_disk_or_a_closed_stdout_is_one_line_and_exit_3(args: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        r = ripple(args, stdout=full, stderr=subprocess.PIPE)
    assert (r.returncode, r.stderr.decode()) == (3, "ripple: <stdout>: cannot write: No space left on device\n")
    closed = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m", "ripple_cli", *args],
        capture_output=True,
        timeout=120,
    )
    assert (closed.returncode, closed.stderr.decode()) == (3, "ripple: <stdout>: cannot write: Bad file descriptor\n")


def _fifo_with(tmp_path: Path, data: bytes) -> Path:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as f:
            f.write(data)

    threading.Thread(target=feed, daemon=True).start()
    return fifo


@pytest.mark.parametrize("source", [DEMO, PCAP, SCHEMA])
def test_schema_show_reads_a_fifo_once(tmp_path: Path, source: Path) -> None:
    """A FIFO (or the shell's `<(...)`) can be opened and read only once:
    show tells a stream, a capture and a schema file apart by the bytes it
    reads, not by opening the file a second time."""
    want = run_cli(["schema", "show", "-F", "sexp", str(source)])
    assert want.code == 0 and want.stdout
    r = ripple(["schema", "show", "-F", "sexp", str(_fifo_with(tmp_path, source.read_bytes()))])
    assert (r.returncode, r.stdout, r.stderr) == (0, want.stdout, b"")
    piped = run_cli(["schema", "show", "-F", "sexp", "-"], stdin=source.read_bytes())
    assert (piped.code, piped.stdout) == (0, want.stdout)


def test_schemas_option_takes_a_fifo_and_refuses_an_empty_name(tmp_path: Path) -> None:
    session = str(EXAMPLES / "session.ripple")
    want = run_cli(["decode", "--schemas", str(SCHEMA), session])
    r = ripple(["decode", "--schemas", str(_fifo_with(tmp_path, SCHEMA.read_bytes())), session])
    assert (r.returncode, r.stdout) == (0, want.stdout)
    empty = run_cli(["verify", "--schemas", "", str(DEMO)])
    assert empty.code == 2 and "an empty name is no file" in empty.stderr
    # an empty entry of RIPPLE_SCHEMAS is skipped, as PATH's are
    env = {**os.environ, "RIPPLE_SCHEMAS": f"{os.pathsep}{EXAMPLES / 'schemas'}"}
    assert ripple(["decode", session], env=env).stdout == want.stdout


def test_list_streams_keeps_the_files_before_an_unreadable_one() -> None:
    r = run_cli(["decode", "--list-streams", "-F", "jsonl", str(DEMO), "nosuch"])
    assert (r.code, r.stderr) == (3, "ripple: nosuch: no such file\n")
    (row,) = [json.loads(line) for line in r.stdout.splitlines()]
    assert (row["messages"], row["source"]) == (300, str(DEMO))
    table = run_cli(["decode", "--list-streams", str(DEMO), "nosuch"])
    assert table.code == 3 and "300" in table.text and "end of input" in table.text


def _blocked_reading(proc: subprocess.Popen[bytes], pipe_fd: int) -> bool:
    """The child took everything in its stdin pipe and sleeps (in its next
    read: verify has one thread)."""
    import fcntl
    import termios

    buf = bytearray(4)
    fcntl.ioctl(pipe_fd, termios.FIONREAD, buf)
    if int.from_bytes(buf, sys.byteorder):
        return False
    with open(f"/proc/{proc.pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "S"


def _interrupted(args: list[str], out_path: Path) -> tuple[int, bytes, str]:
    """ripple ARGS reading the demo from a live pipe, sent SIGINT once it has
    taken the demo and waits for more: (exit status, stdout, stderr).
    stdout goes to a file: a pipe nobody reads would fill, and ripple sleep
    writing it rather than reading."""
    import signal
    import time

    with out_path.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ripple_cli", *args], stdin=subprocess.PIPE, stdout=out, stderr=subprocess.PIPE
        )
        assert proc.stdin is not None
        proc.stdin.write(DEMO.read_bytes())
        proc.stdin.flush()
        deadline = time.monotonic() + 60
        while not _blocked_reading(proc, proc.stdin.fileno()):
            assert time.monotonic() < deadline, f"{args[0]} never took its input"
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        proc.stdin.close()
    return proc.returncode, out_path.read_bytes(), err.decode()


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_verify_interrupted_reports_what_it_read(tmp_path: Path, fmt: str) -> None:
    """Ctrl-C on a verify of a live pipe: the report of what was read, a
    line on stderr, exit status 130 (as the tap and replay do)."""
    code, out, err = _interrupted(["verify", "-F", fmt, "-"], tmp_path / "out")
    assert code == 130
    assert err == "ripple: verify: interrupted: the report covers what was read before\n"
    if fmt == "json":
        doc = json.loads(out)
        assert (doc["ok"], doc["interrupted"], doc["streams"][0]["messages"]) == (False, True, 300)
    else:
        assert out.decode().splitlines()[-1] == "verify: 1 stream, 300 messages, 28 problems, interrupted"


def test_ctrl_c_on_decode_says_so_in_one_line(tmp_path: Path) -> None:
    code, out, err = _interrupted(["decode", "-"], tmp_path / "out")
    assert code == 130
    assert len(out.splitlines()) == 300  # what was decoded stays printed
    # One line: the empty line that ends a terminal's ^C only on a terminal.
    assert err == "ripple: interrupted\n"


def _typed_at_a_terminal(args: list[str], cwd: Path, typed: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """ripple ARGS with a real pty as its standard input, `typed` already
    typed there."""
    import pty

    leader, follower = pty.openpty()
    os.write(leader, typed)
    try:
        return subprocess.run(
            [sys.executable, "-m", "ripple_cli", *args], stdin=follower, capture_output=True, cwd=cwd, timeout=60
        )
    finally:
        os.close(leader)
        os.close(follower)


@pytest.mark.parametrize(
    "args",
    [["decode"], ["decode", "-F", "json", "-"], ["verify", "-"], ["schema", "extract", "-o", "out", "-"]],
)
def test_a_terminal_as_standard_input_is_refused_where_bytes_are_read(tmp_path: Path, args: list[str]) -> None:
    """Nobody types a binary stream: a command that would wait for one says
    so at once, with exit status 3."""
    r = _typed_at_a_terminal(args, tmp_path)
    assert r.returncode == 3
    assert r.stderr == b"ripple: <stdin>: is a terminal: name a FILE, or send the bytes through a pipe\n"


def test_encode_reads_text_typed_at_a_terminal(tmp_path: Path) -> None:
    """encode's input is text: typed at a terminal, it is read (here, the
    end of input at once, Ctrl-D: no message, an empty stream)."""
    r = _typed_at_a_terminal(["encode", "-o", "out.ripple"], tmp_path, typed=b"\x04")
    assert (r.returncode, r.stderr) == (0, b"")
    assert (tmp_path / "out.ripple").read_bytes() == b""
