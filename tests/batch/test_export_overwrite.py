"""export --overwrite removes OUT before it writes: never when that would
remove an input, the directory an input is in, or the working directory.
In-process (small inputs, no --master): no JVM."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, run_cli


@pytest.fixture
def inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "d"
    d.mkdir()
    for name in ("demo.ripple", "session.ripple"):
        shutil.copy(EXAMPLES / name, d / name)
    (d / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    return d


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["d", "-o", "d"], "d is the input d"),
        (["d/demo.ripple", "-o", "d/demo.ripple"], "d/demo.ripple is the input d/demo.ripple"),
        (["d/*.ripple", "-o", "d"], "d holds the input d/demo.ripple"),
        (["d", "-o", "d/out"], "d/out is inside the input d"),
        ([str(EXAMPLES / "demo.ripple"), "-o", "."], ". is the working directory"),
    ],
)
def test_overwrite_never_removes_an_input(inputs: Path, args: list[str], says: str) -> None:
    before = sorted(p.name for p in inputs.iterdir())
    r = run_cli(["export", "-q", "--overwrite", *args])
    assert (r.code, r.stderr) == (2, f"ripple: --overwrite: {says}: write the table elsewhere\n")
    assert sorted(p.name for p in inputs.iterdir()) == before
    assert (inputs / "demo.ripple").read_bytes() == (EXAMPLES / "demo.ripple").read_bytes()


def test_overwrite_replaces_an_out_apart_from_the_inputs(inputs: Path) -> None:
    for _ in range(2):
        r = run_cli(["export", "-q", "--overwrite", "-F", "jsonl", "d/demo.ripple", "-o", "table"])
        assert r.code == 0, r.stderr
    rows = sum(len(p.read_bytes().splitlines()) for p in Path("table").glob("part-*"))
    assert rows == 300  # the demo's messages, once
    assert os.path.exists("d/demo.ripple")
