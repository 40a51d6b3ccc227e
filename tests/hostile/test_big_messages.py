"""Item 6 of issue 15: a legal message near --max-payload (16 MiB) prints
in memory proportional to its output, not a hundred times its size.  The
sexp and JSON forms of a 15 MiB string of bytes that must be escaped, and
of a Delta that does not decode (shown as its raw bytes, escaped), in both
lanes, in a child whose address space is capped."""

from __future__ import annotations

from pathlib import Path

import pytest

from ripple_cli.codec import binprot as bp
from ripple_cli.codec.schema import INT, STRING, Field, Schema
from tests.hostile.bombs import delta, handshake, run_limited

MAX_RSS_KB = 512 * 1024
N = 15 << 20  # bytes of the string
BYTE = 7  # escaped as \007 by sexp, \u0007 by JSON


def _stream(decodes: bool) -> bytes:
    schema = Schema(b"big", 1, INT, (Field(b"s", STRING),))
    row = bytearray([0])  # Set
    if not decodes:
        row.append(1)  # one byte too many: the row does not decode, the raw delta is shown
    bp.write_nat0(row, N)
    row += bytes([BYTE]) * N
    return handshake([schema]) + delta(schema, b"\x01", bytes(row), 2)


@pytest.mark.parametrize("pure", [False, True], ids=["fast", "pure"])
@pytest.mark.parametrize("decodes", [True, False], ids=["legal", "raw"])
def test_a_15_mib_string_prints_in_bounded_memory(tmp_path: Path, pure: bool, decodes: bool) -> None:
    path = tmp_path / "big.ripple"
    path.write_bytes(_stream(decodes))
    sexp = run_limited(["decode", "-F", "sexp", str(path)], pure=pure)
    assert sexp.code == (0 if decodes else 1), sexp.stderr
    assert sexp.maxrss_kb < MAX_RSS_KB, f"{sexp.maxrss_kb >> 10} MB"
    lines = sexp.stdout.splitlines()
    assert len(lines) == 2
    assert lines[1].count(b"\\007") == N
    if decodes:
        assert lines[1].startswith(
            b'((seq 2)(time_ns 0)(schema big/v1)(msg(Delta((source_output big)(key 1)(delta(Set((s"\\007'
        )
    jsonl = run_limited(["decode", "-F", "jsonl", str(path)], pure=pure)
    assert jsonl.code == sexp.code, jsonl.stderr
    assert jsonl.maxrss_kb < MAX_RSS_KB, f"{jsonl.maxrss_kb >> 10} MB"
    assert len(jsonl.stdout.splitlines()) == (2 if decodes else 3)  # the problem is a record of its own
