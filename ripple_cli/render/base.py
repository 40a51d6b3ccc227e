"""The renderer interface."""

from __future__ import annotations

from typing import Protocol

from ripple_cli.codec.problems import Problem
from ripple_cli.codec.stream import Message


class Renderer(Protocol):
    def message(self, source: str, msg: Message) -> None: ...

    def problem(self, source: str, problem: Problem) -> None: ...

    def flush(self) -> None:
        """Called when the input pauses (a chunk is done): a live pipe shows
        what has arrived."""

    def close(self) -> None: ...


def problem_text(source: str, p: Problem) -> str:
    label = "warning" if p.severity.value == "warning" else "error"
    return f"ripple: {source}: {label}: {p.describe()}"
