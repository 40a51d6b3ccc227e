"""Where a decoded message or problem came from."""

from __future__ import annotations

from dataclasses import dataclass

from ripple_cli.capture.events import StreamId


@dataclass(frozen=True, slots=True)
class Origin:
    source: str  # the input's display name: a path or <stdin>
    stream: StreamId | None = None  # None: a raw stream file (no connection)
    time_ns: int | None = None  # capture time, when the input is a capture
