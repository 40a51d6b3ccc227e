"""`stats` without Spark: the queries of stats.py, run by SQLite (the
standard library's) over the rows of the in-process decode.  The few Spark
SQL functions SQLite lacks are defined here with Spark's meaning."""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Iterable
from typing import Any

from .rows import COLUMN_NAMES, Row
from .stats import STATS_COLUMNS, Record, StatsOptions, Timelines, report_and_timelines


class _CountIf:
    def __init__(self) -> None:
        self.n = 0

    def step(self, value: object) -> None:
        if value:
            self.n += 1

    def finalize(self) -> int:
        return self.n


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


class _Percentile:
    """percentile_approx, exact (as Spark's is below its accuracy's count
    of values): nearest rank, the smallest value that at least that share
    of the values do not exceed.  An array of percentiles gives JSON text."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self.ps: Any = None

    def step(self, value: object, ps: object, _accuracy: object) -> None:
        self.ps = ps
        if value is not None:
            self.values.append(value)

    def finalize(self) -> object:
        if not self.values:
            return None
        values = sorted(self.values)

        def at(p: float) -> Any:
            v = values[max(0, math.ceil(p * len(values)) - 1)]
            # Spark keeps the values as doubles: beyond 2**53 an integer
            # comes back rounded to one, as here, and the double's toLong
            # clamps to the int64 range (2**63 - 512 rounds up to 2**63).
            return min(max(int(float(v)), _INT64_MIN), _INT64_MAX) if isinstance(v, int) else v

        if isinstance(self.ps, str):
            return json.dumps([at(p) for p in json.loads(self.ps)])
        return at(float(self.ps))


def _concat(*parts: object) -> str | None:
    return None if any(p is None for p in parts) else "".join(str(p) for p in parts)


def _sqlite(query: str) -> str:
    return re.sub(r"\bdiv\b", "/", query).replace("AS STRING)", "AS TEXT)")


def connect(rows: Iterable[Row]) -> sqlite3.Connection:
    con = sqlite3.connect(":memory:")
    con.row_factory = sqlite3.Row
    con.create_aggregate("count_if", 1, _CountIf)
    con.create_aggregate("percentile_approx", 3, _Percentile)  # type: ignore[arg-type]
    con.create_function("array", -1, lambda *a: json.dumps(list(a)), deterministic=True)
    con.create_function("concat", -1, _concat, deterministic=True)
    # No declared types: values are stored as they are (no affinity).
    con.execute(f"CREATE TABLE rows ({', '.join(f'`{c}`' for c in STATS_COLUMNS)})")
    index = [COLUMN_NAMES.index(c) for c in STATS_COLUMNS]
    marks = ", ".join("?" * len(index))
    con.executemany(f"INSERT INTO rows VALUES ({marks})", ([row[i] for i in index] for row in rows))
    return con


def run_stats_local(rows: Iterable[Row], opts: StatsOptions, plots: bool) -> tuple[Record, Timelines | None]:
    """What job.run_stats gives, without Spark."""
    con = connect(rows)
    try:

        def run(qs: dict[str, str]) -> dict[str, list[Record]]:
            out: dict[str, list[Record]] = {}
            for name, q in qs.items():
                records = [dict(r) for r in con.execute(_sqlite(q))]
                for r in records:
                    if isinstance(r.get("p"), str):
                        r["p"] = json.loads(r["p"])
                out[name] = records
            return out

        return report_and_timelines(run, opts, plots)
    finally:
        con.close()
