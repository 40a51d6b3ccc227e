"""`ripple stats`: the figures, as Spark SQL over the rows (a view named
`rows`, the columns of rows.py), and their assembly into one report.

Pure: the queries are text, the report is built from the rows they
return (plain dicts), so that what is computed can be read here in one
place; job.py runs them.  Definitions (also in ripple-stats(1)):

- messages and bytes: whole envelopes (header, payload and CRC); problems
  are counted apart, by kind, with the bytes they skipped.
- rate: messages per second of envelope time, first to last message;
  peak: the most messages in one second of envelope time.
- sequence gaps and duplicates, per (worker, output) within each stream
  direction, in stream order, as `verify` counts them: a Delta whose
  sequence_no is above the last applied + 1 is a gap of the numbers in
  between (the first Delta of an output after a Handshake should be 1); one
  at or below the last applied is a duplicate.  A stream's worker is the one
  its last Handshake named ("?" before any).
- watermark lag: capture time (envelope time for a raw stream) minus the
  Delta's watermark_ns, over Deltas that carry one.  Percentiles are
  nearest-rank: the smallest lag that at least that share of lags do not
  exceed (Spark's percentile_approx, exact below a million values per group).
- heartbeat intervals: between consecutive Heartbeats of a worker, by
  envelope time; a silence is an interval longer than --silence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Record = dict[str, Any]

NS = 1_000_000_000
ACCURACY = 1_000_000  # percentile_approx: exact while a group has fewer values
PERCENTILES = (0.5, 0.9, 0.99)
MAX_EVENTS = 10_000  # gaps and silences listed (and plotted) at most

MSG = "problem IS NULL"
DELTA = "problem IS NULL AND type = 'Delta'"
STREAM = (
    "CASE WHEN connection IS NULL THEN capture_file "
    "ELSE concat(capture_file, ' ', CAST(connection AS STRING), ':', direction) END"
)
BY_CHOICES = ("type", "connection", "output", "key")
_GROUP = {
    "type": ("type", MSG),
    "connection": (STREAM, MSG),
    "output": ("source_output", DELTA),
    "key": ("concat(source_output, ' ', key)", DELTA),
}
STATS_COLUMNS = (
    "capture_file",
    "connection",
    "direction",
    "community_id",
    "offset",
    "capture_time_ns",
    "time_ns",
    "type",
    "size",
    "problem",
    "severity",
    "skipped",
    "worker",
    "source_output",
    "key",
    "sequence_no",
    "watermark_ns",
)


@dataclass(frozen=True)
class StatsOptions:
    by: str = "type"
    top: int = 10
    silence_ns: int = 10 * NS


def _pcts(expr: str) -> str:
    return f"percentile_approx({expr}, array({', '.join(map(str, PERCENTILES))}), {ACCURACY})"


def queries(opts: StatsOptions) -> dict[str, str]:
    """The queries that need nothing but the options."""
    label, where = _GROUP[opts.by]
    # By connection, each stream direction's Community ID (null: a raw stream).
    cid = ", max(community_id) AS community_id" if opts.by == "connection" else ""
    limit = f"LIMIT {opts.top}" if opts.by == "key" else ""
    seq = f"""
        WITH d AS (
          SELECT coalesce(worker, '?') AS worker, source_output AS output, worker IS NOT NULL AS known,
                 sequence_no AS n, time_ns, `offset`,
                 max(sequence_no) OVER (
                   PARTITION BY {STREAM}, worker, source_output ORDER BY `offset`
                   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS last
          FROM rows WHERE {DELTA}),
        -- Once the worker is known (its Handshake), none applied counts as a last of 0, as verify has it.
        d1 AS (
          SELECT *, CASE WHEN known AND (last IS NULL OR last < 0) THEN 0 ELSE last END AS applied
          FROM d),
        e AS (
          SELECT *,
                 CASE WHEN applied IS NULL THEN 0 WHEN n > applied + 1 THEN n - applied - 1 ELSE 0 END AS missing,
                 applied IS NOT NULL AND n <= applied AS dup
          FROM d1)
    """
    hb = f"""
        WITH h0 AS (
          SELECT worker, time_ns, lag(time_ns) OVER (PARTITION BY worker ORDER BY time_ns, `offset`) AS prev
          FROM rows WHERE {MSG} AND type = 'Heartbeat' AND worker IS NOT NULL),
        h AS (SELECT worker, time_ns, prev, {difference("time_ns", "prev")} AS gap FROM h0)
    """
    lag = (
        f"SELECT source_output, {difference('coalesce(capture_time_ns, time_ns)', 'watermark_ns')} AS lag "
        f"FROM rows WHERE {DELTA} AND watermark_ns IS NOT NULL"
    )
    return {
        "overview": f"""
            SELECT coalesce(count_if({MSG}), 0) AS messages,
                   coalesce(sum(CASE WHEN {MSG} THEN size END), 0) AS bytes,
                   coalesce(count_if(problem IS NOT NULL AND severity = 'error'), 0) AS errors,
                   coalesce(count_if(problem IS NOT NULL AND severity = 'warning'), 0) AS warnings,
                   min(CASE WHEN {MSG} THEN time_ns END) AS first_ns,
                   max(CASE WHEN {MSG} THEN time_ns END) AS last_ns,
                   count(DISTINCT capture_file) AS files,
                   count(DISTINCT {STREAM}) AS streams
            FROM rows""",
        "peak": f"""
            SELECT coalesce(max(c), 0) AS peak FROM (
              SELECT count(*) AS c FROM rows WHERE {MSG} GROUP BY time_ns div {NS})""",
        "groups": f"""
            SELECT {label} AS name{cid}, count(*) AS messages, sum(size) AS bytes,
                   min(time_ns) AS first_ns, max(time_ns) AS last_ns
            FROM rows WHERE {where} GROUP BY 1 ORDER BY messages DESC, name {limit}""",
        "problems": """
            SELECT problem AS kind, severity, count(*) AS count, coalesce(sum(skipped), 0) AS skipped
            FROM rows WHERE problem IS NOT NULL GROUP BY 1, 2 ORDER BY count DESC, kind""",
        "sequences": seq
        + """
            SELECT worker, output, count(*) AS deltas, count_if(missing > 0) AS gaps,
                   coalesce(sum(missing), 0) AS missing, count_if(dup) AS duplicates, max(n) AS last_sequence_no
            FROM e GROUP BY worker, output ORDER BY worker, output""",
        "gaps": seq
        + f"""
            SELECT worker, output, time_ns, n AS sequence_no, last, missing FROM e WHERE missing > 0
            ORDER BY time_ns, worker, output LIMIT {MAX_EVENTS}""",
        "lag": f"""
            SELECT count(*) AS deltas, {_pcts("lag")} AS p, min(lag) AS min, max(lag) AS max FROM ({lag})""",
        "lag_outputs": f"""
            SELECT source_output AS output, count(*) AS deltas, {_pcts("lag")} AS p, min(lag) AS min, max(lag) AS max
            FROM ({lag}) GROUP BY source_output ORDER BY output""",
        "heartbeats": hb
        + f"""
            SELECT worker, count(*) AS heartbeats, min(gap) AS min, percentile_approx(gap, 0.5, {ACCURACY}) AS median,
                   max(gap) AS max, count_if(gap > {opts.silence_ns}) AS silences
            FROM h GROUP BY worker ORDER BY worker""",
        "silences": hb
        + f"""
            SELECT worker, prev AS start_ns, gap AS length_ns FROM h WHERE gap > {opts.silence_ns}
            ORDER BY start_ns, worker LIMIT {MAX_EVENTS}""",
        "top_keys": f"""
            SELECT source_output AS output, key, count(*) AS updates FROM rows WHERE {DELTA}
            GROUP BY 1, 2 ORDER BY updates DESC, output, key LIMIT {opts.top}""",
    }


def bucket_ns(first_ns: int | None, last_ns: int | None, buckets: int = 200) -> int:
    """A round bucket width giving about `buckets` points over the span."""
    if first_ns is None or last_ns is None or last_ns <= first_ns:
        return NS
    want = (last_ns - first_ns) // buckets
    for step in (1, 2, 5, 10, 30, 60, 300, 600, 1800, 3600, 21600, 86400):
        if step * NS >= want:
            return step * NS
    return 86400 * NS


@dataclass(frozen=True)
class Timelines:
    """What the plots draw (`--plot`): not part of the report, so that the
    JSON is the same with or without charts."""

    bucket_ns: int
    rate: list[Record]  # stream, t, messages
    lag: list[Record]  # output, t, max_lag, mean_lag


def difference(a: str, b: str) -> str:
    """`a - b` in SQL, null where it would not fit 64 bits (a watermark or
    a time from adversarial input): Spark's ANSI mode stops the whole job
    on an overflow and SQLite turns it into a float, so that neither would
    give the other's figures.  Each branch only computes what fits."""
    top, bottom = "9223372036854775807", "(-9223372036854775807 - 1)"
    return (
        f"(CASE WHEN {a} >= 0 AND {b} < 0 THEN (CASE WHEN {a} > {top} + {b} THEN NULL ELSE {a} - {b} END) "
        f"WHEN {a} < 0 AND {b} > 0 THEN (CASE WHEN {a} < {bottom} + {b} THEN NULL ELSE {a} - {b} END) "
        f"ELSE {a} - {b} END)"
    )


def timeline_queries(bucket: int) -> dict[str, str]:
    """What the plots draw, per time bucket of envelope time."""
    return {
        "rate": f"""
            SELECT {STREAM} AS stream, (time_ns div {bucket}) * {bucket} AS t, count(*) AS messages
            FROM rows WHERE {MSG} GROUP BY 1, 2 ORDER BY 1, 2""",
        "lag_timeline": f"""
            SELECT source_output AS output, (time_ns div {bucket}) * {bucket} AS t,
                   max({difference("coalesce(capture_time_ns, time_ns)", "watermark_ns")}) AS max_lag,
                   avg({difference("coalesce(capture_time_ns, time_ns)", "watermark_ns")}) AS mean_lag
            FROM rows WHERE {DELTA} AND watermark_ns IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2""",
    }


def _rate(messages: int, first_ns: int | None, last_ns: int | None) -> float | None:
    if first_ns is None or last_ns is None or last_ns <= first_ns:
        return None
    return messages * NS / (last_ns - first_ns)


def _pct(p: list[int] | None) -> dict[str, int | None]:
    values = list(p) if p else [None] * len(PERCENTILES)
    return {f"p{round(q * 100)}": v for q, v in zip(PERCENTILES, values, strict=True)}


def assemble(results: dict[str, list[Record]], opts: StatsOptions) -> Record:
    """The report (`--format json` prints it as is: shape version 1)."""
    ov = results["overview"][0]
    overview = {
        **ov,
        "rate": _rate(ov["messages"], ov["first_ns"], ov["last_ns"]),
        "peak_per_second": results["peak"][0]["peak"],
    }
    groups = [{**g, "rate": _rate(g["messages"], g["first_ns"], g["last_ns"])} for g in results["groups"]]
    lag_all = results["lag"][0]

    def lag_record(r: Record) -> Record:
        return {k: v for k, v in r.items() if k != "p"} | _pct(r["p"])

    return {
        "v": 1,
        "by": opts.by,
        "silence_ns": opts.silence_ns,
        "overview": overview,
        "groups": groups,
        "problems": results["problems"],
        "sequences": results["sequences"],
        "gaps": results["gaps"],
        "watermark_lag": {
            "all": lag_record(lag_all) if lag_all["deltas"] else None,
            "outputs": [lag_record(r) for r in results["lag_outputs"]],
        },
        "heartbeats": results["heartbeats"],
        "silences": results["silences"],
        "top_keys": results["top_keys"],
    }


def report_and_timelines(
    run: Callable[[dict[str, str]], dict[str, list[Record]]], opts: StatsOptions, plots: bool
) -> tuple[Record, Timelines | None]:
    """The report from `run` (which executes named SQL queries on a `rows`
    table: Spark's or SQLite's), and the timelines for --plot."""
    report = assemble(run(queries(opts)), opts)
    if not plots:
        return report, None
    ov = report["overview"]
    bucket = bucket_ns(ov["first_ns"], ov["last_ns"])
    found = run(timeline_queries(bucket))
    return report, Timelines(bucket, found["rate"], found["lag_timeline"])
