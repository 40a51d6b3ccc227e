"""Item 3 of issue 15: Lumberjack `C` frames full of small JSON events.
Their messages reach the output one by one as they are inflated (not all
those of a 1 MiB chunk at once), so memory stays flat whatever the count
of frames; one J payload whose parsed form would be a bomb of its own is
a problem, shown as its bytes."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest

from ripple_cli.protocols.lumberjack.wire import Compressed, Json, Window, encode_frame
from tests.hostile.bombs import run_limited

MAX_RSS_KB = 512 * 1024
EVENTS = 20_000  # J frames in each C frame
SMALL_ARRAYS = b"[[],[],[],[],[],[],[],[]]"  # 25 bytes, nine lists once parsed


def compressed_events(frames: int) -> bytes:
    """A Window, then `frames` C frames each holding EVENTS J frames of small arrays."""
    inner = b"".join(encode_frame(Json(2, i + 1, SMALL_ARRAYS)) for i in range(EVENTS))
    c = encode_frame(Compressed(2, zlib.compress(inner, 9)))
    return encode_frame(Window(2, EVENTS)) + c * frames


def compressed_lines(frames: int, c_size: int) -> list[dict[str, object]]:
    return [
        {"offset": 6 + i * c_size, "inflated_size": EVENTS * 35, "frames": EVENTS, "complete": True}
        for i in range(frames)
    ]


@pytest.mark.parametrize("pure", [False, True], ids=["fast", "pure"])
def test_memory_is_flat_in_the_count_of_compressed_events(tmp_path: Path, pure: bool) -> None:
    peaks = []
    for frames in (2, 8):
        path = tmp_path / f"events{frames}.lj"
        data = compressed_events(frames)
        path.write_bytes(data)
        c_size = (len(data) - 6) // frames
        r = run_limited(["decode", "-P", "lumberjack", "-F", "jsonl", "--type", "Compressed", str(path)], pure=pure)
        assert (r.code, r.stderr) == (0, "")
        rows = [json.loads(line) for line in r.stdout.splitlines()]
        keys = ("offset", "inflated_size", "frames", "complete")
        assert [{k: row[k] for k in keys} for row in rows] == compressed_lines(frames, c_size)
        assert r.maxrss_kb < MAX_RSS_KB
        peaks.append(r.maxrss_kb)
    # Four times the events: the same memory (all of them held at once grew it by ~200 MB).
    assert peaks[1] - peaks[0] < 32 * 1024, peaks


def test_every_event_is_printed(tmp_path: Path) -> None:
    path = tmp_path / "events.lj"
    path.write_bytes(compressed_events(3))
    r = run_limited(["decode", "-F", "jsonl", str(path)])
    assert (r.code, r.stderr) == (0, "")
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [row["type"] for row in rows] == ["Window"] + (["Compressed"] + ["Json"] * EVENTS) * 3
    assert all(row["event"] == [[]] * 8 for row in rows if row["type"] == "Json")
    assert [row["seq"] for row in rows[2 : 2 + EVENTS]] == list(range(1, EVENTS + 1))


@pytest.mark.parametrize("pure", [False, True], ids=["fast", "pure"])
@pytest.mark.parametrize("lists", [3_000_000, 5_000_000])
def test_one_event_of_millions_of_small_arrays_is_one_problem(tmp_path: Path, pure: bool, lists: int) -> None:
    payload = b"[" + b"[]," * (lists - 1) + b"[]]"
    path = tmp_path / "event.lj"
    path.write_bytes(
        encode_frame(Window(2, 1)) + encode_frame(Compressed(2, zlib.compress(encode_frame(Json(2, 7, payload)), 9)))
    )
    r = run_limited(["decode", "-P", "lumberjack", str(path)], pure=pure)
    assert r.code == 1
    assert r.maxrss_kb < MAX_RSS_KB
    mib = (64 * (2 * lists) + len(payload)) >> 20
    assert r.stderr == (
        f"ripple: {path}: error: offset 6: J frame seq 7 in the C frame at offset 6: {len(payload)} bytes of JSON "
        f"would take about {mib} MiB as objects (more than 128 MiB): not parsed\n"
    )
    j = run_limited(["decode", "-P", "lumberjack", "-F", "jsonl", "--type", "Json", str(path)], pure=pure)
    [row] = [json.loads(line) for line in j.stdout.splitlines() if b'"Json"' in line]
    assert (row["event"], len(row["payload"])) == (None, len(payload))
    assert j.maxrss_kb < MAX_RSS_KB
