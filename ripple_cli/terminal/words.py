"""Counts in words, as every summary line says them; long words cut."""

from __future__ import annotations

import re


def plural(n: int, word: str, *, grouped: bool = False) -> str:
    """`1 message`, `2 messages`; `grouped`: thousands separated (`1,200`)."""
    count = f"{n:,}" if grouped else str(n)
    return f"{count} {word}" if n == 1 else f"{count} {word}s"


def clip_words(text: str, most: int = 300) -> str:
    """`text` with each run of over `most` non-blank characters cut to its
    first `most` - 3 and "...": an error line that quotes what it was given
    (a 70 KB atom) stays a line."""
    if len(text) <= most:
        return text
    return re.sub(rf"\S{{{most + 1},}}", lambda m: m.group()[: most - 3] + "...", text)
