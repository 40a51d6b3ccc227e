"""The renderer interface."""

from __future__ import annotations

from typing import Protocol

from ripple_cli.codec.problems import Problem
from ripple_cli.flow.items import Decoded
from ripple_cli.flow.origin import Origin


class Renderer(Protocol):
    def message(self, origin: Origin, msg: Decoded) -> None: ...

    def problem(self, origin: Origin, problem: Problem) -> None: ...

    def flush(self) -> None:
        """Called when the input pauses (a chunk is done): a live pipe shows
        what has arrived."""

    def close(self) -> None: ...


def problem_text(origin: Origin, p: Problem) -> str:
    label = "warning" if p.severity.value == "warning" else "error"
    where = origin.source if origin.stream is None else f"{origin.source}: {origin.stream.label}"
    return f"ripple: {where}: {label}: {p.describe()}"
