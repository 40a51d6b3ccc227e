#!/usr/bin/env python3
"""The Spark pipeline side by side in one run: in-process decode, local[1],
local[2] and a two-worker standalone cluster, on one generated raw stream
of at least 1 GB.

    make bench-spark                              # or: python bench/bench_spark.py --count 2000000

The stream is written by the OCaml generator of the interop tests
(tests/interop/ocaml, profile bench, as bench/bench.py), cached in .bench/.
Each workload decodes every message into export's rows and writes Parquet:

  in-process   the batch plan and tasks run one after the other in this
               process (ripple_cli.batch.local), Arrow batches written with pyarrow
  local[1]     `ripple export --master local[1]` (embedded Spark, one task at a time)
  local[2]     `ripple export --master local[2]`
  standalone   `ripple export --master spark://...` on a standalone master and
               two workers of one core each, started on this machine for the
               run (tests/batch/standalone.py: separate JVMs, as on a
               cluster; the executors read the stream by its path)

Times are wall times of whole runs; Spark's include starting the JVM (a
few seconds).  The goal (issue 4): local[2] at least 1.7x local[1].
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench import WORK, build_ocaml, generate  # noqa: E402

GOAL = 1.7
MB = 1 << 20


def in_process(path: Path, out: Path, split: int) -> tuple[float, int]:
    import pyarrow.parquet as pq

    from ripple_cli.batch.arrow import ARROW_SCHEMA
    from ripple_cli.batch.inputs import discover
    from ripple_cli.batch.local import local_batches
    from ripple_cli.batch.tasks import Settings

    t = time.perf_counter()
    rows = 0
    with pq.ParquetWriter(out, ARROW_SCHEMA) as writer:
        for batch in local_batches(discover([str(path)]), Settings(), split):
            rows += batch.num_rows
            writer.write_batch(batch)
    return time.perf_counter() - t, rows


def spark(path: Path, out: Path, master: str, split: int, extra: tuple[str, ...] = ()) -> float:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [str(ROOT / ".venv" / "bin" / "ripple"), "export", "-q", "--master", master, "--split-size", str(split)]
    t = time.perf_counter()
    subprocess.run([*cmd, *extra, "-o", str(out), str(path)], check=True)
    return time.perf_counter() - t


def standalone(path: Path, out: Path, split: int) -> float:
    """The export on a two-worker standalone cluster started for it (its
    start is not timed: a cluster is up before a job is submitted)."""
    from tests.batch.standalone import start_standalone

    base = WORK / "standalone"
    shutil.rmtree(base, ignore_errors=True)
    cluster = start_standalone(base, workers=2, worker_memory="2g")
    try:
        conf = (
            f"spark.pyspark.python={sys.executable}",
            "spark.executor.memory=1g",
            "spark.driver.memory=1g",
        )
        return spark(path, out, cluster.master, split, tuple(a for c in conf for a in ("--conf", c)))
    finally:
        cluster.stop()


def parquet_rows(out: Path) -> int:
    import pyarrow.dataset as ds

    return int(ds.dataset(out, format="parquet", partitioning="hive").count_rows())


# A row's place: a raw stream's rows are told apart by offset, problem and type.
ROW_KEY = ("capture_file", "offset", "problem", "type", "seq")


def same_rows(a: Path, b: Path) -> bool:
    """The two tables hold the same rows, every column but the partition
    (event_hour, a directory name in Spark's output, derived from time),
    in any order: compared column by column, each sorted by ROW_KEY."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    from ripple_cli.batch.rows import COLUMN_NAMES

    columns = [c for c in COLUMN_NAMES if c != "event_hour"]
    tables = [ds.dataset(p, format="parquet", partitioning="hive").to_table(columns=columns) for p in (a, b)]
    if tables[0].num_rows != tables[1].num_rows:
        return False
    order = [pc.sort_indices(t, sort_keys=[(k, "ascending") for k in ROW_KEY]) for t in tables]
    return all(tables[0][c].take(order[0]).equals(tables[1][c].take(order[1])) for c in columns)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=8_500_000, help="messages in the stream (8.5M: about 1.08 GB)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--split-size", type=int, default=64 * MB)
    args = ap.parse_args()
    WORK.mkdir(exist_ok=True)
    stream = generate(build_ocaml(), args.count, args.seed)
    size = stream.stat().st_size
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []
    cpu = next((ln.split(":", 1)[1].strip() for ln in cpuinfo if ln.startswith("model name")), "?")
    print(f"stream: {stream.name}: {args.count:,} messages, {size / MB:,.1f} MB; split size {args.split_size // MB} MB")
    print(f"machine: {os.cpu_count()} cores, {cpu}, Python {platform.python_version()}")
    sys.stdout.flush()

    t_local, rows = in_process(stream, WORK / "spark-inprocess.parquet", args.split_size)
    results = [("in-process", t_local, rows)]
    for master in ("local[1]", "local[2]"):
        out = WORK / f"spark-{master.removeprefix('local[').removesuffix(']')}"
        t = spark(stream, out, master, args.split_size)
        results.append((master, t, parquet_rows(out)))
    out = WORK / "spark-standalone"
    results.append(("standalone", standalone(stream, out, args.split_size), parquet_rows(out)))

    print()
    print(f"{'workload':<12} {'seconds':>9} {'MB/s':>8} {'msgs/s':>10} {'rows':>12}")
    for name, t, n in results:
        print(f"{name:<12} {t:9.1f} {size / MB / t:8.2f} {n / t:10,.0f} {n:12,}")
    ratio = results[1][1] / results[2][1]
    print()
    print(f"local[2] / local[1]: {ratio:.2f}x (goal {GOAL}x: {'met' if ratio >= GOAL else 'not met'})")
    print(f"standalone (2 workers) / local[2]: {results[2][1] / results[3][1]:.2f}x")
    print(f"same row counts in all four: {'yes' if len({n for _, _, n in results}) == 1 else 'NO'}")
    inprocess = WORK / "spark-inprocess.parquet"
    same = all(same_rows(inprocess, WORK / f"spark-{name}") for name in ("1", "2", "standalone"))
    print(f"same rows in all four (every column, in-process against each Spark run): {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
