"""`ripple stats` as rich tables (the report of stats.assemble)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.text import Text

from ripple_cli.codec.jsonview import iso_time
from ripple_cli.render.columns import Column, Trimmed, fitted_table
from ripple_cli.terminal.environment import Environment
from ripple_cli.terminal.words import plural

from .stats import NS, Record


def _ns(v: int | None) -> str:
    return "" if v is None else iso_time(v)


def _dur(ns: int | float | None) -> str:
    if ns is None:
        return ""
    s = ns / NS
    if abs(s) >= 86400:
        return f"{s / 86400:.1f}d"
    if abs(s) >= 60:
        return f"{s:,.0f}s"
    if abs(s) >= 1:
        return f"{s:.3f}s"
    return f"{ns / 1e6:.3f}ms"


def _num(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:,.1f}"
    return f"{v:,}"


# The columns of every table: text shrinks, times go first, numbers stay.
_TIMES = ("first", "last", "start")
_TEXT = ("worker", "output", "key", "kind", "type")


def _column(i: int, h: str) -> Column:
    if h in _TIMES:
        return Column(h, priority=1 if h == "last" else 2)
    if h == "connection":  # N:c2s, short: never cut
        return Column(h, keep=True)
    if i == 0:  # what the row is about
        return Column(h, keep=True, shrink=True, min_width=10)
    if h in _TEXT:
        return Column(h, priority=9 - i, shrink=True, min_width=10)
    if h == "community_id":  # the first to go on a narrow line
        return Column(h, extra=True)
    if h == "severity":
        return Column(h, priority=3)
    return Column(h, keep=True, justify="right")


# A stream's name by connection (batch/stats.py STREAM): its file, then N:c2s
# or N:s2c for a capture's connections; a raw stream's is its file alone.
_CONNECTION = re.compile(r"(.*) (\d+:(?:c2s|s2c))", re.DOTALL)


def _file_and_connection(name: str) -> tuple[str, str]:
    m = _CONNECTION.fullmatch(name)
    return (m[1], m[2]) if m else (name, "")


def _table(
    env: Environment, console: Console, title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]
) -> None:
    columns = [_column(i, h) for i, h in enumerate(headers)]
    empty = ["(none)", *[""] * (len(headers) - 1)]
    # The title on a line of its own: as a rich table's, it wrapped to the
    # table's width ("watermark lag (capture time minus" / "watermark)").
    console.print(Trimmed(Text(title)), crop=False)
    console.print(Trimmed(fitted_table(env, columns, rows, empty=empty)), crop=False)
    console.print()


def print_report(env: Environment, console: Console, report: Record) -> None:
    ov = report["overview"]
    counts = ", ".join(
        plural(ov[k], word, grouped=True)
        for k, word in (("messages", "message"), ("bytes", "byte"), ("errors", "error"))
    )
    streams = plural(ov["streams"], "Ripple stream", grouped=True)  # the siblings have their own table
    overview = (
        f"{plural(ov['files'], 'file', grouped=True)}, {streams}: {counts}, "
        f"{plural(ov['warnings'], 'warning', grouped=True)}; "
    )
    if ov["first_ns"] is None:
        overview += "no event times"  # no message, or none that carries a time
    else:
        overview += (
            f"{_ns(ov['first_ns'])} to {_ns(ov['last_ns'])}; "
            f"rate {_num(ov['rate'])} msgs/s, peak {ov['peak_per_second']:,} in one second"
        )
    console.print(Trimmed(Text(overview)), crop=False)
    console.print()
    by_conn = report["by"] == "connection"  # with each stream's Community ID
    # By connection, the file and the connection in columns of their own, so
    # that a long path cut on a narrow line leaves the rows told apart.
    heads = ("file", "connection", "community_id") if by_conn else (report["by"],)
    _table(
        env,
        console,
        f"by {report['by']}",
        (*heads, "messages", "bytes", "msgs/s", "first", "last"),
        [
            (
                *(_file_and_connection(str(g["name"])) if by_conn else (str(g["name"]),)),
                *((g["community_id"] or "",) if by_conn else ()),
                _num(g["messages"]),
                _num(g["bytes"]),
                _num(g["rate"]),
                _ns(g["first_ns"]),
                _ns(g["last_ns"]),
            )
            for g in report["groups"]
        ],
    )
    _table(
        env,
        console,
        "problems",
        ("kind", "severity", "count", "bytes skipped"),
        [(p["kind"], p["severity"], _num(p["count"]), _num(p["skipped"])) for p in report["problems"]],
    )
    _table(
        env,
        console,
        "Delta sequences per (worker, output)",
        ("worker", "output", "deltas", "gaps", "missing", "duplicates", "last sequence_no"),
        [
            (
                s["worker"],
                s["output"],
                _num(s["deltas"]),
                _num(s["gaps"]),
                _num(s["missing"]),
                _num(s["duplicates"]),
                _num(s["last_sequence_no"]),
            )
            for s in report["sequences"]
        ],
    )
    lag = report["watermark_lag"]
    lag_rows = [] if lag["all"] is None else [("(all)", lag["all"])]
    lag_rows += [(r["output"], r) for r in lag["outputs"]]
    _table(
        env,
        console,
        "watermark lag (capture time minus watermark)",
        ("output", "deltas", "p50", "p90", "p99", "max"),
        [
            (name, _num(r["deltas"]), _dur(r["p50"]), _dur(r["p90"]), _dur(r["p99"]), _dur(r["max"]))
            for name, r in lag_rows
        ],
    )
    _table(
        env,
        console,
        f"heartbeats (silence: an interval over {_dur(report['silence_ns'])})",
        ("worker", "heartbeats", "min interval", "median", "max", "silences"),
        [
            (h["worker"], _num(h["heartbeats"]), _dur(h["min"]), _dur(h["median"]), _dur(h["max"]), _num(h["silences"]))
            for h in report["heartbeats"]
        ],
    )
    if report["silences"]:
        _table(
            env,
            console,
            "silences",
            ("worker", "start", "length"),
            [(s["worker"], _ns(s["start_ns"]), _dur(s["length_ns"])) for s in report["silences"][:50]],
        )
    _table(
        env,
        console,
        "top keys by updates",
        ("output", "key", "updates"),
        [(k["output"], k["key"], _num(k["updates"])) for k in report["top_keys"]],
    )
    if report.get("siblings"):
        _table(
            env,
            console,
            "sibling protocols (messages by protocol and type)",
            ("protocol", "type", "messages", "bytes"),
            [(r["protocol"], r["type"], _num(r["messages"]), _num(r["bytes"])) for r in report["siblings"]],
        )
