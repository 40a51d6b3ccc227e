"""`ripple stats --plot DIR`: charts, each as PNG and SVG (matplotlib, the
`plot` extra; imported only when asked for).

What is drawn is worked out first, without matplotlib (`chart_data`), so
that it can be checked as data: a series is cut into segments where its
buckets stop (a silence: no line is drawn across it), a segment of one
point is drawn as a marker, and the rate's buckets cut short by the
input's first or last message are left out (their rate would read as a
fake drop) unless a series has nothing else."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ripple_cli.codec.jsonview import iso_time
from ripple_cli.errors import UsageProblem

from .stats import NS, Record, Timelines

CHARTS = ("rate", "watermark_lag", "gaps")
FORMATS = ("png", "svg")
PLOTS = tuple(f"{c}.{f}" for c in CHARTS for f in FORMATS)
MAX_SERIES = 20

Segment = tuple[list[float], list[float]]


def require_matplotlib() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise UsageProblem("--plot needs matplotlib: pip install 'ripple-cli[plot]'") from None
    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    return plt


@dataclass
class Chart:
    title: str
    ylabel: str
    series: dict[str, list[Segment]] = field(default_factory=dict)  # label -> segments
    ymin: float | None = None
    lanes: list[str] = field(default_factory=list)  # the gaps chart's rows
    points: list[tuple[float, int, int]] = field(default_factory=list)  # the gaps: (x, lane, messages missing)
    empty_text: str | None = None  # said in the middle when there is nothing to draw


def segments(points: list[tuple[int, float]], bucket: int, t0: int) -> list[Segment]:
    """(t, y) points in time order cut where a bucket is missing."""
    out: list[Segment] = []
    last: int | None = None
    for t, y in points:
        if last is None or t - last > bucket:
            out.append(([], []))
        out[-1][0].append((t - t0) / NS)
        out[-1][1].append(y)
        last = t
    return out


def _whole(t: int, bucket: int, first_ns: int, last_ns: int) -> bool:
    """Whether the bucket starting at t lies within [first_ns, last_ns]."""
    return t >= first_ns and t + bucket - 1 <= last_ns


def start_label(report: Record) -> str:
    first = report["overview"]["first_ns"]
    return "seconds since the first message" if first is None else f"seconds since {iso_time(first)}"


def chart_data(report: Record, timelines: Timelines) -> dict[str, Chart]:
    ov = report["overview"]
    t0 = ov["first_ns"] or 0
    last = ov["last_ns"] if ov["last_ns"] is not None else t0
    bucket = timelines.bucket_ns

    rate = Chart("message rate per stream", "messages/s", ymin=0)
    by_stream: dict[str, list[tuple[int, float]]] = {}
    for r in timelines.rate:
        by_stream.setdefault(str(r["stream"]), []).append((r["t"], r["messages"] * NS / bucket))
    for name, pts in sorted(by_stream.items())[:MAX_SERIES]:
        whole = [p for p in pts if _whole(p[0], bucket, t0, last)]
        rate.series[name] = segments(whole or pts, bucket, t0)

    lag = Chart("watermark lag (largest per bucket)", "ms", ymin=0)
    by_output: dict[str, list[tuple[int, float]]] = {}
    for r in timelines.lag:
        if r["max_lag"] is not None:  # null: no lag of the bucket fits 64 bits (a watermark near -2^63)
            by_output.setdefault(str(r["output"]), []).append((r["t"], r["max_lag"] / 1e6))
    for name, pts in sorted(by_output.items())[:MAX_SERIES]:
        lag.series[name] = segments(pts, bucket, t0)
    if not lag.series:
        lag.empty_text = "no watermark lag (no Delta with a watermark)"
    if not rate.series:
        rate.empty_text = "no messages"

    gaps = Chart("Delta sequence gaps (size: messages missing)", "(worker, output)")
    lanes = sorted({(str(g["worker"]), str(g["output"])) for g in report["gaps"]})
    gaps.lanes = [f"{w} {o}" for w, o in lanes]
    for g in report["gaps"]:
        lane = lanes.index((str(g["worker"]), str(g["output"])))
        gaps.points.append(((g["time_ns"] - t0) / NS, lane, g["missing"]))
    if not gaps.points:
        gaps.empty_text = "no gaps"
    return {"rate": rate, "watermark_lag": lag, "gaps": gaps}


def write_plots(directory: str, report: Record, timelines: Timelines) -> list[str]:
    """rate: messages per second over time, per stream; watermark_lag: the
    largest lag per bucket, per output; gaps: the Delta sequence gaps on a
    timeline, per (worker, output).  Time in seconds from the first
    message (envelope time), which the x axis names.  Each chart as
    NAME.png and NAME.svg."""
    plt = require_matplotlib()
    os.makedirs(directory, exist_ok=True)
    xlabel = start_label(report)
    paths: list[str] = []
    # Text as text in the SVG (searchable, checkable), and ids that do not
    # change from run to run.
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": "ripple"}):
        for name, chart in chart_data(report, timelines).items():
            paths += _write_chart(plt, directory, name, chart, xlabel)
    return paths


def _write_chart(plt: Any, directory: str, name: str, chart: Chart, xlabel: str) -> list[str]:
    paths = []
    fig, ax = plt.subplots(figsize=(10, 4.5))
    _draw(ax, chart)
    ax.set_title(chart.title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(chart.ylabel)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small", loc="best")
    fig.tight_layout()
    for fmt in FORMATS:
        path = os.path.join(directory, f"{name}.{fmt}")
        # No date in the SVG: the same figures give the same file.
        fig.savefig(path, dpi=100, metadata={"Date": None} if fmt == "svg" else None)
        paths.append(path)
    plt.close(fig)
    return paths


def _draw(ax: Any, chart: Chart) -> None:
    for label, segs in chart.series.items():
        color = None
        for i, (xs, ys) in enumerate(segs):
            style: dict[str, Any] = {"linewidth": 1} if len(xs) > 1 else {"marker": "o", "linestyle": "none"}
            (line,) = ax.plot(xs, ys, color=color, label=label if i == 0 else None, **style)
            color = line.get_color()
    if chart.points:
        for lane in range(len(chart.lanes)):
            pts = [p for p in chart.points if p[1] == lane]
            ax.scatter(
                [p[0] for p in pts], [lane] * len(pts), s=[10 + 4 * min(p[2], 50) for p in pts], label=chart.lanes[lane]
            )
    if chart.lanes:
        ax.set_yticks(range(len(chart.lanes)), chart.lanes)
    elif not chart.series:
        ax.set_yticks([])
    if chart.empty_text:
        ax.text(0.5, 0.5, chart.empty_text, transform=ax.transAxes, ha="center", va="center")
    if chart.ymin is not None:
        ax.set_ylim(bottom=chart.ymin)
