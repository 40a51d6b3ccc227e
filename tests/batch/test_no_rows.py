"""stats and export of inputs that give no Ripple row: an empty file, a
capture of sibling protocols only, a sibling protocol's raw stream (told
by decode's detection, and decoded whole: it was read as a damaged Ripple
stream).  Zero counts and exit 0 (stats: it was
an internal error, SQL's count over no row is null); export's OUT is there
(it was not, for Parquet).  In-process: no JVM."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, run_cli


def test_stats_of_an_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.ripple"
    empty.write_bytes(b"")
    r = run_cli(["stats", "-q", str(empty)])
    assert r.code == 0, r.stderr
    assert (
        r.text.splitlines()[0] == "1 file, 0 Ripple streams: 0 messages, 0 bytes, 0 errors, 0 warnings; no event times"
    )
    # A title is a line of its own, not wrapped to its (narrow, empty) table's width.
    assert "watermark lag (capture time minus watermark)" in r.text.splitlines()
    doc = json.loads(run_cli(["stats", "-q", "-F", "json", str(empty)]).stdout)
    ov = doc["overview"]
    assert (ov["files"], ov["messages"], ov["bytes"], ov["errors"], ov["warnings"]) == (1, 0, 0, 0, 0)
    plots = run_cli(["stats", "-q", "--plot", str(tmp_path / "plots"), str(empty)])
    assert plots.code == 0, plots.stderr


def test_stats_of_a_capture_of_sibling_protocols_only() -> None:
    r = run_cli(["stats", "-q", "-F", "json", str(EXAMPLES / "streams.pcap")])
    assert r.code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["overview"]["files"] == 1 and doc["overview"]["messages"] == 0
    assert sum(s["messages"] for s in doc["siblings"]) > 0
    text = run_cli(["stats", "-q", str(EXAMPLES / "streams.pcap")])
    assert text.code == 0 and text.text.startswith("1 file, 0 Ripple streams: 0 messages"), text.stderr


def test_export_of_no_row_makes_out(tmp_path: Path) -> None:
    empty = tmp_path / "empty.ripple"
    empty.write_bytes(b"")
    for args in ([], ["--tables"], ["-F", "jsonl"]):
        out = tmp_path / f"out{len(args)}"
        r = run_cli(["export", "-q", *args, str(empty), "-o", str(out)])
        assert r.code == 0, r.stderr
        assert out.is_dir(), args
    import pyarrow.dataset as ds

    assert ds.dataset(str(tmp_path / "out0")).to_table().num_rows == 0


def test_a_raw_sibling_stream_is_its_protocol(tmp_path: Path) -> None:
    lj = EXAMPLES / "v1.lj"
    doc = json.loads(run_cli(["stats", "-q", "-F", "json", str(lj)]).stdout)
    assert (doc["overview"]["errors"], doc["overview"]["messages"]) == (0, 0)
    assert {(s["protocol"], s["type"], s["messages"]) for s in doc["siblings"]} == {
        ("lumberjack", "Data", 2),
        ("lumberjack", "Window", 1),
    }
    out = tmp_path / "tables"
    r = run_cli(["export", "-q", "--tables", str(lj), "-o", str(out)])
    assert r.code == 0, r.stderr
    assert sorted(p.name for p in (out / "lumberjack").iterdir()) == ["Data", "Window"]
    rows = run_cli(["export", "-q", "-F", "jsonl", str(lj), str(EXAMPLES / "demo.ripple"), "-o", str(tmp_path / "j")])
    assert rows.code == 0
    lines = [json.loads(x) for p in (tmp_path / "j").glob("part-*") for x in p.read_bytes().splitlines()]
    assert len(lines) == 300 and not [x for x in lines if x.get("problem")]  # the demo's; none of v1.lj's bytes


def test_a_directory_link_is_followed_once(tmp_path: Path) -> None:
    """Links to directories are followed (find -L): a capture set gathered
    with links is read whole; a link back up is no loop, and a directory
    reached twice is read once."""
    import os

    from ripple_cli.batch.inputs import discover

    top = tmp_path / "set"
    (top / "a").mkdir(parents=True)
    (top / "a" / "one.ripple").write_bytes(b"")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "two.ripple").write_bytes(b"")
    os.symlink(elsewhere, top / "b")
    os.symlink(top, top / "a" / "up")  # a loop
    os.symlink(top / "a", top / "c")  # a directory already walked
    found = [os.path.relpath(f.path, top) for f in discover([str(top)])]
    assert found == ["a/one.ripple", "b/two.ripple"]


def test_a_recursive_glob_visits_each_directory_once(tmp_path: Path) -> None:
    """`DIR/**`: links followed, each directory once (Python's glob took
    two links back up, `sub/loop -> ..` and `sub/self -> ../sub`, for 2^40
    paths: a hang, memory growing); otherwise what glob.glob matches."""
    import glob
    import os

    from ripple_cli.batch.inputs import _glob, discover

    top = tmp_path / "w"
    (top / "sub").mkdir(parents=True)
    (top / "s.ripple").write_bytes(b"")
    (top / "sub" / "t.ripple").write_bytes(b"")
    (top / ".hidden").mkdir()
    (top / ".hidden" / "h.ripple").write_bytes(b"")
    os.symlink("..", top / "sub" / "loop")
    os.symlink("../sub", top / "sub" / "self")
    found = [os.path.relpath(f.path, top) for f in discover([f"{top}/**"])]
    assert found == ["s.ripple", "sub/t.ripple"]
    assert [os.path.relpath(f.path, top) for f in discover([f"{top}/**/t.ripple"])] == ["sub/t.ripple"]
    os.remove(top / "sub" / "loop")
    os.remove(top / "sub" / "self")
    for pattern in ("**", "**/*.ripple", "*/**/t.ripple", "**/sub", "**/.hidden/*", "sub/**"):
        expected = [m.rstrip("/") for m in glob.glob(f"{top}/{pattern}", recursive=True)]
        assert _glob(f"{top}/{pattern}") == sorted(expected), pattern


@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "csv"])
def test_a_part_file_is_visible_only_once_whole(tmp_path: Path, fmt: str) -> None:
    """A writer cut short (an error, Ctrl-C, a lost executor) leaves no
    part file a reader would take for a whole one: it is written under a
    hidden name (which pyarrow and Spark skip) and renamed at the end."""
    from ripple_cli.batch.inputs import discover
    from ripple_cli.batch.local import local_batches
    from ripple_cli.batch.output import write_table
    from ripple_cli.batch.tasks import Settings

    batches = list(local_batches(discover([str(EXAMPLES / "demo.ripple")]), Settings()))

    def cut_short() -> Iterator[Any]:
        yield from batches
        raise KeyboardInterrupt

    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        write_table(cut_short(), str(out), fmt, None)
    assert [p.name for p in out.rglob("*") if p.is_file() and not p.name.startswith(".")] == []
    write_table(iter(batches), str(out), fmt, None)
    assert [p.name for p in out.rglob("*") if p.is_file() and not p.name.startswith(".")] == [
        {"parquet": "part-00000-0.parquet", "jsonl": "part-00000.json", "csv": "part-00000.csv"}[fmt]
    ]


def test_a_file_name_that_is_not_utf8(tmp_path: Path) -> None:
    """Its bytes as \\xNN escapes in the rows, as the wire's names (stats and
    export were exit 70: Parquet, CSV and SQLite take UTF-8 only)."""
    import os

    path = os.path.join(os.fsdecode(tmp_path), os.fsdecode(b"lat\xe9\xff.ripple"))
    with open(path, "wb") as f:
        f.write((EXAMPLES / "demo.ripple").read_bytes())
    r = run_cli(["stats", "-q", "-F", "json", path])
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["overview"]["messages"] == 300
    out = tmp_path / "out"
    r = run_cli(["export", "-q", "-F", "jsonl", path, "-o", str(out)])
    assert r.code == 0, r.stderr
    # Part files only: on Spark (a session running in this process) there are _SUCCESS and .crc files too.
    parts = sorted(p for p in out.iterdir() if p.name.startswith("part-"))
    rows = [json.loads(line) for part in parts for line in part.read_text().splitlines()]
    assert len(rows) == 300 and {row["capture_file"] for row in rows} == {str(tmp_path / "lat\\xe9\\xff.ripple")}
