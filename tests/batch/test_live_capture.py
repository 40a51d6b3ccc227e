"""`ripple export` of a real tcpdump capture: real sockets on 127.0.0.1 send
the example stream and answer it, tcpdump captures them, Spark decodes the
capture.  The rows are the raw stream's rows, message for message."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds

from ripple_cli.batch.arrow import ARROW_SCHEMA
from ripple_cli.batch.inputs import discover
from ripple_cli.batch.local import local_rows
from ripple_cli.batch.rows import COLUMN_NAMES
from ripple_cli.batch.tasks import Settings
from tests.batch.conftest import DEMO, NEGOTIATION
from tests.capture.livecap import capture_conversation, require_tcpdump
from tests.conftest import run_cli

# What a capture adds to a raw stream's row: where it was seen, and when.
CAPTURE_COLUMNS = ("capture_file", "connection", "direction", "src", "dst", "community_id", "capture_time_ns")


def test_export_of_a_tcpdump_capture(spark: object, tmp_path: Path) -> None:
    require_tcpdump()
    path = tmp_path / "live.pcap"
    demo = DEMO.read_bytes()
    exchanges = capture_conversation(path, [(demo, NEGOTIATION), (demo, NEGOTIATION)], seed=11, max_write=900)
    out = tmp_path / "table"
    res = run_cli(["export", "-q", str(path), "-o", str(out)])
    assert res.code == 0, res.stderr
    parts = ds.partitioning(pa.schema([ARROW_SCHEMA.field("event_hour")]), flavor="hive")  # in its type
    rows = ds.dataset(out, format="parquet", partitioning=parts).to_table().to_pylist()
    assert len(rows) == 2 * 300 + 2
    assert all(r["problem"] is None and r["capture_time_ns"] is not None for r in rows)
    key = repr
    in_process = [tuple(r[c] for c in COLUMN_NAMES) for r in local_rows(discover([str(path)]), Settings())]
    assert sorted((tuple(r[c] for c in COLUMN_NAMES) for r in rows), key=key) == sorted(in_process, key=key)

    raw = [
        {c: v for c, v in r.items() if c not in CAPTURE_COLUMNS} for r in local_rows(discover([str(DEMO)]), Settings())
    ]
    server = {r["dst"] for r in rows if r["direction"] == "c2s"}
    assert len(server) == 1
    for e in exchanges:
        client = f"127.0.0.1:{e.client_port}"
        sent = [r for r in rows if r["src"] == client]
        answered = [r for r in rows if r["dst"] == client]
        assert {(r["connection"], r["direction"]) for r in sent} == {(sent[0]["connection"], "c2s")}
        sent.sort(key=lambda r: r["offset"])
        # In capture order: each message completed by a later (or the same) packet.
        times = [r["capture_time_ns"] for r in sent]
        assert times == sorted(times)
        assert [{c: v for c, v in r.items() if c not in CAPTURE_COLUMNS} for r in sent] == raw
        assert [(r["type"], r["offset"], r["size"], r["direction"]) for r in answered] == [
            ("Schema_negotiation", 0, len(NEGOTIATION), "s2c")
        ]
        # One Community ID for the connection, both directions; another for the other one.
        assert len({r["community_id"] for r in sent + answered}) == 1
    assert len({r["community_id"] for r in rows}) == len(exchanges)
