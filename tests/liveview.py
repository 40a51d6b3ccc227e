"""The tap's decoding and printing threads' work in one sink (tap/session.py's
_ToPrinter and _Shown), for the tests of the live view without a tap."""

from __future__ import annotations

from ripple_cli.codec.problems import Problem
from ripple_cli.flow.pipeline import BaseSink
from ripple_cli.protocols.item import Decoded, Run
from ripple_cli.protocols.origin import Origin
from ripple_cli.tap.live import LiveView
from ripple_cli.tap.stats import TapStats


class ViewFeed(BaseSink):
    takes_runs = True

    def __init__(self, stats: TapStats, view: LiveView) -> None:
        self.stats, self.view = stats, view

    def message(self, origin: Origin, msg: Decoded) -> None:
        self.stats.output(origin, msg)
        self.view.message(origin, msg)

    def problem(self, origin: Origin, problem: Problem) -> None:
        self.stats.output(origin, problem)
        self.view.problem(origin, problem)

    def run(self, origin: Origin, run: Run) -> None:
        self.stats.run(origin, run)
        self.view.run(origin, run)
