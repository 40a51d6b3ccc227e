"""ripple export and stats on real embedded Spark (local[2], one session)."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from ripple_cli.batch.inputs import discover
from ripple_cli.batch.local import local_rows, plan_local, write_local
from ripple_cli.batch.rows import COLUMN_NAMES
from ripple_cli.batch.tables import TABLE_VERSION
from ripple_cli.batch.tasks import Settings
from tests.batch.conftest import damaged_demo
from tests.batch.typedkit import pandas_exact
from tests.conftest import ROOT, run_cli

Row = tuple[object, ...]


def _sorted(rows: Iterable[Row]) -> list[Row]:
    """Rows in a fixed order, whatever order Spark wrote them in (None sorts
    apart from values: by repr)."""
    return sorted(rows, key=repr)


def table_rows(out: Path, fmt: str = "parquet", partition_by: str = "event_hour") -> list[Row]:
    """A table `export` wrote, read back with pyarrow, every column in
    table order (a partition column comes back from its directory names, in
    its type: the same from Spark's names and pyarrow's)."""
    import pyarrow as pa

    from ripple_cli.batch.arrow import ARROW_SCHEMA

    parts = ds.partitioning(pa.schema([ARROW_SCHEMA.field(partition_by)]), flavor="hive")
    table = ds.dataset(out, format=fmt, partitioning=parts).to_table()
    assert sorted(table.column_names) == sorted(COLUMN_NAMES)
    return _sorted(tuple(r[c] for c in COLUMN_NAMES) for r in table.to_pylist())


def in_process_rows(inputs: list[str], split_size: int) -> list[Row]:
    return _sorted(
        tuple(r[c] for c in COLUMN_NAMES) for r in local_rows(discover(inputs), Settings(), split_size=split_size)
    )


def export(inputs: list[str], out: Path, *args: str) -> None:
    res = run_cli(["export", "-q", *args, *inputs, "-o", str(out)])
    assert res.code == 0, res.stderr
    assert res.stderr == ""


def test_same_row_set_on_local1_local2_and_in_process(spark: object, mixed_dir: Path, tmp_path: Path) -> None:
    """The whole row set of a directory of raw streams and captures (a
    rotated connection among them), every column, read back with pyarrow:
    on one thread, two threads, and without Spark, the same."""
    expected = in_process_rows([str(mixed_dir)], 8192)
    two = tmp_path / "local2"
    export([str(mixed_dir)], two, "--split-size", "8192")  # Parquet, partitioned by event_hour
    # One SparkContext per process: local[1] runs as its own `ripple export`.
    one = tmp_path / "local1"
    cmd = [sys.executable, "-m", "ripple_cli", "export", "-q", "--master", "local[1]", "--split-size", "8192"]
    done = subprocess.run([*cmd, str(mixed_dir), "-o", str(one)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    rows_one, rows_two = table_rows(one), table_rows(two)
    assert len(expected) == 1202
    assert rows_one == expected
    assert rows_two == expected
    # Every message and problem once: (file, connection, direction, offset) is a key.
    names = list(COLUMN_NAMES)
    where = [names.index(c) for c in ("capture_file", "connection", "direction", "offset")]
    assert len({tuple(r[i] for i in where) for r in rows_two}) == len(rows_two)
    # Spark's part files are as the in-process writer's: the same columns,
    # types and metadata (the table version, pandas' nullable dtypes), and
    # pandas' default read of each is exact (watermark_ns an Int64, not a
    # float64 that loses the low bits).
    local = tmp_path / "in-process"
    plan = plan_local(discover([str(mixed_dir)]), Settings(), 8192)
    write_local(plan, str(local), "parquet", "event_hour", False)
    want = pq.read_schema(next(local.rglob("part-*.parquet")))
    assert want.metadata[b"ripple.table_version"] == TABLE_VERSION.encode()
    for out in (one, two):
        parts = sorted(out.rglob("part-*.parquet"))
        assert parts and all(pq.read_schema(p).equals(want, check_metadata=True) for p in parts)
        hours = sorted(d for d in out.iterdir() if d.name.startswith("event_hour="))
        assert sum(pandas_exact(d) for d in hours) > len(hours) * 10


def text_table_rows(out: Path, fmt: str) -> list[Row]:
    """JSON lines (null columns left out) or CSV with a header, read back
    with pyarrow in the table's types."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.json as pjson

    from ripple_cli.batch.arrow import ARROW_SCHEMA

    tables = []
    for part in sorted(out.glob("part-*")):
        if fmt == "jsonl":
            tables.append(pjson.read_json(part, parse_options=pjson.ParseOptions(explicit_schema=ARROW_SCHEMA)))
        else:
            convert = pcsv.ConvertOptions(
                column_types=ARROW_SCHEMA, strings_can_be_null=True, quoted_strings_can_be_null=False
            )
            tables.append(pcsv.read_csv(part, convert_options=convert))
    table = pa.concat_tables(tables)
    return _sorted(tuple(r[c] for c in COLUMN_NAMES) for r in table.to_pylist())


def test_export_jsonl_and_csv_read_back_exactly(spark: object, mixed_dir: Path, tmp_path: Path) -> None:
    expected = in_process_rows([str(mixed_dir)], 8192)
    size = sum(p.stat().st_size for p in mixed_dir.rglob("*") if p.is_file() and p.name != ".hidden")
    for fmt in ("jsonl", "csv"):
        out = tmp_path / fmt
        res = run_cli(["export", "-F", fmt, "--split-size", "8192", str(mixed_dir), "-o", str(out)])
        assert res.code == 0, res.stderr
        # The summary on stderr (no progress bar: stderr is not a terminal);
        # 13 tasks: 5 ranges of each raw stream (37 KB), one per capture.
        summary = (
            f"export: 5 files (2 raw, 3 captures), {size:,} bytes, 13 tasks, 1 rotated connection, 4 schemas; "
            f"1,198 messages, 4 problems -> {out} ({fmt}) in "
        )
        assert res.stderr.startswith(summary) and res.stderr.endswith(" s\n"), res.stderr
        assert not [p for p in out.iterdir() if p.is_dir()]  # not partitioned by default
        assert text_table_rows(out, fmt) == expected, fmt


@pytest.mark.parametrize("split_size", [150, 1000, 4096])
def test_spark_split_sweep_gives_the_rows_of_one_decode(spark: object, tmp_path: Path, split_size: int) -> None:
    """One raw stream through Spark in byte ranges smaller than most of its
    messages (150: the Handshake alone is 699 bytes), a few, and two:
    exactly the rows of one in-process decode of the whole file.  (Split
    sizes down to one byte are swept without Spark: test_split_local.py.)"""
    data = damaged_demo()[:3000] + b"RIPP\x01" + damaged_demo()[3000:4200]  # a false magic, a cut tail
    path = tmp_path / "s.ripple"
    path.write_bytes(data)
    whole = in_process_rows([str(path)], len(data))
    kinds = Counter(r[COLUMN_NAMES.index("problem")] or "message" for r in whole)
    assert kinds == {"message": 24, "crc_mismatch": 2, "bad_magic": 1, "truncated": 1}
    out = tmp_path / "table"
    export([str(path)], out, "--split-size", str(split_size), "--partition-by", "none")
    assert table_rows(out) == whole


def test_help_does_not_import_pyspark() -> None:
    code = "import sys; from ripple_cli.cli.main import main\ntry: main(['--help'])\nexcept SystemExit: pass\n"
    code += "print('pyspark' in sys.modules, 'pyarrow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False False"


def test_csv_keeps_white_space_and_control_bytes(spark: object, tmp_path: Path) -> None:
    """Spark's CSV writer trims each string's leading and trailing white
    space and control bytes unless told not to: a file name ending in a
    space and a worker id of spaces came out changed (pyarrow's in-process
    CSV keeps them)."""
    text = (
        b'((seq 1)(time_ns 1)(schema ripple.handshake/v1)(msg(Handshake((source_worker_id"  ")'
        b"(output_schemas())(protocol_version 1)))))\n"
        b'((seq 2)(time_ns 2)(schema ripple.heartbeat/v1)(msg(Heartbeat((worker_id "\\001 x\\002")'
        b"(timestamp_ns 2)(load 0.5)))))\n"
    )
    stream = run_cli(["encode"], stdin=text)
    assert stream.code == 0, stream.stderr
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / " edge .ripple ").write_bytes(stream.stdout)
    expected = in_process_rows([str(inputs)], 64 << 20)
    assert {r[COLUMN_NAMES.index("worker")] for r in expected} == {"  ", "\x01 x\x02"}
    out = tmp_path / "csv"
    res = run_cli(["export", "-F", "csv", str(inputs), "-o", str(out)])
    assert res.code == 0, res.stderr
    assert text_table_rows(out, "csv") == expected
