"""The batch pipeline without Spark: byte-range splitting (swept over split
sizes), input discovery, and the in-process rows against `ripple decode`."""

from __future__ import annotations

import datetime
import json
from collections import Counter
from pathlib import Path

import pytest

from ripple_cli.batch import split
from ripple_cli.batch.inputs import discover
from ripple_cli.batch.local import local_rows, plan_local
from ripple_cli.batch.rows import COLUMN_NAMES, row_dict
from ripple_cli.batch.split import bytes_reader, first_envelope, plan_ranges
from ripple_cli.batch.tasks import RawRange, Settings, raw_range_rows, rows_of
from ripple_cli.codec.envelope import DEFAULT_MAX_PAYLOAD
from ripple_cli.errors import InputUnreadable
from tests.batch.conftest import DEMO, damaged_demo
from tests.batch.streams import MS, at, write_stats_inputs
from tests.conftest import run_cli


def test_plan_ranges() -> None:
    assert plan_ranges(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert plan_ranges(8, 4) == [(0, 4), (4, 8)]
    assert plan_ranges(0, 4) == [(0, 0)]
    with pytest.raises(ValueError):
        plan_ranges(5, 0)


def test_first_envelope_finds_whole_valid_envelopes_only(monkeypatch: pytest.MonkeyPatch) -> None:
    data = damaged_demo()
    read = bytes_reader(data)
    n = len(data)
    assert first_envelope(read, 0, n, n, DEFAULT_MAX_PAYLOAD) == 0
    assert first_envelope(read, 1, n, n, DEFAULT_MAX_PAYLOAD) == 699
    # The envelope at 931 has a broken CRC; the one at 1701 a broken magic.
    assert first_envelope(read, 900, n, n, DEFAULT_MAX_PAYLOAD) == 1029
    assert first_envelope(read, 1600, n, n, DEFAULT_MAX_PAYLOAD) == 1844
    assert first_envelope(read, 900, 1029, n, DEFAULT_MAX_PAYLOAD) is None  # none starts in the range
    assert first_envelope(read, n - 10, n, n, DEFAULT_MAX_PAYLOAD) is None
    # Windows smaller than an envelope, and a magic across two windows.
    monkeypatch.setattr(split, "WINDOW", 7)
    assert first_envelope(read, 900, n, n, DEFAULT_MAX_PAYLOAD) == 1029
    assert first_envelope(read, 1, n, n, DEFAULT_MAX_PAYLOAD) == 699


def _rows_by_split(path: Path, size: int, split_size: int) -> list[dict[str, object]]:
    """The plan's ranges (schemas and workers from the first pass), each decoded on its own."""
    plan = plan_local(discover([str(path)]), Settings(), split_size)
    assert len(plan.tasks) == len(plan_ranges(size, split_size))
    rows: list[dict[str, object]] = []
    for task in plan.tasks:
        assert isinstance(task, RawRange)
        rows.extend(row_dict(r) for r in rows_of(raw_range_rows(task, plan.settings)))
    return rows


def test_split_sizes_sweep_gives_the_rows_of_one_decode(tmp_path: Path) -> None:
    """Every split size, from one byte (smaller than any message) to more
    than the file, gives the same rows in the same order: none lost, none
    twice, problems included."""
    data = damaged_demo()[:3000] + b"RIPP\x01" + damaged_demo()[3000:4200]  # a false magic, a cut tail
    path = tmp_path / "s.ripple"
    path.write_bytes(data)
    whole = _rows_by_split(path, len(data), len(data))
    kinds = Counter(r["problem"] or "message" for r in whole)
    assert kinds == {"message": 24, "crc_mismatch": 2, "bad_magic": 1, "truncated": 1}
    for split_size in [*range(1, 40), 127, 700, 931, 1029, 2000, len(data) - 1, len(data) + 1]:
        assert _rows_by_split(path, len(data), split_size) == whole, f"split size {split_size}"


def test_larger_split_sweep_on_the_whole_damaged_stream(tmp_path: Path) -> None:
    data = damaged_demo()
    path = tmp_path / "d.ripple"
    path.write_bytes(data)
    whole = _rows_by_split(path, len(data), len(data))
    assert len(whole) == 300
    for split_size in (97, 1000, 4096, 9999, 20000):
        assert _rows_by_split(path, len(data), split_size) == whole, f"split size {split_size}"


def test_discover_walks_directories_and_globs(mixed_dir: Path) -> None:
    found = discover([str(mixed_dir)])
    names = [(Path(f.path).relative_to(mixed_dir).as_posix(), f.kind) for f in found]
    assert names == [
        ("damaged.ripple", "raw"),
        ("demo.ripple", "raw"),
        ("caps/one.pcap", "pcap"),
        ("caps/rot-1.pcap", "pcap"),
        ("caps/rot-2.pcap", "pcap"),
    ]
    assert [f.path for f in discover([str(mixed_dir / "*.ripple"), str(mixed_dir / "demo.ripple")])] == [
        str(mixed_dir / "damaged.ripple"),
        str(mixed_dir / "demo.ripple"),
    ]
    with pytest.raises(InputUnreadable, match=r"nothing\.pcap: no such file or directory"):
        discover([str(mixed_dir / "nothing.pcap")])
    with pytest.raises(InputUnreadable, match=r"\*.pcapng: no file matches"):
        discover([str(mixed_dir / "*.pcapng")])


def _decode_jsonl(path: Path) -> list[dict[str, object]]:
    res = run_cli(["decode", "--format", "jsonl", str(path)])
    assert res.code in (0, 1), res.stderr
    return [json.loads(line) for line in res.text.splitlines()]


def _view(row: dict[str, object]) -> tuple[object, ...]:
    """What a row and decode's JSON both say about a message or problem."""
    return (row["connection"], row["direction"], row["offset"], row["type"] or row["problem"], row["seq"])


def test_in_process_rows_match_ripple_decode(mixed_dir: Path, unrotated_pcap: Path) -> None:
    rows = list(local_rows(discover([str(mixed_dir)]), Settings(), split_size=4096))
    assert len(rows) == 300 + 300 + 301 + 301
    by_file: dict[str, list[dict[str, object]]] = {}
    for r in rows:
        by_file.setdefault(Path(str(r["capture_file"])).name, []).append(r)
    assert {k: len(v) for k, v in by_file.items()} == {
        "demo.ripple": 300,
        "damaged.ripple": 300,
        "one.pcap": 301,
        "rot-1.pcap": 120,
        "rot-2.pcap": 181,
    }
    for name in ("demo.ripple", "damaged.ripple", "one.pcap"):
        expected = []
        for obj in _decode_jsonl(mixed_dir / (name if name.endswith("ripple") else f"caps/{name}")):
            problem = obj.get("problem")
            kind = problem["kind"] if isinstance(problem, dict) else obj["type"]
            seq = problem["seq"] if isinstance(problem, dict) else obj["seq"]
            expected.append((obj.get("connection"), obj.get("direction"), obj["offset"], kind, seq))
        assert [_view(r) for r in by_file[name]] == expected, name
    # The canonical text agrees with decode's, message by message (the
    # typed values: the typed tables, test_typed_tables.py).
    lines = run_cli(["decode", str(DEMO)]).text.splitlines()
    for row, line in zip(by_file["demo.ripple"], lines, strict=True):
        if row["type"] == "Delta" and row["schema_known"]:
            assert f"(key {row['key']})" in line or f"(key{row['key']})" in line
            assert f"(delta{row['delta']})" in line or f"(delta {row['delta']})" in line
    # The rotated connection: the rows of the capture it was cut from.
    whole = list(local_rows(discover([str(unrotated_pcap)]), Settings()))
    rotated = by_file["rot-1.pcap"] + by_file["rot-2.pcap"]
    strip = ("capture_file", "connection")
    assert [{k: v for k, v in r.items() if k not in strip} for r in rotated] == [
        {k: v for k, v in r.items() if k not in strip} for r in whole
    ]


def test_plan_finds_handshakes_and_rotated_connections(mixed_dir: Path) -> None:
    plan = plan_local(discover([str(mixed_dir)]), Settings(), split_size=4096)
    assert sorted(s.fingerprint.decode() for s in plan.settings.schemas) == [
        "book/v4",
        "positions_by_account_and_desk/v1",
        "trades/v1",
        "vwap/v2",
    ]
    assert list(plan.rotated) == [("10.0.0.1:42000", "10.0.0.2:9000")]
    assert [Path(p.path).name for p in plan.rotated[("10.0.0.1:42000", "10.0.0.2:9000")].parts] == [
        "rot-1.pcap",
        "rot-2.pcap",
    ]
    ranges = [t for t in plan.tasks if isinstance(t, RawRange)]
    assert len(ranges) == 10 + 10
    # Ranges after the Handshake at offset 0 know their worker.
    assert {t.worker for t in ranges if t.start > 0} == {b"md-worker-07"}


def test_rows_column_by_column(tmp_path: Path) -> None:
    """Rows are tuples in column order: each value under its column's name,
    for a Delta, a problem, a Delta without a schema, and a capture's
    Heartbeat (its own worker) and Schema_negotiation (no worker)."""
    inputs = write_stats_inputs(tmp_path)
    raw = str(inputs.raw)
    rows = list(local_rows(discover([raw]), Settings()))
    nothing = dict.fromkeys(COLUMN_NAMES)
    where = {"capture_file": raw}
    hour = datetime.datetime(2024, 6, 20, 16, tzinfo=datetime.UTC)
    envelope = {"flags": 0, "crc_ok": True, "event_hour": hour, "worker": "w3"}
    assert rows[1] == nothing | where | envelope | {
        "offset": 85,
        "seq": 2,
        "time_ns": at("20.1"),
        "time": hour.replace(minute=13, second=40, microsecond=100000),
        "schema": "px/v1",
        "type": "Delta",
        "size": 92,
        "payload_length": 29,
        "source_output": "px",
        "key": "IBM",
        "delta": "(Set((price 1.5)))",
        "schema_known": True,
        "sequence_no": 1,
        "watermark_ns": at("20.1") - 7 * MS,
    }
    assert rows[2] == nothing | where | {
        "offset": 177,
        "crc_ok": False,
        "problem": "crc_mismatch",
        "problem_detail": "CRC mismatch: stored 54259a54, computed ab259a54",
        "severity": "error",
        "skipped": 96,
        "worker": "w3",
    }
    # Without the Handshake no schema: the key and delta as raw bytes.
    alone = tmp_path / "alone.ripple"
    alone.write_bytes(inputs.streams[raw][1].data)
    [row] = list(local_rows(discover([str(alone)]), Settings()))
    assert {c: row[c] for c in ("worker", "key", "delta", "schema_known", "watermark_ns")} == {
        "worker": None,
        "key": '"\\003IBM"',  # the bin_prot string: its length, then IBM
        "delta": '"\\000\\000\\000\\000\\000\\000\\000\\248?"',
        "schema_known": False,
        "watermark_ns": at("20.1") - 7 * MS,
    }
    capture = list(local_rows(discover([str(inputs.pcap)]), Settings()))
    heartbeat = next(r for r in capture if r["type"] == "Heartbeat")
    columns = ("connection", "direction", "src", "dst", "community_id", "capture_time_ns", "worker")
    assert {c: heartbeat[c] for c in columns} == {
        "connection": 1,
        "direction": "c2s",
        "src": "10.1.0.1:41001",
        "dst": "10.1.0.2:7400",
        "community_id": "1:QnEWr3qfroI2soq1XiBDsN/9pUs=",
        "capture_time_ns": at("0.1") + MS,
        "worker": "w1",
    }
    assert heartbeat["msg_json"] == f'{{"worker_id":"w1","timestamp_ns":{at("0.1")},"load":0.5}}'
    [answer] = [r for r in capture if r["direction"] == "s2c"]
    assert (answer["type"], answer["src"], answer["worker"], answer["msg_json"]) == (
        "Schema_negotiation",
        "10.1.0.2:7400",
        None,
        '{"ok":true,"errors":[]}',
    )
    assert answer["community_id"] == heartbeat["community_id"]  # one ID for both directions
    # --community-id-seed: the column of every capture row; a raw stream's is null.
    seeded = list(local_rows(discover([str(inputs.pcap), raw]), Settings(community_id_seed=1)))
    assert {(r["connection"], r["community_id"]) for r in seeded} == {
        (1, "1:cJXtTLqx3bqc44y5rToLhq4/zXM="),
        (2, "1:8/ogIhnwsrypErhsxtYYNRPX2tk="),
        (None, None),
    }


def test_relative_inputs_open_against_the_drivers_directory(
    mixed_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An executor's working directory is not the driver's: the tasks open
    relative inputs against Settings.cwd, and capture_file keeps them as
    given."""
    monkeypatch.chdir(mixed_dir.parent)
    inputs = discover([mixed_dir.name])
    here = list(local_rows(inputs, Settings(cwd=str(mixed_dir.parent)), split_size=4096))
    monkeypatch.chdir(tmp_path)  # elsewhere, as an executor
    there = list(local_rows(inputs, Settings(cwd=str(mixed_dir.parent)), split_size=4096))
    assert there == here
    assert {r["capture_file"].split("/")[0] for r in there} == {mixed_dir.name}
    assert len(here) == 1202
