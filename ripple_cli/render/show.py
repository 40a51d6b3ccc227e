"""What `decode` and the tap do with each item: count it in the Report,
choose it (--type, --output, --key, -Y), stop at --count, and hand it to
the renderer.  A pipeline sink (flow/pipeline.py)."""

from __future__ import annotations

from ripple_cli.analysis.report import Report, SourceReport
from ripple_cli.codec.problems import Problem
from ripple_cli.flow.pipeline import Enough
from ripple_cli.flow.select import MessageSelector
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

    @property
    def takes_runs(self) -> bool:
        """Runs are shown as they are only when every message is, as its
        canonical line: then a fast lane may write them."""
        return self.renderer.takes_runs and self.select.everything

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
        count = self.count
        if count is not None and self.shown + run.messages >= count:
            self.renderer.run(origin, run, count - self.shown)
            self.shown = count
            raise Enough
        self.renderer.run(origin, run)
        self.shown += run.messages

    def problem(self, origin: Origin, problem: Problem) -> None:
        assert self.rep is not None
        self.report.problem(self.rep, problem)
        self.renderer.problem(origin, problem)

    def flush(self) -> None:
        self.renderer.flush()
