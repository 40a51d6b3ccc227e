"""`export` and `stats` where PySpark (the spark extra) is not installed:
export runs in-process (pyarrow writes the table), and what needs Spark
says in one line which extra to install.  Each run is a process of its
own with pyspark made unimportable, as on a machine without it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.batch.streams import write_stats_inputs
from tests.batch.test_spark_export import in_process_rows, table_rows, text_table_rows
from tests.conftest import ROOT, run_cli

# `ripple`'s own entry (its exit path too: see entry.leave).
HIDE = "import sys\nfor m in {hidden!r}: sys.modules[m] = None\nfrom ripple_cli.cli.entry import main\nmain()\n"


def ripple_without(hidden: tuple[str, ...], *args: str) -> subprocess.CompletedProcess[str]:
    code = HIDE.format(hidden=hidden)
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, timeout=600)


@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "csv"])
def test_export_in_process_without_pyspark(mixed_dir: Path, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / "out"
    done = ripple_without(("pyspark",), "export", "-F", fmt, "--split-size", "8192", str(mixed_dir), "-o", str(out))
    assert done.returncode == 0, done.stderr
    [line] = done.stderr.splitlines()
    part = ", partitioned by event_hour" if fmt == "parquet" else ""
    assert f"1,198 messages, 4 problems -> {out} ({fmt}{part}; in-process, without Spark) in " in line
    expected = in_process_rows([str(mixed_dir)], 8192)
    got = table_rows(out) if fmt == "parquet" else text_table_rows(out, fmt)
    assert got == expected
    # --overwrite replaces it; without, it is refused.
    again = ripple_without(("pyspark",), "export", "-q", "-F", fmt, str(mixed_dir), "-o", str(out))
    assert again.returncode == 3
    again = ripple_without(("pyspark",), "export", "-q", "--overwrite", "-F", fmt, str(mixed_dir), "-o", str(out))
    assert again.returncode == 0, again.stderr
    assert (table_rows(out) if fmt == "parquet" else text_table_rows(out, fmt)) == expected


@pytest.mark.parametrize(
    ("hidden", "args", "says"),
    [
        (
            ("pyspark",),
            ["stats", "--master", "local[1]"],
            "--master local[1] needs PySpark, which is not installed: pip install 'ripple-cli[spark]'",
        ),
        (
            ("pyspark",),
            ["export", "--master", "local[1]", "-o", "OUT"],
            "--master local[1] needs PySpark, which is not installed: pip install 'ripple-cli[spark]'",
        ),
        (
            ("pyspark", "pyarrow"),
            ["export", "-o", "OUT"],
            "export needs pyarrow (without PySpark, it runs in-process): pip install 'ripple-cli[arrow]'",
        ),
    ],
)
def test_what_needs_an_extra_says_which(tmp_path: Path, hidden: tuple[str, ...], args: list[str], says: str) -> None:
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    done = ripple_without(hidden, *args, str(ROOT / "examples" / "demo.ripple"))
    assert (done.returncode, done.stderr) == (2, f"ripple: {says}\n")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("by", ["type", "connection", "output", "key"])
def test_stats_in_process_without_pyspark(
    spark: object, tmp_path_factory: pytest.TempPathFactory, mixed_dir: Path, by: str
) -> None:
    """The same report as Spark's (SQLite runs the same queries), on the
    stats inputs with known gaps, lags and silences, and on the mixed set."""
    inputs = write_stats_inputs(tmp_path_factory.mktemp("stats"))
    for d in (inputs.directory, mixed_dir):
        args = ["stats", "-F", "json", "--by", by, "--top", "3", "--silence", "5", str(d)]
        done = ripple_without(("pyspark",), *args)
        assert done.returncode == 0, done.stderr
        assert "; in-process, without Spark; in " in done.stderr
        on_spark = run_cli([*args, "-q"])
        assert on_spark.code == 0, on_spark.stderr
        assert json.loads(done.stdout) == json.loads(on_spark.stdout), (by, d)


def test_stats_plots_without_pyspark(tmp_path: Path) -> None:
    plots = tmp_path / "plots"
    done = ripple_without(("pyspark",), "stats", "-q", "--plot", str(plots), str(ROOT / "examples" / "demo.ripple"))
    assert done.returncode == 0, done.stderr
    assert sorted(p.suffix for p in plots.iterdir()) == [".png"] * 3 + [".svg"] * 3
