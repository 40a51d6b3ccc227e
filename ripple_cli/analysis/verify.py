"""What `verify` does with each item: count it and its problems in the
Report, a SourceReport per stream.  A pipeline sink (flow/pipeline.py).

With -Y every message is still checked, but only matching messages are
counted and only their problems reported; framing problems, which belong
to no message, always are.  A problem that belongs to a message (it has a
seq) comes just before the message (payload) or just after it (stream
rules), at the same offset: it is held until the message is judged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ripple_cli.analysis.report import Report, SourceReport
from ripple_cli.capture.events import StreamId
from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.item import Decoded, Run
from ripple_cli.protocols.origin import Origin

Select = Callable[[Origin, Decoded], bool]


class VerifySink:
    def __init__(self, report: Report, select: Select | None) -> None:
        self.report = report
        self.select = select
        # Runs are counted as they are only when no message is looked at.
        self.takes_runs = select is None
        self.per_stream: dict[StreamId | None, SourceReport] = {}
        self.name = ""
        self._pending: list[tuple[SourceReport, Problem]] = []
        self._last: tuple[int, bool] = (-1, True)  # (offset, matched) of the last message

    def source(self, name: str) -> None:
        """The items that follow are this input's."""
        self.name = name
        self.per_stream = {}
        self._pending.clear()
        self._last = (-1, True)

    def _rep(self, origin: Origin) -> SourceReport:
        rep = self.per_stream.get(origin.stream)
        if rep is None:
            label = self.name if origin.stream is None else f"{self.name} [{origin.stream.label}]"
            rep = self.per_stream[origin.stream] = self.report.source(label)
        return rep

    def run(self, origin: Origin, run: Run) -> None:
        self.report.run(self._rep(origin), run)

    def problem(self, origin: Origin, problem: Problem) -> None:
        rep = self._rep(origin)
        if self.select is None or problem.seq is None:
            self.report.problem(rep, problem)
        elif problem.offset == self._last[0]:
            if self._last[1]:
                self.report.problem(rep, problem)
        else:
            self._pending.append((rep, problem))

    def message(self, origin: Origin, msg: Decoded) -> None:
        rep = self._rep(origin)
        matched = self.select is None or self.select(origin, msg)
        self._last = (msg.offset, matched)
        for prep, p in self._pending:
            if matched or p.offset != msg.offset:
                self.report.problem(prep, p)
        self._pending.clear()
        if matched:
            self.report.message(rep, msg)

    def flush(self) -> None:
        pass  # nothing is written before the end

    def end(self, analyses: list[tuple[StreamId | None, str, dict[str, Any]]]) -> None:
        """The input is over: problems still held, and the connections'
        summaries (a sibling protocol's ConnectionAnalyzer.report)."""
        for prep, p in self._pending:
            self.report.problem(prep, p)
        self._pending.clear()
        for stream, protocol, summary in analyses:
            rep = self.per_stream.get(stream)
            if rep is not None:
                rep.analysis = {"protocol": protocol, **summary}
        if not self.per_stream:
            self.report.source(self.name)  # an empty input is still a verified stream

    @property
    def messages(self) -> int:
        """The messages counted for this input so far (matching -Y, if given)."""
        return sum(rep.messages for rep in self.per_stream.values())

    def forget(self) -> None:
        """The input could not be read: its reports go."""
        for rep in self.per_stream.values():
            self.report.sources.remove(rep)
        self.per_stream = {}
