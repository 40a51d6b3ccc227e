"""The outcome of a run: what was seen, what was wrong, and the exit code.

Like black's report object, it alone decides the exit status, so every
command agrees on what counts as a problem.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_PROBLEMS

if TYPE_CHECKING:
    from ripple_cli.protocols.item import Decoded, Run


@dataclass
class SourceReport:
    name: str
    messages: int = 0
    bytes: int = 0  # bytes of whole envelopes
    by_type: Counter[str] = field(default_factory=Counter)
    problems: list[Problem] = field(default_factory=list)
    # A sibling protocol's connection summary (ConnectionAnalyzer.report),
    # with "protocol" first; None for Ripple and for the other direction.
    analysis: dict[str, Any] | None = None
    # Problems past the report's keep_problems: counted by severity, not kept.
    unlisted_errors: int = 0
    unlisted_warnings: int = 0
    empty: bool = False  # its input gave no message (not the name: `verify - -` reads two)

    @property
    def unlisted(self) -> int:
        return self.unlisted_errors + self.unlisted_warnings

    def counts(self, strict: bool) -> tuple[int, int]:
        """(problems, warnings), listed or not; under --strict warnings
        count as problems."""
        errors = sum(1 for p in self.problems if p.severity is Severity.ERROR) + self.unlisted_errors
        warnings = len(self.problems) + self.unlisted - errors
        return (errors + warnings, 0) if strict else (errors, warnings)


class Report:
    def __init__(self, strict: bool = False, keep_problems: int = 10_000) -> None:
        self.strict = strict
        self.sources: list[SourceReport] = []
        self.keep_problems = keep_problems  # a stream's first; the rest are counted, not kept
        # Problems that belong to no stream of the report (sinks that only
        # count them for the exit code).
        self.unattributed = 0
        # Inputs that gave no message (none at all, or none selected): a
        # problem of the run, for verify, unless --allow-empty.
        self.empty: list[str] = []
        # Stopped by Ctrl-C: the report covers what was read before.
        self.interrupted = False

    def source(self, name: str) -> SourceReport:
        rep = SourceReport(name)
        self.sources.append(rep)
        return rep

    def message(self, rep: SourceReport, msg: Decoded) -> None:
        rep.messages += 1
        rep.bytes += msg.size
        rep.by_type[msg.type] += 1

    def problem(self, rep: SourceReport, p: Problem) -> None:
        if len(rep.problems) < self.keep_problems:
            rep.problems.append(p)
        elif p.severity is Severity.ERROR:
            rep.unlisted_errors += 1
        else:
            rep.unlisted_warnings += 1

    def count(self, p: Problem) -> None:
        """A problem of no stream of the report, for the exit code only."""
        if self.is_problem(p):
            self.unattributed += 1

    def run(self, rep: SourceReport, run: Run) -> None:
        """The messages and problems of a fast lane's run, as `message` and
        `problem` would count them one by one; only the problems that are
        kept are made."""
        rep.messages += run.messages
        rep.bytes += run.size
        for name, n in run.counts():
            rep.by_type[name] += n
        count = run.problem_count
        if count:
            room = max(0, self.keep_problems - len(rep.problems))
            rep.problems.extend(run.problems(limit=min(room, count)))
            # A lane's run holds stream-rule problems only, all of them
            # errors (protocols/ripple/rules.py).
            rep.unlisted_errors += count - min(room, count)

    def nothing(self, name: str) -> None:
        """The input `name` gave no message (or its selection none)."""
        self.empty.append(name)

    def is_problem(self, p: Problem) -> bool:
        return p.severity is Severity.ERROR or self.strict

    @property
    def problem_count(self) -> int:
        return sum(s.counts(self.strict)[0] for s in self.sources) + self.unattributed

    @property
    def warning_count(self) -> int:
        return sum(s.counts(self.strict)[1] for s in self.sources)

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return EXIT_INTERRUPTED
        return EXIT_PROBLEMS if self.problem_count or self.empty else EXIT_OK
