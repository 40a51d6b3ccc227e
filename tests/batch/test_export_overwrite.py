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
        # by file:// URL, OUT or input: the same local places
        (["d/demo.ripple", "-o", "file://{cwd}/d"], "file://{cwd}/d holds the input d/demo.ripple"),
        (["file://{cwd}/d/demo.ripple", "-o", "d"], "d holds the input {cwd}/d/demo.ripple"),
        ([str(EXAMPLES / "demo.ripple"), "-o", "file://{cwd}"], "file://{cwd} is the working directory"),
        (["file://{cwd}/d/*.ripple", "-o", "file://{cwd}/d"], "file://{cwd}/d is the input {cwd}/d"),
    ],
)
def test_overwrite_never_removes_an_input(inputs: Path, args: list[str], says: str) -> None:
    before = sorted(p.name for p in inputs.iterdir())
    cwd = os.path.realpath(os.getcwd())
    args = [a.format(cwd=cwd) for a in args]
    says = says.format(cwd=cwd)
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


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["s3://b/raw/demo.ripple", "-o", "s3://b/raw"], "s3://b/raw holds the input s3://b/raw/demo.ripple"),
        (["s3://b/raw/", "-o", "s3a://b/raw"], "s3a://b/raw is the input s3://b/raw"),
        (["s3://b/raw/**/*.ripple", "-o", "s3://b/raw/out"], "s3://b/raw/out is inside the input s3://b/raw"),
        (["gs://b/x/a.pcap", "-o", "gs://b/x/"], "gs://b/x/ holds the input gs://b/x/a.pcap"),
    ],
)
def test_overwrite_never_removes_an_input_in_an_object_store(args: list[str], says: str) -> None:
    """Refused from the names alone, before any request (the S3 tests run
    the same against a real S3 server)."""
    r = run_cli(["export", "-q", "--overwrite", *args])
    assert (r.code, r.stderr) == (2, f"ripple: --overwrite: {says}: write the table elsewhere\n")
