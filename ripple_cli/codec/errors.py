"""Errors raised inside the codec core.

The streaming decoder never lets these escape: it turns them into
`Problem` values.  They exist so that the small readers can stop at the
first bad byte with a precise position and cause.
"""

from __future__ import annotations


class DecodeError(Exception):
    """Bytes that do not decode.  `pos` is relative to the buffer being read."""

    def __init__(self, message: str, pos: int = -1) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos

    def __str__(self) -> str:
        if self.pos >= 0:
            return f"{self.message} at byte {self.pos}"
        return self.message


class EncodeError(ValueError):
    """A value or text that cannot be written (out of range, wrong shape,
    not a message of the protocol)."""
