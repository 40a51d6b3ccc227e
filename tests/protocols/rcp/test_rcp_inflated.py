"""A frame whose length was inflated does not hide the intact frames after
it (issue 15 item 14): the decoder resynchronizes on the first of them, as
the Ripple and Lumberjack decoders do, in any chunking."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from rcpkit import decode, frame, request

from tests.conftest import run_cli
from tests.protocols.dissector_kit import chunkings, kinds, messages, problems

FRAMES = [frame(request(str(k), "PING")) for k in range(18)]


def _inflated(by: int) -> bytes:
    first = bytearray(FRAMES[0])
    (n,) = struct.unpack_from(">I", first, 10)
    struct.pack_into(">I", first, 10, n + by)
    return bytes(first) + b"".join(FRAMES[1:])


@pytest.mark.parametrize("by", [40, 10_000])
def test_inflated_length_loses_only_its_frame(by: int) -> None:
    """By 40: the length covers the next frames and fails its CRC; by
    10000: it runs past the end of the stream."""
    data = _inflated(by)
    for pieces in chunkings(data, seed=by, splits=5):
        items = decode(data, from_client=True, pieces=pieces)
        assert [m.offset for m in messages(items)] == [sum(map(len, FRAMES[:k])) for k in range(1, 18)]
        assert kinds(items) == [(0, "bad_length")]
        (problem,) = problems(items)
        assert problem.skipped == len(FRAMES[0])
        why = "fails its CRC" if by == 40 else "runs past the end of the stream"
        assert f"frame length {len(FRAMES[0]) + by} {why}; a whole frame starts at {len(FRAMES[0])}" in problem.detail


def test_decode_cli_one_line(tmp_path: Path) -> None:
    path = tmp_path / "inflated.rcp"
    path.write_bytes(_inflated(10_000))
    res = run_cli(["decode", "-P", "rcp", str(path)])
    assert res.code == 1
    assert res.stdout.count(b"\n") == 17
    assert res.stderr.splitlines() == [
        f"ripple: {path}: error: offset 0: frame length {len(FRAMES[0]) + 10_000} runs past the end of the stream; "
        f"a whole frame starts at {len(FRAMES[0])}; skipped {len(FRAMES[0])} bytes to offset {len(FRAMES[0])}"
    ]
