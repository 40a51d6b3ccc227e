"""Where a decoded message or problem came from."""

from __future__ import annotations

from dataclasses import dataclass

from ripple_cli.capture.events import StreamId


@dataclass(frozen=True, slots=True)
class Origin:
    source: str  # the input's display name: a path or <stdin>
    stream: StreamId | None = None  # None: a raw stream file (no connection)
    time_ns: int | None = None  # capture time, when the input is a capture
    seed: int = 0  # the Community ID's seed (--community-id-seed)

    @property
    def community_id(self) -> str | None:
        """The connection's Community ID (capture/community_id.py); None for
        a raw stream, which has no addresses."""
        return None if self.stream is None else self.stream.community_id(self.seed)
