"""export --tables: the typed tables beside the all-messages table.

On embedded Spark (the session's one JVM) and in-process, the same typed
tables from a directory of raw streams and captures (a rotated connection
among them), queried by Spark SQL without any JSON; schema versions that
check_backward accepts in one table, the others apart.  Every schema
type's values, exactly, are in tests/interop/test_interop_tables.py (on
OCaml's adversarial streams)."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from ripple_cli.batch.rows import COLUMN_NAMES, Where
from ripple_cli.batch.siblings import SiblingRows, unify
from ripple_cli.batch.tablefiles import finish_tables
from ripple_cli.batch.tables import TABLE_VERSION
from ripple_cli.codec.delta import REMOVE, CompiledSchema, Patch, SetRow
from ripple_cli.codec.messages import FIXED_FINGERPRINTS, DeltaView, Handshake
from ripple_cli.codec.schema import FLOAT, INT, STRING, Field, OptionOf, Schema
from ripple_cli.protocols.base import ProtoMessage
from tests.batch.streams import Direction, at
from tests.batch.test_spark_export import in_process_rows, table_rows
from tests.batch.typedkit import export_tables, pandas_exact
from tests.conftest import ROOT, run_cli

Row = dict[str, Any]
EXAMPLES = ROOT / "examples"
SIBLING_CAPTURES = ("beats.pcap", "rstmdb.pcap", "pravega.pcap", "streams.pcap")  # one sibling protocol each
DEMO_TABLES = ["book", "positions", "trades", "vwap"]  # the example's outputs with a schema (not orders/v3)
TYPE, SCHEMA_KNOWN = COLUMN_NAMES.index("type"), COLUMN_NAMES.index("schema_known")


def _key(r: Row) -> tuple[str, int, str, int]:
    return (r["capture_file"], r["connection"] or 0, r["direction"] or "", r["offset"])


def typed_tables(out: Path) -> dict[str, list[Row]]:
    """Every typed table under OUT/ripple, its rows in a fixed order."""
    return {d.name: sorted(pq.read_table(d).to_pylist(), key=_key) for d in sorted((out / "ripple").iterdir())}


def test_spark_and_in_process_write_the_same_typed_tables(spark: Any, mixed_dir: Path, tmp_path: Path) -> None:
    inputs = [str(mixed_dir), *(str(EXAMPLES / name) for name in SIBLING_CAPTURES)]
    out = tmp_path / "spark"
    res = run_cli(["export", "--tables", "--split-size", "8192", *inputs, "-o", str(out)])
    assert res.code == 0, res.stderr
    assert res.stderr.startswith("export: ") and ", with typed tables) in " in res.stderr
    local = tmp_path / "local"
    export_tables(inputs, local, 8192)
    finish_tables(str(local))

    # The all-messages table, as without --tables, under OUT/messages.
    messages = in_process_rows(inputs, 8192)
    assert table_rows(out / "messages") == messages
    # The typed tables: the same part files (one per task that had rows), the same rows.
    assert sorted(p.name for p in (out / "ripple").iterdir()) == DEMO_TABLES
    tables = sorted(d for d in out.glob("*/*") if d.parent.name != "messages")
    assert [d.relative_to(out) for d in tables] == sorted(
        d.relative_to(local) for d in local.glob("*/*") if d.parent.name != "messages"
    )
    assert {d.parent.name for d in tables} == {"ripple", "lumberjack", "rcp", "pravega", "reactive-streams"}
    for d in tables:
        names = sorted(p.name for p in d.iterdir())
        assert names == sorted(p.name for p in (local / d.relative_to(out)).iterdir())
        assert all(n.startswith("part-") for n in names)  # no hidden leftovers
        meta = pq.read_metadata(d / names[0])
        assert meta.metadata[b"ripple.table_version"] == TABLE_VERSION.encode()
        assert meta.row_group(0).column(0).compression == "ZSTD"
        key = (
            _key
            if d.parent.name == "ripple"
            else (lambda r: (r["capture_file"], r["connection"], r["direction"], r["offset"]))
        )
        assert sorted(pq.read_table(d).to_pylist(), key=key) == sorted(
            pq.read_table(local / d.relative_to(out)).to_pylist(), key=key
        )
    local_tables = typed_tables(local)
    # Every Delta with a schema is in its table (orders/v3 has none in the inputs).
    deltas = sum(1 for r in messages if r[TYPE] == "Delta" and r[SCHEMA_KNOWN] is True)
    assert sum(len(rows) for rows in local_tables.values()) == deltas

    # An analyst's query, no JSON: Spark reads the typed columns as they are.
    frame = spark.read.parquet(str(out / "ripple" / "vwap"))
    frame.createOrReplaceTempView("vwap")
    try:
        got = {r["key"]: r["avg(price)"] for r in spark.sql("SELECT key, avg(price) FROM vwap GROUP BY key").collect()}
        types = dict(frame.dtypes)
    finally:
        spark.catalog.dropTempView("vwap")
    prices: dict[str, list[float]] = defaultdict(list)
    for r in local_tables["vwap"]:
        if r["price"] is not None:
            prices[r["key"]].append(r["price"])
    want = {k: sum(v) / len(v) for k, v in prices.items()}
    assert sorted(got) == sorted(want) and len(want) > 5
    assert all(math.isclose(got[k], want[k], rel_tol=1e-12) for k in want)
    assert types["time"] == "timestamp" and types["time_ns"] == "bigint" and types["patch"] == "array<string>"
    assert types["price"] == "double" and types["volume"] == "bigint" and types["removed"] == "boolean"

    # pandas' defaults give the exact values, nullable integers included.
    for d in (out / "ripple").iterdir():
        assert pandas_exact(d) > 5


# ------------------------------------------------------------------ evolution

PX1 = Schema(b"px", 1, STRING, (Field(b"price", FLOAT),))
# v2 reads v1 (its new field has a default): one table.
PX2 = Schema(b"px", 2, STRING, (Field(b"price", FLOAT), Field(b"venue", OptionOf(STRING), b"()")))
# v3 cannot read v2 (price is now an Int): a table of its own.
PX3 = Schema(b"px", 3, STRING, (Field(b"price", INT), Field(b"venue", OptionOf(STRING), b"()")))


def _evolving_stream() -> bytes:
    d = Direction()
    for i, (worker, s) in enumerate(((b"w1", PX1), (b"w2", PX2), (b"w3", PX3))):
        d.put(at(f"{i}.0"), Handshake(worker, ((b"px", s),), 1), FIXED_FINGERPRINTS[0], "Handshake")
        c = CompiledSchema(s)
        row: dict[str, Any] = {"price": 10 * (i + 1) if s is PX3 else 1.5 + i}
        if s is not PX1:
            row["venue"] = (b"XNAS",) if s is PX2 else None
        for n, delta in enumerate((SetRow(row), Patch(((0, row["price"]),)), REMOVE)):
            body = DeltaView(b"px", b"IBM", delta, n + 1, None, c)
            d.put(at(f"{i}.{n + 1}"), body, s.fingerprint, "Delta")
    return b"".join(e.data for e in d.envelopes)


def test_compatible_versions_share_a_table(tmp_path: Path) -> None:
    stream = tmp_path / "px.ripple"
    stream.write_bytes(_evolving_stream())
    out = tmp_path / "out"
    export_tables([str(stream)], out)
    tables = typed_tables(out)
    assert sorted(tables) == ["px", "px@px_v3"]
    cols = ("schema", "worker", "sequence_no", "key", "removed", "patch", "price", "venue")
    assert [tuple(r[c] for c in cols) for r in tables["px"]] == [
        ("px/v1", "w1", 1, "IBM", False, None, 1.5, None),
        ("px/v1", "w1", 2, "IBM", False, ["price"], 1.5, None),
        ("px/v1", "w1", 3, "IBM", True, None, None, None),
        ("px/v2", "w2", 1, "IBM", False, None, 2.5, "XNAS"),
        ("px/v2", "w2", 2, "IBM", False, ["price"], 2.5, None),
        ("px/v2", "w2", 3, "IBM", True, None, None, None),
    ]
    assert [tuple(r[c] for c in cols) for r in tables["px@px_v3"]] == [
        ("px/v3", "w3", 1, "IBM", False, None, 30, None),
        ("px/v3", "w3", 2, "IBM", False, ["price"], 30, None),
        ("px/v3", "w3", 3, "IBM", True, None, None, None),
    ]
    assert str(pq.read_schema(out / "ripple" / "px" / "part-00000.parquet").field("price").type) == "double"
    assert str(pq.read_schema(out / "ripple" / "px@px_v3" / "part-00000.parquet").field("price").type) == "int64"


# ------------------------------------------------------------------ sibling protocols

CONTEXT = ("capture_file", "connection", "direction", "src", "dst", "community_id", "capture_time_ns", "offset", "size")


def _flat_json(fields: dict[str, Any]) -> dict[str, Any]:
    """What a sibling table's columns hold: objects one level down as
    columns, deeper objects and arrays as compact JSON text."""

    def cell(v: Any) -> Any:
        return json.dumps(v, ensure_ascii=False, separators=(",", ":")) if isinstance(v, (dict, list)) else v

    out: dict[str, Any] = {}
    for k, v in fields.items():
        if isinstance(v, dict) and v:
            out.update({f"{k}.{k2}": cell(v2) for k2, v2 in v.items()})
        else:
            out[k] = cell(v)
    return out


def test_sibling_protocols_get_tables_of_their_own(tmp_path: Path) -> None:
    inputs = [str(EXAMPLES / name) for name in SIBLING_CAPTURES]
    out = tmp_path / "out"
    export_tables(inputs, out)
    finish_tables(str(out))
    expected: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for path in inputs:
        done = run_cli(["decode", "-F", "json", path])
        assert done.code == 0, done.stderr
        for m in json.loads(done.stdout):
            if m["protocol"] == "ripple":
                continue
            fields = {k: v for k, v in m.items() if k not in ("v", "source", "capture_time", "protocol", "type")}
            row = {c: fields.pop(c) for c in CONTEXT if c != "capture_file"}
            expected[(m["protocol"], m["type"])].append({"capture_file": path, **row, **_flat_json(fields)})
    protocols = {p for p, _ in expected}
    assert protocols == {"lumberjack", "rcp", "pravega", "reactive-streams"}
    assert {p.name for p in out.iterdir()} - {"messages"} == protocols  # no Ripple in these captures
    for (protocol, typ), rows in expected.items():
        table = out / protocol / typ
        schemas = {pq.read_schema(f).remove_metadata() for f in table.iterdir()}
        assert len(schemas) == 1  # every part file the same columns
        got = sorted(pq.read_table(table).to_pylist(), key=lambda r: (r["capture_file"], r["connection"], r["offset"]))
        for r in got:
            assert r.pop("capture_time") is not None
        names = set(got[0])
        want = [{n: r.get(n) for n in names} for r in rows]
        assert set().union(*(r.keys() for r in rows)) == names
        assert got == sorted(want, key=lambda r: (r["capture_file"], r["connection"], r["offset"])), (protocol, typ)
    # The Lumberjack events' fields and the RCP ops as columns, no JSON.
    events = pq.read_table(out / "lumberjack" / "Json").to_pylist()
    assert [e["event.host"] for e in events][:2] == ["web-1", "web-1"]
    assert {r["op"] for r in pq.read_table(out / "rcp" / "Request").to_pylist()} >= {"HELLO"}


def test_sibling_part_files_agree(tmp_path: Path) -> None:
    """Two tasks that saw a field with different types: unify gives every
    part file the same columns (null -> the other's type, int64 beside
    double -> double, otherwise string)."""
    d = tmp_path / "lumberjack" / "Json"
    d.mkdir(parents=True)
    where = Where("a.pcap")

    def part(name: str, values: list[dict[str, Any]]) -> None:
        rows = SiblingRows()
        for i, fields in enumerate(values):
            rows.add((*where.columns(), None, None, i, 10), ProtoMessage("lumberjack", i, 10, "Json", b"", fields, ""))
        pq.write_table(rows.take(), d / name)

    part("part-00000-0000.parquet", [{"a": 1, "b": 1, "c": None, "d": True}])
    part("part-00001-0000.parquet", [{"a": 1.5, "b": "x", "c": 7}, {"a": None, "b": None, "c": None, "e": {"k": [1]}}])
    unify(str(d))
    types = {f.name: str(f.type) for f in pq.read_schema(d / "part-00000-0000.parquet") if f.name in "abcde.k"}
    assert types == {"a": "double", "b": "string", "c": "int64", "d": "bool", "e.k": "string"}
    assert (
        pq.read_schema(d / "part-00001-0000.parquet").remove_metadata()
        == pq.read_schema(d / "part-00000-0000.parquet").remove_metadata()
    )
    rows = pq.read_table(d).to_pylist()
    assert [(r["a"], r["b"], r["c"], r["d"], r["e.k"]) for r in rows] == [
        (1.0, "1", None, True, None),
        (1.5, "x", 7, None, None),
        (None, None, None, None, "[1]"),
    ]


def test_tables_are_parquet_only(tmp_path: Path) -> None:
    res = run_cli(["export", "--tables", "-F", "csv", str(EXAMPLES / "demo.ripple"), "-o", str(tmp_path / "out")])
    assert (res.code, res.stderr) == (2, "ripple: --tables: the typed tables are Parquet only (not -F csv)\n")
    assert not (tmp_path / "out").exists()
