"""Counts in words, as every summary line says them."""

from __future__ import annotations


def plural(n: int, word: str, *, grouped: bool = False) -> str:
    """`1 message`, `2 messages`; `grouped`: thousands separated (`1,200`)."""
    count = f"{n:,}" if grouped else str(n)
    return f"{count} {word}" if n == 1 else f"{count} {word}s"
