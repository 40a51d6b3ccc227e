"""The typed tables' expected rows, made independently of the code that
writes them: from `ripple decode -F json` (the typed JSON the interop tests
hold to OCaml's values) and the schema, type by type."""

from __future__ import annotations

import base64
import json
import math
import os
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ripple_cli.batch.inputs import discover
from ripple_cli.batch.local import plan_local, write_local
from ripple_cli.batch.plan import Plan
from ripple_cli.batch.tablefiles import TypedOut
from ripple_cli.batch.tables import Layout, field_column
from ripple_cli.batch.tasks import Settings
from ripple_cli.codec.schema import EnumOf, FieldType, ListOf, OptionOf, Prim, RecordOf, Schema
from tests.conftest import run_cli

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def export_tables(inputs: Sequence[str], out: Path, split_size: int = 64 << 20) -> Plan:
    """export --tables in this process, without Spark (as the command does
    where PySpark is not installed)."""
    plan = plan_local(discover(list(inputs)), Settings(cwd=os.getcwd()), split_size)
    write_local(plan, str(out / "messages"), "parquet", None, False, TypedOut(str(out), Layout(plan.settings.schemas)))
    return plan


def _text(j: Any) -> str:
    if isinstance(j, dict):
        return base64.b64decode(j["base64"]).decode("utf-8", "backslashreplace")
    assert isinstance(j, str)
    return j


def _float(j: Any) -> float:
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(j, j) if isinstance(j, str) else float(j)


def value(t: FieldType, j: Any) -> Any:
    """A value's typed JSON as the Python value of its typed column."""
    if isinstance(t, Prim):
        if t.kind == "Float":
            return _float(j)
        if t.kind == "String":
            return _text(j)
        return j
    if isinstance(t, EnumOf):
        return j
    if isinstance(t, OptionOf):
        if j is None:
            return None
        if isinstance(t.inner, OptionOf):  # JSON: [x] for Some x
            return {"value": value(t.inner, j[0])}
        return value(t.inner, j)
    if isinstance(t, ListOf):
        return [value(t.inner, x) for x in j]
    assert isinstance(t, RecordOf)
    return {f.name.decode(): value(f.typ, j[f.name.decode()]) for f in t.fields}


def expected_rows(path: str, schemas: Sequence[Schema]) -> dict[tuple[str, int], dict[str, Any]]:
    """Each Delta of a raw stream, as its typed row: keyed by (table
    directory, offset)."""
    by_fp = {s.fingerprint.decode("utf-8", "backslashreplace"): s for s in schemas}
    done = run_cli(["decode", "-F", "json", path])
    assert done.code == 0, done.stderr
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for m in json.loads(done.stdout):
        if m["type"] != "Delta" or m["schema"] not in by_fp:
            continue  # no schema, no typed row (the all-messages table has the raw bytes)
        s = by_fp[m["schema"]]
        msg = m["msg"]
        names = [f.name.decode() for f in s.fields]
        row: dict[str, Any] = {
            "capture_file": path,
            "connection": None,
            "direction": None,
            "community_id": None,
            "offset": m["offset"],
            "seq": m["seq"],
            "time": EPOCH + timedelta(microseconds=m["time_ns"] // 1000),
            "time_ns": m["time_ns"],
            "schema": m["schema"],
            "sequence_no": msg["sequence_no"],
            "watermark_ns": msg["watermark_ns"],
            "key": value(s.key, msg["key"]),
            "removed": msg["delta"]["op"] == "remove",
            "patch": None,
        }
        fields: dict[str, Any] = dict.fromkeys(names)
        delta = msg["delta"]
        types = {f.name.decode(): f.typ for f in s.fields}
        if delta["op"] == "set":
            fields = {n: value(types[n], delta["row"][n]) for n in names}
        elif delta["op"] == "patch":
            row["patch"] = [field_column(u["field"].encode()) for u in delta["updates"]]
            for u in delta["updates"]:
                fields[u["field"]] = value(types[u["field"]], u["value"])
        row.update({field_column(n.encode()): v for n, v in fields.items()})
        out[(_text(msg["source_output"]), m["offset"])] = row
    return out


def canon(v: Any) -> Any:
    """Values compared exactly: floats by their repr (NaN equal to NaN,
    -0.0 apart from 0.0)."""
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, list):
        return [canon(x) for x in v]
    if isinstance(v, dict):
        return {k: canon(x) for k, x in v.items()}
    return v


def table_rows(table_dir: Path) -> list[dict[str, Any]]:
    return pq.read_table(table_dir).to_pylist()


def pandas_exact(table_dir: Path) -> int:
    """pandas' default read of a typed table against pyarrow's: every
    integer and boolean value the same (nulls as <NA>), every double too
    (NaN as NaN, null as NaN).  Returns the columns compared."""
    t = pq.read_table(table_dir)
    df = pd.read_parquet(table_dir)
    n = 0
    for f in t.schema:
        if not (pa.types.is_integer(f.type) or pa.types.is_boolean(f.type) or pa.types.is_floating(f.type)):
            continue
        want = t.column(f.name).to_pylist()
        got = df[f.name].tolist()
        for a, b in zip(want, got, strict=True):
            if a is None:
                assert b is pd.NA or (isinstance(b, float) and math.isnan(b)), (f.name, a, b)
            elif isinstance(a, float):
                assert canon(a) == canon(b), (f.name, a, b)
            else:
                assert type(b) is type(a) and a == b, (f.name, a, b)  # exact: an int, not a float
        n += 1
    return n
