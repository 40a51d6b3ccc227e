"""export --tables on OCaml's adversarial streams: every schema type
(Int, Int32, Int64, Float, Bool, String, Option, nested Options, List,
nested Lists, Record, Enum) at its edges (extreme integers, NaN and
infinities, strings that are not UTF-8), in keys and fields, in Set, Patch
and Remove: each typed row holds exactly the values `decode -F json` gives
for its Delta, read back with pyarrow and with pandas' defaults."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ripple_cli.batch.tablefiles import dir_name
from ripple_cli.batch.tables import TABLE_VERSION
from tests.batch.typedkit import canon, expected_rows, export_tables, pandas_exact, table_rows
from tests.interop.ocamlkit import OcamlTools

SEEDS = (1, 2)
COUNT = 3000


@pytest.mark.parametrize("seed", SEEDS)
def test_typed_tables_hold_ocamls_values(ocaml_tools: OcamlTools, tmp_path: Path, seed: int) -> None:
    stream = tmp_path / "stream.bin"
    subprocess.run(
        [ocaml_tools.gen, "-profile", "interop", "-seed", str(seed), "-count", str(COUNT), "-bin", stream],
        check=True,
        timeout=120,
    )
    out = tmp_path / "out"
    plan = export_tables([str(stream)], out)
    expected = expected_rows(str(stream), plan.settings.schemas)
    outputs = sorted({output for output, _ in expected})
    assert sorted(p.name for p in (out / "ripple").iterdir()) == sorted(dir_name(o) for o in outputs)
    got: dict[tuple[str, int], dict[str, object]] = {}
    for output in outputs:
        table = out / "ripple" / dir_name(output)
        for f in table.iterdir():
            meta = pq.read_metadata(f)
            assert meta.metadata[b"ripple.table_version"] == TABLE_VERSION.encode()
            assert {meta.row_group(0).column(i).compression for i in range(meta.num_columns)} == {"ZSTD"}
        for row in table_rows(table):
            assert (
                row.pop("worker") is not None
            )  # from the stream's Handshake, which the JSON of a Delta does not repeat
            got[(output, row["offset"])] = row
        assert pandas_exact(table) >= 8
    assert len(got) == len(expected) > COUNT // 2
    kinds = {(r["removed"], r["patch"] is not None) for r in expected.values()}
    assert kinds == {(False, False), (False, True), (True, False)}  # Set, Patch, Remove all present
    for k, row in expected.items():
        assert canon(got[k]) == canon(row), k
