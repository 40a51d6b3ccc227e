"""What `decode` and the tap do with each item: count it in the Report,
choose it (--type, --output, --key, -Y), stop at --count, and hand it to
the renderer.  A pipeline sink (flow/pipeline.py)."""

from __future__ import annotations

from ripple_cli.analysis.report import Report, SourceReport
from ripple_cli.codec.problems import Problem
from ripple_cli.flow.pipeline import Enough
from ripple_cli.flow.select import MessageSelector
from ripple_cli.protocols.base import LaneKind
from ripple_cli.protocols.item import Decoded, Run
from ripple_cli.protocols.origin import Origin
from ripple_cli.render.base import Renderer


class ShowSink:
    def __init__(self, report: Report, renderer: Renderer, select: MessageSelector, count: int | None) -> None:
        self.report = report
        self.renderer = renderer
        self.select = select
        self.count = count
        self.shown = 0
        self.rep: SourceReport | None = None
        # What a fast lane does for this sink: it writes every message in
        # the renderer's form when all are shown, or only those a selection
        # chooses when the selection is exactly what the lane tests (type,
        # output, key); with another selection that narrows, it passes over
        # what cannot be chosen and leaves the rest to Python.
        pre = select.prefilter
        if select.everything or (pre is not None and pre.exact and renderer.lane is not None):
            self.lane = renderer.lane
        else:
            self.lane = None if pre is None else LaneKind.SELECT
        self._runs_shown = self.lane is not None and self.lane is not LaneKind.SELECT

    @property
    def takes_runs(self) -> bool:
        return self.lane is not None

    def source(self, name: str) -> None:
        """The items that follow are this input's."""
        self.rep = self.report.source(name)

    def message(self, origin: Origin, msg: Decoded) -> None:
        assert self.rep is not None
        self.report.message(self.rep, msg)
        count = self.count
        if count is not None and self.shown >= count:
            raise Enough
        if self.select(origin, msg):
            self.renderer.message(origin, msg)
            self.shown += 1
            if count is not None and self.shown >= count:
                raise Enough

    def run(self, origin: Origin, run: Run) -> None:
        assert self.rep is not None
        self.report.run(self.rep, run)
        if not self._runs_shown:
            return  # a selecting lane's run: messages none of which is chosen
        count = self.count
        if count is not None and self.shown + run.lines >= count:
            self.renderer.run(origin, run, count - self.shown)
            self.shown = count
            raise Enough
        self.renderer.run(origin, run)
        self.shown += run.lines

    def problem(self, origin: Origin, problem: Problem) -> None:
        assert self.rep is not None
        self.report.problem(self.rep, problem)
        self.renderer.problem(origin, problem)

    def flush(self) -> None:
        self.renderer.flush()
