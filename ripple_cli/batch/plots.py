"""`ripple stats --plot DIR`: PNG charts (matplotlib, the `plot` extra;
imported only when asked for)."""

from __future__ import annotations

import os
from typing import Any

from ripple_cli.errors import UsageProblem

from .stats import NS, Record, Timelines

PLOTS = ("rate.png", "watermark_lag.png", "gaps.png")


def require_matplotlib() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise UsageProblem("--plot needs matplotlib: pip install 'ripple-cli[plot]'") from None
    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    return plt


def _t(ns: int, t0: int) -> float:
    return (ns - t0) / NS


def write_plots(directory: str, report: Record, timelines: Timelines) -> list[str]:
    """rate.png: messages per second over time, per stream; watermark_lag.png:
    the largest lag per bucket, per output; gaps.png: the Delta sequence gaps
    on a timeline, per (worker, output).  Time in seconds from the first
    message (envelope time)."""
    plt = require_matplotlib()
    os.makedirs(directory, exist_ok=True)
    t0 = report["overview"]["first_ns"] or 0
    bucket = timelines.bucket_ns
    paths = []

    def save(fig: Any, name: str, title: str, ylabel: str) -> None:
        ax = fig.axes[0]
        ax.set_title(title)
        ax.set_xlabel(f"seconds since {report['overview'].get('first', '') or 'the first message'}")
        ax.set_ylabel(ylabel)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small", loc="best")
        fig.tight_layout()
        path = os.path.join(directory, name)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)

    fig, ax = plt.subplots(figsize=(10, 4.5))
    series: dict[str, tuple[list[float], list[float]]] = {}
    for r in timelines.rate:
        xs, ys = series.setdefault(r["stream"], ([], []))
        xs.append(_t(r["t"], t0))
        ys.append(r["messages"] * NS / bucket)
    for name, (xs, ys) in sorted(series.items())[:20]:
        ax.plot(xs, ys, label=name, linewidth=1)
    save(fig, PLOTS[0], "message rate per stream", "messages/s")

    fig, ax = plt.subplots(figsize=(10, 4.5))
    series = {}
    for r in timelines.lag:
        xs, ys = series.setdefault(str(r["output"]), ([], []))
        xs.append(_t(r["t"], t0))
        ys.append(r["max_lag"] / 1e6)
    for name, (xs, ys) in sorted(series.items())[:20]:
        ax.plot(xs, ys, label=name, linewidth=1)
    save(fig, PLOTS[1], "watermark lag (largest per bucket)", "ms")

    fig, ax = plt.subplots(figsize=(10, 4.5))
    lanes = sorted({(g["worker"], g["output"]) for g in report["gaps"]})
    for i, lane in enumerate(lanes):
        pts = [g for g in report["gaps"] if (g["worker"], g["output"]) == lane]
        ax.scatter(
            [_t(g["time_ns"], t0) for g in pts],
            [i] * len(pts),
            s=[10 + 4 * min(g["missing"], 50) for g in pts],
            label=f"{lane[0]} {lane[1]}",
        )
    ax.set_yticks(range(len(lanes)), [f"{w} {o}" for w, o in lanes] or [])
    save(fig, PLOTS[2], "Delta sequence gaps (size: messages missing)", "(worker, output)")
    return paths
