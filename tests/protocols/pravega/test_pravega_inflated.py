"""A command whose length runs past the end of the stream does not hide
the intact commands inside it (issue 15 item 14): decoding resumes at the
first of them, in any chunking; one cut short with nothing inside is
reported truncated, as before."""

from __future__ import annotations

from pathlib import Path

from pv_bytes import cmd, decode, hello, keep_alive

from tests.conftest import run_cli
from tests.protocols.dissector_kit import chunkings, messages, problems

KA = b"(pravega(KeepAlive()))"


def test_inflated_command_before_keepalives() -> None:
    inflated = cmd(100, b"", length=5000)  # a KeepAlive whose length says 5000
    data = inflated + keep_alive() * 100
    for pieces in chunkings(data, seed=1, splits=5):
        items = decode(pieces)
        assert [m.line for m in messages(items)] == [KA] * 100
        (problem,) = problems(items)
        assert (problem.offset, problem.kind, problem.skipped) == (0, "truncated", len(inflated))
        assert problem.detail == f"the stream ends {len(data)} bytes into a KeepAlive of 5008 bytes"


def test_command_cut_short_is_truncated() -> None:
    data = keep_alive() + hello()[:-3]
    items = decode([data])
    assert [m.line for m in messages(items)] == [KA]
    assert [p.describe() for p in problems(items)] == ["offset 8: the stream ends 13 bytes into a Hello of 16 bytes"]


def test_decode_cli_one_line(tmp_path: Path) -> None:
    inflated = cmd(100, b"", length=5000)
    path = tmp_path / "inflated.pravega"
    path.write_bytes(inflated + keep_alive() * 100)
    res = run_cli(["decode", "-P", "pravega", str(path)])
    assert res.code == 1
    assert res.stdout.splitlines() == [KA] * 100
    assert res.stderr.splitlines() == [
        f"ripple: {path}: error: offset 0: the stream ends 808 bytes into a KeepAlive of 5008 bytes; "
        "skipped 8 bytes to offset 8"
    ]
