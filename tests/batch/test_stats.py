"""`ripple stats` on real embedded Spark, against figures worked out by hand
from a generated set of inputs (tests/batch/streams.py: its docstring is the
layout the numbers below come from)."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from tests.batch.streams import GARBAGE, MS, NS, T0, StatsInputs, at, write_stats_inputs
from tests.conftest import ROOT, run_cli

S = NS
Report = dict[str, Any]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> StatsInputs:
    return write_stats_inputs(tmp_path_factory.mktemp("stats"))


@pytest.fixture(scope="module")
def by_type(spark: object, inputs: StatsInputs, tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, Path]:
    """The default report (--by type), with its charts."""
    charts = tmp_path_factory.mktemp("charts") / "charts"
    return stats_json(inputs, "--plot", str(charts)), charts


def stats_json(inputs: StatsInputs, *args: str) -> Report:
    res = run_cli(["stats", "-q", "-F", "json", *args, str(inputs.directory)])
    assert res.code == 0, res.stderr
    assert res.stderr == ""
    report: Report = json.loads(res.stdout)
    return report


def _bytes(inputs: StatsInputs, kind: str | None = None, stream: str | None = None, output: str | None = None) -> int:
    """Envelope bytes as written by the generator (not as read back)."""
    return sum(
        len(e.data)
        for name, envs in inputs.streams.items()
        if stream in (None, name)
        for e in envs
        if kind in (None, e.type) and output in (None, e.output)
    )


def rate(messages: int, first_ns: int, last_ns: int) -> float:
    return messages * NS / (last_ns - first_ns)


def test_stats_by_type_against_hand_computed_figures(inputs: StatsInputs, by_type: tuple[Report, Path]) -> None:
    r = by_type[0]
    # 19 + 1 messages on connection 1, 8 on connection 2, 6 in the raw stream
    # (its heartbeat at 20.2 has a broken CRC: a problem, not a message).
    assert r["overview"] == {
        "messages": 34,
        "bytes": _bytes(inputs),
        "errors": 1,
        "warnings": 0,
        "first_ns": T0,
        "last_ns": at("32.5"),
        "files": 2,
        "streams": 4,
        "rate": rate(34, T0, at("32.5")),
        "peak_per_second": 11,  # second 0: Handshake, negotiation, heartbeat, 8 Deltas
    }
    assert (r["v"], r["by"], r["silence_ns"]) == (1, "type", 10 * S)
    assert r["siblings"] == []  # Ripple's streams only
    # The same shape with or without --plot.
    assert list(r) == [
        "v",
        "by",
        "silence_ns",
        "overview",
        "groups",
        "problems",
        "sequences",
        "gaps",
        "watermark_lag",
        "heartbeats",
        "silences",
        "top_keys",
        "siblings",
    ]
    assert r["groups"] == [
        {
            "name": "Delta",
            "messages": 20,
            "bytes": _bytes(inputs, "Delta"),
            "first_ns": at("0.2"),
            "last_ns": at("20.4"),
            "rate": rate(20, at("0.2"), at("20.4")),
        },
        {
            "name": "Heartbeat",
            "messages": 10,
            "bytes": _bytes(inputs, "Heartbeat"),
            "first_ns": at("0.1"),
            "last_ns": at("32.5"),
            "rate": rate(10, at("0.1"), at("32.5")),
        },
        {
            "name": "Handshake",
            "messages": 3,
            "bytes": _bytes(inputs, "Handshake"),
            "first_ns": T0,
            "last_ns": at("20.0"),
            "rate": rate(3, T0, at("20.0")),
        },
        {
            "name": "Schema_negotiation",
            "messages": 1,
            "bytes": 65,
            "first_ns": at("0.05"),
            "last_ns": at("0.05"),
            "rate": None,  # one message: no span to divide by
        },
    ]
    # The CRC mismatch skips its own heartbeat envelope and the garbage after it.
    heartbeat_size = 83
    assert _bytes(inputs, "Heartbeat") == 10 * heartbeat_size
    assert r["problems"] == [
        {"kind": "crc_mismatch", "severity": "error", "count": 1, "skipped": heartbeat_size + len(GARBAGE) + 1}
    ]
    # w1 px: 1 2 3 5 6 6 7 10 11 4 -> gaps before 5 (1 missing) and 10 (2);
    # duplicates: the second 6, and 4.  w1 qty starts at 2 after its
    # Handshake: 1 missing.  w3 px: 1 3 3 -> a gap of 1 and a duplicate.
    names = ("worker", "output", "deltas", "gaps", "missing", "duplicates", "last_sequence_no")
    assert r["sequences"] == [
        dict(zip(names, ("w1", "px", 10, 2, 3, 2, 11), strict=True)),
        dict(zip(names, ("w1", "qty", 3, 1, 1, 0, 4), strict=True)),
        dict(zip(names, ("w2", "px", 4, 0, 0, 0, 4), strict=True)),
        dict(zip(names, ("w3", "px", 3, 1, 1, 1, 3), strict=True)),
    ]
    assert r["gaps"] == [
        {"worker": "w1", "output": "px", "time_ns": at("0.5"), "sequence_no": 5, "last": 3, "missing": 1},
        {"worker": "w1", "output": "px", "time_ns": at("0.9"), "sequence_no": 10, "last": 7, "missing": 2},
        {"worker": "w1", "output": "qty", "time_ns": at("1.3"), "sequence_no": 2, "last": None, "missing": 1},
        {"worker": "w3", "output": "px", "time_ns": at("20.3"), "sequence_no": 3, "last": 1, "missing": 1},
    ]

    # Lags (ms), the Delta without a watermark left out:
    #   px:  5 10 .. 50 (w1), 1 2 3 4 (w2), 7 9 (w3)  -> 16 values
    #   qty: 100 200 300
    # Nearest rank: p50 of all 19 is the 10th smallest (20), p90 the 18th
    # (200), p99 the 19th; of px's 16: the 8th (10), 15th (45), 16th (50).
    def lags(deltas: int, lo: int, hi: int, p50: int, p90: int, p99: int) -> dict[str, int]:
        return {"deltas": deltas, "min": lo * MS, "max": hi * MS, "p50": p50 * MS, "p90": p90 * MS, "p99": p99 * MS}

    assert r["watermark_lag"] == {
        "all": lags(19, 1, 300, 20, 200, 300),
        "outputs": [
            {"output": "px"} | lags(16, 1, 50, 10, 45, 50),
            {"output": "qty"} | lags(3, 100, 300, 200, 300, 300),
        ],
    }
    # w1 beats at 0.1 1.2 2.0 15.0 16.0: intervals 1.1 0.8 13 1 (median: the
    # 2nd smallest of 4); w2 at 3.1 8.1 13.1; w3 at 20.5 32.5 (20.2 is broken).
    assert r["heartbeats"] == [
        {"worker": "w1", "heartbeats": 5, "min": 800 * MS, "median": 1 * S, "max": 13 * S, "silences": 1},
        {"worker": "w2", "heartbeats": 3, "min": 5 * S, "median": 5 * S, "max": 5 * S, "silences": 0},
        {"worker": "w3", "heartbeats": 2, "min": 12 * S, "median": 12 * S, "max": 12 * S, "silences": 1},
    ]
    assert r["silences"] == [
        {"worker": "w1", "start_ns": at("2.0"), "length_ns": 13 * S},
        {"worker": "w3", "start_ns": at("20.5"), "length_ns": 12 * S},
    ]
    assert r["top_keys"] == [
        {"output": "px", "key": "AAPL", "updates": 9},  # 5 on w1, 4 on w2
        {"output": "px", "key": "IBM", "updates": 5},  # 2 on w1, 3 on w3
        {"output": "px", "key": "MSFT", "updates": 3},
        {"output": "qty", "key": "1", "updates": 2},
        {"output": "qty", "key": "2", "updates": 1},
    ]


def png_size(path: Path) -> tuple[int, int]:
    """A PNG's width and height, from its signature and IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG"
    assert head[12:16] == b"IHDR"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_stats_plot_writes_three_pngs_and_svgs(by_type: tuple[Report, Path]) -> None:
    directory = by_type[1]
    assert sorted(p.name for p in directory.iterdir()) == [
        "gaps.png",
        "gaps.svg",
        "rate.png",
        "rate.svg",
        "watermark_lag.png",
        "watermark_lag.svg",
    ]
    for name in ("rate.png", "watermark_lag.png", "gaps.png"):
        assert png_size(directory / name) == (1000, 450), name  # 10 x 4.5 inches at 100 dpi


def test_stats_by_connection_output_and_key(inputs: StatsInputs, by_type: tuple[Report, Path]) -> None:
    pcap, raw = inputs.pcap, inputs.raw
    by_conn = stats_json(inputs, "--by", "connection")
    assert by_conn["by"] == "connection"
    # Community IDs (seed 0) of 10.1.0.1:41001 and :41002 <-> 10.1.0.2:7400; a raw stream has none.
    assert by_conn["groups"] == [
        {
            "name": f"{pcap} 1:c2s",
            "community_id": "1:QnEWr3qfroI2soq1XiBDsN/9pUs=",
            "messages": 19,
            "bytes": _bytes(inputs, stream=f"{pcap} 1:c2s"),
            "first_ns": T0,
            "last_ns": at("16.0"),
            "rate": rate(19, T0, at("16.0")),
        },
        {
            "name": f"{pcap} 2:c2s",
            "community_id": "1:HFeE3MB6vxxUGVkcu4mNLne++3c=",
            "messages": 8,
            "bytes": _bytes(inputs, stream=f"{pcap} 2:c2s"),
            "first_ns": at("3.0"),
            "last_ns": at("13.1"),
            "rate": rate(8, at("3.0"), at("13.1")),
        },
        {
            "name": str(raw),
            "community_id": None,
            "messages": 6,
            "bytes": _bytes(inputs, stream=str(raw)),
            "first_ns": at("20.0"),
            "last_ns": at("32.5"),
            "rate": rate(6, at("20.0"), at("32.5")),
        },
        {
            "name": f"{pcap} 1:s2c",
            "community_id": "1:QnEWr3qfroI2soq1XiBDsN/9pUs=",
            "messages": 1,
            "bytes": 65,
            "first_ns": at("0.05"),
            "last_ns": at("0.05"),
            "rate": None,
        },
    ]
    # The other figures do not depend on --by.
    for part in ("overview", "problems", "sequences", "gaps", "watermark_lag", "heartbeats", "silences", "top_keys"):
        assert by_conn[part] == by_type[0][part], part

    by_output = stats_json(inputs, "--by", "output", "--silence", "4.5")
    assert by_output["groups"] == [
        {
            "name": "px",
            "messages": 17,
            "bytes": _bytes(inputs, output="px"),
            "first_ns": at("0.2"),
            "last_ns": at("20.4"),
            "rate": rate(17, at("0.2"), at("20.4")),
        },
        {
            "name": "qty",
            "messages": 3,
            "bytes": _bytes(inputs, output="qty"),
            "first_ns": at("1.3"),
            "last_ns": at("1.5"),
            "rate": rate(3, at("1.3"), at("1.5")),
        },
    ]
    # Over 4.5 s: w1's 13 s, w2's two 5 s intervals, w3's 12 s.
    assert by_output["silence_ns"] == 4_500 * MS
    assert [(h["worker"], h["silences"]) for h in by_output["heartbeats"]] == [("w1", 1), ("w2", 2), ("w3", 1)]
    assert by_output["silences"] == [
        {"worker": "w1", "start_ns": at("2.0"), "length_ns": 13 * S},
        {"worker": "w2", "start_ns": at("3.1"), "length_ns": 5 * S},
        {"worker": "w2", "start_ns": at("8.1"), "length_ns": 5 * S},
        {"worker": "w3", "start_ns": at("20.5"), "length_ns": 12 * S},
    ]

    by_key = stats_json(inputs, "--by", "key", "--top", "3")
    assert [(g["name"], g["messages"]) for g in by_key["groups"]] == [("px AAPL", 9), ("px IBM", 5), ("px MSFT", 3)]
    assert by_key["groups"][0]["first_ns"] == at("0.2")
    assert by_key["groups"][0]["last_ns"] == at("3.5")
    assert by_key["top_keys"] == by_type[0]["top_keys"][:3]


def test_stats_of_no_message_says_so(tmp_path: Path) -> None:
    """Counts in words (one file, one error) and, with no message, no
    empty times or rate but the words for it."""
    bad = tmp_path / "bad.ripple"
    bad.write_bytes(b"xx")
    res = run_cli(["stats", "-q", str(bad)], width=250)
    assert res.code == 0, res.stderr
    assert (
        res.text.splitlines()[0] == "1 file, 1 Ripple stream: 0 messages, 0 bytes, 1 error, 0 warnings; no event times"
    )


def test_stats_table_prints_the_same_figures(spark: object, inputs: StatsInputs) -> None:
    res = run_cli(["stats", "-q", str(inputs.directory)], width=250)
    assert res.code == 0, res.stderr
    lines = [" ".join(line.replace("│", " ").split()) for line in res.text.splitlines()]
    assert lines[0] == (
        "2 files, 4 Ripple streams: 34 messages, 2,981 bytes, 1 error, 0 warnings; "
        "2024-06-20T16:13:20.000000000Z to 2024-06-20T16:13:52.500000000Z; rate 1.0 msgs/s, peak 11 in one second"
    )
    for row in (
        "Delta 20 1,816 1.0 2024-06-20T16:13:20.200000000Z 2024-06-20T16:13:40.400000000Z",
        "Schema_negotiation 1 65 2024-06-20T16:13:20.050000000Z 2024-06-20T16:13:20.050000000Z",
        "crc_mismatch error 1 96",
        "w1 px 10 2 3 2 11",
        "w3 px 3 1 1 1 3",
        "(all) 19 20.000ms 200.000ms 300.000ms 300.000ms",
        "qty 3 200.000ms 300.000ms 300.000ms 300.000ms",
        "w1 5 800.000ms 1.000s 13.000s 1",
        "w3 2024-06-20T16:13:40.500000000Z 12.000s",
        "px AAPL 9",
        "qty 2 1",
    ):
        assert row in lines, row


# The sibling captures' messages by type, as `ripple decode` lists them.
SIBLINGS = [
    ("lumberjack", "Ack", 2, 12),
    ("lumberjack", "Data", 2, 172),
    ("lumberjack", "Json", 3, 287),
    ("lumberjack", "Window", 2, 12),
    ("pravega", "AppendBlock", 2, 217),
    ("pravega", "AppendBlockEnd", 2, 104),
    ("pravega", "AppendSetup", 1, 68),
    ("pravega", "DataAppended", 2, 112),
    ("pravega", "Hello", 2, 32),
    ("pravega", "ReadSegment", 1, 58),
    ("pravega", "SegmentRead", 1, 227),
    ("pravega", "SetupAppend", 1, 62),
    ("rcp", "Event", 1, 210),
    ("rcp", "Request", 7, 998),
    ("rcp", "Response", 7, 1062),
]


def test_stats_counts_the_sibling_protocols(spark: object) -> None:
    """The sibling protocols' messages per protocol and type, the same on
    Spark and in-process, each type's count as decode's; Ripple's figures
    are those of its own capture alone."""
    from tests.batch.test_without_spark import ripple_without

    captures = [str(ROOT / "examples" / f"{name}.pcap") for name in ("beats", "pravega", "rstmdb", "workers")]
    res = run_cli(["stats", "-q", "-F", "json", *captures])
    assert res.code == 0, res.stderr
    report = json.loads(res.stdout)
    assert [tuple(r.values()) for r in report["siblings"]] == SIBLINGS
    assert list(report["siblings"][0]) == ["protocol", "type", "messages", "bytes"]
    # decode's messages of the three sibling captures, counted and summed by type.
    decoded: dict[tuple[str, str], list[int]] = {}
    for capture in captures[:3]:
        lines = run_cli(["decode", "-F", "jsonl", capture]).text.splitlines()
        for msg in map(json.loads, lines):
            c = decoded.setdefault((msg["protocol"], msg["type"]), [0, 0])
            c[0] += 1
            c[1] += msg["size"]
    assert sorted((p, t, n, b) for (p, t), (n, b) in decoded.items()) == SIBLINGS
    alone = json.loads(run_cli(["stats", "-q", "-F", "json", captures[3]]).stdout)
    # The Ripple figures are the Ripple capture's; the files are every input.
    assert (report["overview"]["files"], alone["overview"]["files"]) == (4, 1)
    for r in (report, alone):
        del r["overview"]["files"]
    assert {k: v for k, v in report.items() if k != "siblings"} == {k: v for k, v in alone.items() if k != "siblings"}
    report["overview"]["files"] = 4
    done = ripple_without(("pyspark",), "stats", "-q", "-F", "json", *captures)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == report
    table = run_cli(["stats", "-q", *captures], width=200)
    lines = [" ".join(line.replace("│", " ").split()) for line in table.text.splitlines()]
    assert "lumberjack Json 3 287" in lines and "rcp Response 7 1,062" in lines


@pytest.mark.parametrize(("first", "then"), [(0, 1), (-5, 1), (-5, 2)])
def test_a_first_sequence_no_below_1_is_a_duplicate_in_verify_and_stats(first: int, then: int, tmp_path: Path) -> None:
    """After a Handshake none applied counts as a last of 0: a first
    sequence_no at or below it is a duplicate, not applied (verify said
    "-1 missing"; stats counted a gap of 5 where verify saw 2)."""
    from ripple_cli.codec.messages import DeltaMsg
    from tests.unit.test_framing import KEY, PATCH, env, handshake

    data = (
        handshake(1)
        + env(DeltaMsg(b"vwap", KEY, PATCH, first, None), 2)
        + env(DeltaMsg(b"vwap", KEY, PATCH, then, None), 3)
    )
    v = run_cli(["verify", "-F", "json", "-"], stdin=data)
    problems = json.loads(v.stdout)["streams"][0]["problems"]
    assert [p["kind"] for p in problems] == ["delta_duplicate"] + (["delta_gap"] if then == 2 else [])
    assert problems[0]["detail"] == f"(worker-1, vwap) sequence_no {first} at or below the last applied 0 (duplicate)"
    path = tmp_path / "s.ripple"
    path.write_bytes(data)
    s = run_cli(["stats", "-q", "-F", "json", str(path)])
    (row,) = json.loads(s.stdout)["sequences"]
    assert (row["duplicates"], row["gaps"], row["missing"]) == (1, then - 1, then - 1)
