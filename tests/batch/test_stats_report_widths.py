"""`ripple stats`'s tables at 60, 80, 120 and 200 columns and in a pipe,
from a report record (no Spark): golden files under tests/golden/tables/."""

from __future__ import annotations

import io

import pytest

from ripple_cli.batch.report import print_report
from ripple_cli.render.columns import make_console
from ripple_cli.terminal.environment import Environment
from tests.cli.test_table_widths import WIDTHS, table_golden

NS = 10**9
T = 1718900000 * NS
REPORT = {
    "overview": {
        "files": 2,
        "streams": 3,
        "messages": 1200,
        "bytes": 149488,
        "errors": 1,
        "warnings": 0,
        "first_ns": T,
        "last_ns": T + 5 * NS,
        "rate": 240.0,
        "peak_per_second": 300,
    },
    "by": "file",
    "groups": [
        {
            "name": "captures/workers-2024-06-20.pcap",
            "messages": 900,
            "bytes": 112000,
            "rate": 180.0,
            "first_ns": T,
            "last_ns": T + 5 * NS,
        },
        {"name": "demo.ripple", "messages": 300, "bytes": 37488, "rate": 60.0, "first_ns": T, "last_ns": T + 4 * NS},
    ],
    "problems": [{"kind": "crc_mismatch", "severity": "error", "count": 1, "skipped": 98}],
    "sequences": [
        {
            "worker": "md-worker-07",
            "output": "positions",
            "deltas": 120,
            "gaps": 2,
            "missing": 3,
            "duplicates": 1,
            "last_sequence_no": 123456,
        }
    ],
    "watermark_lag": {
        "all": {"deltas": 292, "p50": 12 * 10**6, "p90": 40 * 10**6, "p99": 2 * NS, "max": 90 * NS},
        "outputs": [
            {"output": "trades", "deltas": 100, "p50": 10**6, "p90": 2 * 10**6, "p99": 3 * 10**6, "max": 4 * 10**6}
        ],
    },
    "silence_ns": 5 * NS,
    "heartbeats": [
        {"worker": "md-worker-07", "heartbeats": 40, "min": NS, "median": 2 * NS, "max": 9 * NS, "silences": 1}
    ],
    "silences": [{"worker": "md-worker-07", "start_ns": T + NS, "length_ns": 9 * NS}],
    "top_keys": [{"output": "positions", "key": "((symbol MSFT)(venue IEXG))", "updates": 40}],
}


def render(width: int | None, report: dict[str, object] = REPORT) -> str:
    out = io.BytesIO()
    env = Environment(
        stdin=io.BytesIO(),
        stdout=out,
        stderr=io.StringIO(),
        stdout_isatty=width is not None,
        stderr_isatty=False,
        environ={"NO_COLOR": "1"},
        width=width or 60,
    )
    console, stream = make_console(env)
    print_report(env, console, report)
    stream.flush()
    stream.detach()
    return out.getvalue().decode()


@pytest.mark.parametrize("width", [*WIDTHS, None])
def test_stats_tables(width: int | None) -> None:
    text = render(width)
    table_golden("stats", text, width)
    # What each row is about, and every count, at every width.
    for row in ("md-worker-07", "123,456", "112,000", "crc_mismatch"):
        assert row in text


BY_CONNECTION = {
    **REPORT,
    "by": "connection",
    "groups": [
        {
            "name": "captures/workers-2024-06-20.pcap 1:c2s",
            "community_id": "1:QnEWr3qfroI2soq1XiBDsN/9pUs=",
            "messages": 900,
            "bytes": 112000,
            "rate": 180.0,
            "first_ns": T,
            "last_ns": T + 5 * NS,
        },
        {
            "name": "demo.ripple",
            "community_id": None,
            "messages": 300,
            "bytes": 37488,
            "rate": 60.0,
            "first_ns": T,
            "last_ns": T + 4 * NS,
        },
    ],
}


def test_stats_by_connection_shows_community_ids_in_room_to_spare() -> None:
    """--by connection: each stream's Community ID (none for a raw stream),
    in a pipe and on a wide line; on a narrow one it goes first."""
    for width in (None, 200):
        lines = render(width, BY_CONNECTION).splitlines()
        header = next(x for x in lines if x.split()[:3] == ["file", "connection", "community_id"])
        assert header
        row = next(x for x in lines if x.startswith("captures/workers"))
        assert row.split()[1:4] == ["1:c2s", "1:QnEWr3qfroI2soq1XiBDsN/9pUs=", "900"]
        assert next(x for x in lines if x.startswith("demo.ripple")).split()[1] == "300"
    narrow = render(80, BY_CONNECTION)
    assert "community_id" not in narrow and "1:QnEW" not in narrow
    assert "captures/workers" in narrow and "demo.ripple" in narrow


def test_stats_by_connection_keeps_the_connections_apart_on_a_narrow_line() -> None:
    """A long path is cut, never the N:c2s that tells the rows apart."""
    path = "captures/2024/06/20/site-a/rack-7/workers-2024-06-20T16.pcap"
    groups = [
        {**BY_CONNECTION["groups"][0], "name": f"{path} {conn}"}  # type: ignore[index]
        for conn in ("1:c2s", "1:s2c", "12:c2s", "12:s2c")
    ]
    for width in (60, 80, 100):
        lines = render(width, {**BY_CONNECTION, "groups": groups}).splitlines()
        rows = [x for x in lines if x.startswith("captures/")]
        assert [r.split()[1] for r in rows] == ["1:c2s", "1:s2c", "12:c2s", "12:s2c"], (width, rows)
        assert all(len(r) <= width for r in rows)
