"""ripple export and stats on real embedded Spark (local[2], one session)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow.dataset as ds

from ripple_cli.batch.inputs import discover
from ripple_cli.batch.local import local_rows
from ripple_cli.batch.rows import COLUMN_NAMES
from ripple_cli.batch.tasks import Settings
from tests.conftest import ROOT, run_cli


def _key(row: dict[str, object]) -> tuple[str, ...]:
    return tuple(repr(row[c]) for c in COLUMN_NAMES)


def test_export_parquet_equals_in_process(spark: object, mixed_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "table"
    res = run_cli(["export", "-q", "--split-size", "4096", str(mixed_dir), "-o", str(out)])
    assert res.code == 0, res.stderr
    table = ds.dataset(out, format="parquet", partitioning="hive").to_table()
    assert table.num_rows == 1202
    got = sorted(_key(r) for r in table.to_pylist())
    expected = sorted(_key(r) for r in local_rows(discover([str(mixed_dir)]), Settings(), split_size=4096))
    assert got == expected


def test_help_does_not_import_pyspark() -> None:
    code = "import sys; from ripple_cli.cli.main import main\ntry: main(['--help'])\nexcept SystemExit: pass\n"
    code += "print('pyspark' in sys.modules, 'pyarrow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False False"
