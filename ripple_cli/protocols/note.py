"""`Note`: a problem found where its stream offset is not known.

The pure readers (a command body, a JSON payload) see one message's bytes,
not where they stand in the stream; they return notes, and the stream
decoder, which knows the message's offset, reports each as a `Problem`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ripple_cli.codec.problems import Problem, Severity


@dataclass(frozen=True, slots=True)
class Note:
    kind: str  # a problem kind the dissector declares
    detail: str
    severity: Severity = Severity.ERROR

    def at(self, offset: int) -> Problem:
        """The note as a problem of the message at stream offset `offset`."""
        return Problem(offset, self.kind, self.detail, severity=self.severity)
