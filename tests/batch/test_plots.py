"""`stats --plot`: what each chart draws, checked as data (plots.chart_data),
and the files: each chart as PNG and SVG, the SVG's text exact."""

from __future__ import annotations

from pathlib import Path

from ripple_cli.batch.plots import PLOTS, chart_data, segments, start_label, write_plots
from ripple_cli.batch.stats import NS, Record, Timelines

T0 = 1_718_899_200 * NS  # 2024-06-20T16:00:00Z
B = NS  # one-second buckets


def report(first: int | None = T0, last: int | None = T0 + 10 * NS - 1, gaps: list[Record] | None = None) -> Record:
    return {"overview": {"first_ns": first, "last_ns": last}, "gaps": gaps or []}


def test_a_silence_cuts_the_line() -> None:
    pts = [(T0, 5.0), (T0 + B, 6.0), (T0 + 5 * B, 7.0), (T0 + 6 * B, 8.0), (T0 + 9 * B, 1.0)]
    assert segments(pts, B, T0) == [([0.0, 1.0], [5.0, 6.0]), ([5.0, 6.0], [7.0, 8.0]), ([9.0], [1.0])]


def test_rate_chart_segments_and_the_partial_last_bucket() -> None:
    """Input from T0 to T0+9.5 s: the bucket at 9 s holds half a second, its
    rate would read as a drop: left out.  Stream b's silence from 3 s to 6 s
    cuts its line; stream c has one bucket only: a single point."""
    rate = [
        *({"stream": "a", "t": T0 + i * B, "messages": 10} for i in range(10)),
        {"stream": "b", "t": T0, "messages": 4},
        {"stream": "b", "t": T0 + 1 * B, "messages": 4},
        {"stream": "b", "t": T0 + 6 * B, "messages": 2},
        {"stream": "b", "t": T0 + 7 * B, "messages": 2},
        {"stream": "c", "t": T0 + 4 * B, "messages": 3},
    ]
    charts = chart_data(report(last=T0 + 9 * B + B // 2), Timelines(B, rate, []))
    assert charts["rate"].series == {
        "a": [([float(i) for i in range(9)], [10.0] * 9)],
        "b": [([0.0, 1.0], [4.0, 4.0]), ([6.0, 7.0], [2.0, 2.0])],
        "c": [([4.0], [3.0])],
    }
    assert charts["rate"].ymin == 0


def test_a_series_with_only_a_partial_bucket_keeps_it() -> None:
    rate = [{"stream": "a", "t": T0, "messages": 3}]
    charts = chart_data(report(last=T0 + B // 4), Timelines(B, rate, []))
    assert charts["rate"].series == {"a": [([0.0], [3.0])]}


def test_lag_axis_from_zero_and_empty_charts_say_so() -> None:
    lag = [{"output": "vwap", "t": T0 + 2 * B, "max_lag": 5_000_000, "mean_lag": 1.0}]
    charts = chart_data(report(), Timelines(B, [], lag))
    assert charts["watermark_lag"].series == {"vwap": [([2.0], [5.0])]}
    assert charts["watermark_lag"].ymin == 0
    assert charts["gaps"].empty_text == "no gaps"
    assert charts["rate"].empty_text == "no messages"


def test_gaps_chart_lanes() -> None:
    gaps = [
        {"worker": "w2", "output": "vwap", "time_ns": T0 + 3 * NS, "missing": 2},
        {"worker": "w1", "output": "vwap", "time_ns": T0 + NS // 2, "missing": 1},
    ]
    chart = chart_data(report(gaps=gaps), Timelines(B, [], []))["gaps"]
    assert chart.lanes == ["w1 vwap", "w2 vwap"]
    assert chart.points == [(3.0, 1, 2), (0.5, 0, 1)]
    assert chart.empty_text is None


def test_the_label_names_the_start_time() -> None:
    assert start_label(report()) == "seconds since 2024-06-20T16:00:00.000000000Z"
    assert start_label(report(first=None, last=None)) == "seconds since the first message"


def test_svg_beside_png(tmp_path: Path) -> None:
    rate = [{"stream": "a", "t": T0 + i * B, "messages": 10} for i in range(3)]
    paths = write_plots(str(tmp_path), report(last=T0 + 3 * B - 1), Timelines(B, rate, []))
    assert sorted(Path(p).name for p in paths) == sorted(PLOTS)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(PLOTS)
    for p in tmp_path.glob("*.png"):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    gaps = (tmp_path / "gaps.svg").read_text()
    assert gaps.startswith("<?xml")
    assert ">no gaps<" in gaps
    assert ">seconds since 2024-06-20T16:00:00.000000000Z<" in gaps
    assert ">Delta sequence gaps (size: messages missing)<" in gaps
    lag = (tmp_path / "watermark_lag.svg").read_text()
    assert ">no watermark lag (no Delta with a watermark)<" in lag
    # The same figures give the same SVG (no date, fixed ids).
    again = tmp_path / "again"
    write_plots(str(again), report(last=T0 + 3 * B - 1), Timelines(B, rate, []))
    assert (again / "gaps.svg").read_text() == gaps
