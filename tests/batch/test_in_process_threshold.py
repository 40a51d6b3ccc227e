"""`export` and `stats` of small inputs run in-process with PySpark
installed (issue 13): no JVM is started unless --master (or --conf,
spark-submit, a running session) asks for Spark, and the rows and the
report are those of a Spark run.  Each run is a process of its own, with
no SparkContext in it, as from a shell."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ripple_cli.batch.run import IN_PROCESS_LIMIT
from tests.batch.test_spark_export import table_rows
from tests.conftest import EXAMPLES, ROOT, run_cli

DEMO = str(EXAMPLES / "demo.ripple")

# The CLI as `ripple` runs it, then whether pyspark was ever imported (a JVM
# is only started through it) as stderr's last line.
# It ends as `ripple` does (entry.leave once pyarrow is loaded): a normal
# exit now and then aborts in pyarrow's C++ teardown, a line after this one.
CHILD = """
import sys
from ripple_cli.cli.entry import leave
from ripple_cli.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    code = e.code
sys.stdout.flush()
sys.stderr.write(f"code={code} pyspark={'pyspark' in sys.modules}\\n")
if "pyarrow" in sys.modules:
    leave(code or 0)
"""


def ripple(*args: str) -> tuple[str, str, str]:
    """stdout, stderr less the last line, and that line."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *args], capture_output=True, text=True, cwd=ROOT, timeout=600, check=False
    )
    *lines, last = done.stderr.splitlines()
    return done.stdout, "\n".join(lines), last


def test_the_limit_is_the_documented_one() -> None:
    assert IN_PROCESS_LIMIT == 256 << 20
    for page in ("ripple-export.1", "ripple-stats.1"):
        assert "256 MiB" in (ROOT / "man" / page).read_text()


@pytest.mark.jvm
def test_asking_for_spark_starts_it() -> None:
    """--master (here a master that cannot be: the JVM is not waited for)
    takes the run to Spark, whatever the input's size."""
    _, note, last = ripple("stats", "-q", "--master", "nosuch://x", DEMO)
    assert last == "code=3 pyspark=True", note


def test_a_small_export_runs_in_process_with_the_rows_of_spark(spark: object, tmp_path: Path) -> None:
    """The rows those of Spark (the tests' session, this process's)."""
    here, there = tmp_path / "here", tmp_path / "spark"
    _, note, last = ripple("export", DEMO, "-o", str(here))
    assert last == "code=0 pyspark=False"
    assert note.startswith("export: 1 file (1 raw, 0 captures), 37,372 bytes, 1 task, 4 schemas; ")
    assert "(parquet, partitioned by event_hour; in-process, without Spark) in " in note
    on_spark = run_cli(["export", DEMO, "-o", str(there)])  # a running session: Spark
    assert on_spark.code == 0, on_spark.stderr
    assert "in-process" not in on_spark.stderr and "(parquet, partitioned by event_hour)" in on_spark.stderr
    rows = table_rows(here)
    assert len(rows) == 300
    assert rows == table_rows(there)


def test_a_small_stats_runs_in_process_with_the_figures_of_spark(spark: object) -> None:
    out, note, last = ripple("stats", "-F", "json", DEMO)
    assert last == "code=0 pyspark=False"
    assert note.startswith("stats: 1 file (1 raw, 0 captures), 37,372 bytes, 1 task, 4 schemas; in-process, without")
    on_spark = run_cli(["stats", "-F", "json", DEMO])  # a running session: Spark
    assert on_spark.code == 0, on_spark.stderr
    assert "in-process" not in on_spark.stderr and on_spark.stderr.startswith("stats: 1 file"), on_spark.stderr
    assert json.loads(out) == json.loads(on_spark.stdout)


def test_stats_of_extreme_times_in_process_and_on_spark(spark: object, tmp_path: Path) -> None:
    """A watermark and Heartbeat times at the ends of int64: a lag or an
    interval that does not fit 64 bits is left out of the figures, the same
    in-process (SQLite made it a float) and on Spark (whose ANSI mode
    stopped the job with ARITHMETIC_OVERFLOW)."""
    text = run_cli(["decode", str(EXAMPLES / "session.ripple")]).stdout
    text = text.replace(b"(watermark_ns(1700000000000000000))", b"(watermark_ns(-9223372036854775808))")
    text = text.replace(b"(seq 2)(time_ns 1700000000000000050)", b"(seq 2)(time_ns 9223372036854775807)")
    beat = (
        b"((seq %d)(time_ns %d)(schema ripple.heartbeat/v1)(msg(Heartbeat((worker_id w1)(timestamp_ns 0)(load 0.5)))))"
    )
    heartbeats = b"".join(
        beat % (seq, t) + b"\n"
        for seq, t in ((6, -9223372036854775808), (7, 9223372036854775807), (8, 9223372036854775807))
    )
    stream = run_cli(["encode"], stdin=text + heartbeats)
    assert stream.code == 0, stream.stderr
    path = tmp_path / "extreme.ripple"
    path.write_bytes(stream.stdout)
    out, note, last = ripple("stats", "-F", "json", str(path))
    assert last == "code=0 pyspark=False", note
    on_spark = run_cli(["stats", "-F", "json", str(path)])  # a running session: Spark
    assert on_spark.code == 0, on_spark.stderr
    here = json.loads(out)
    assert here == json.loads(on_spark.stdout)
    assert here["watermark_lag"]["all"] == {
        "deltas": 1,  # its one lag does not fit
        **dict.fromkeys(("min", "max", "p50", "p90", "p99")),
    }
    # the times, sorted: -2^63, 1.7e18 + 200, 2^63 - 1 twice; the first interval does not fit
    assert here["heartbeats"] == [
        {"worker": "w1", "heartbeats": 4, "min": 0, "median": 0, "max": 2**63 - 1 - 1700000000000000200, "silences": 1}
    ]
