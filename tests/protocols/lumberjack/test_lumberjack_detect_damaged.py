"""A raw Lumberjack file whose start is damaged (garbage, an implausible
window) is still recognised, as the decoder resynchronizes (issue 15 item
15): `decode` without -P finds the same frames as `-P lumberjack`; bytes
that are no protocol's are still not taken for Lumberjack."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from ljkit import J, W

from ripple_cli.protocols.base import Detection
from ripple_cli.protocols.lumberjack import detect
from tests.conftest import EXAMPLES, run_cli

BATCH = W(3) + b"".join(J(k, b'{"message":"line %d"}' % k) for k in range(1, 4))
GARBAGE = random.Random(5).randbytes(300)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("garbage", GARBAGE + BATCH * 3),
        ("implausible_window", W(50_000_000) + BATCH * 3),
        ("cut_frame", BATCH[5:] + BATCH * 3),
        ("garbage_v1", GARBAGE[:37] + (EXAMPLES / "v1.lj").read_bytes()),
    ],
)
def test_damaged_start_is_recognised_and_decoded(tmp_path: Path, name: str, data: bytes) -> None:
    assert detect(data) is Detection.YES
    path = tmp_path / f"{name}.lj"
    path.write_bytes(data)
    auto = run_cli(["decode", str(path)])
    forced = run_cli(["decode", "-P", "lumberjack", str(path)])
    assert auto == forced
    assert auto.stdout.startswith(b"(lumberjack(") and auto.stdout.count(b"\n") >= 3
    problems = auto.stderr.splitlines()
    if name == "implausible_window":
        # Not plausible enough to recognise a stream by, but a well-formed frame: decoded.
        assert auto.code == 0 and problems == []
        assert auto.stdout.startswith(b"(lumberjack(Window((version 2)(count 50000000))))\n")
    else:
        assert auto.code == 1
        assert len(problems) == 1 and "skipped" in problems[0] and f"{path}: error: offset 0: " in problems[0]


def test_garbage_alone_is_not_lumberjack() -> None:
    rng = random.Random(9)
    for _ in range(200):
        assert detect(rng.randbytes(4096)) is Detection.NO


def test_two_frames_after_damage_are_not_enough() -> None:
    assert detect(GARBAGE + W(3) + J(1, b"{}")) is Detection.NO
