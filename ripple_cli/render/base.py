"""What a renderer is, and what every one is told."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.base import LaneKind
from ripple_cli.protocols.item import Decoded, Run
from ripple_cli.protocols.origin import Origin


@dataclass(frozen=True)
class View:
    """How messages are shown, whatever the format (--show-offsets,
    --show-connection), and whether the input is watched as it comes (a
    pipe, the tap): then nothing waits to be shown for more to come."""

    offsets: bool = False
    connection: bool = False
    live: bool = False


class Renderer(Protocol):
    """What a pipeline sink (flow/pipeline.py) hands messages to: it
    writes them, and is closed."""

    @property
    def lane(self) -> LaneKind | None:
        """The fast lane's text it writes runs from as they are (SEXP: their
        canonical lines; JSON: their JSON objects), or None when it shows
        messages one by one: only then is a lane asked to write runs."""
        ...

    def message(self, origin: Origin, msg: Decoded) -> None: ...

    def problem(self, origin: Origin, problem: Problem) -> None: ...

    def run(self, origin: Origin, run: Run, limit: int | None = None) -> None:
        """A run's messages (only the first `limit` of them, when given)."""

    def flush(self) -> None:
        """Called when the input pauses (a chunk is done): a live pipe shows
        what has arrived."""

    def close(self) -> None: ...


class NoRuns:
    """For renderers that show each message themselves: the pipeline never
    asks a lane for runs on their behalf."""

    lane: LaneKind | None = None

    def run(self, origin: Origin, run: Run, limit: int | None = None) -> None:
        raise TypeError("this renderer shows messages one by one: no fast lane runs")


def problem_text(origin: Origin, p: Problem) -> str:
    label = "warning" if p.severity.value == "warning" else "error"
    where = origin.source if origin.stream is None else f"{origin.source}: {origin.stream.label}"
    return f"ripple: {where}: {label}: {p.describe()}"
