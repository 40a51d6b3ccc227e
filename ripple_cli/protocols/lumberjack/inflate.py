"""Inflating a `C` frame's zlib bytes, within a bound.

A few kilobytes of zlib can inflate to gigabytes (a decompression bomb), so
the output is asked for with `max_length` and never exceeds the bound by
more than one byte: that byte is how an overflow is told from an exact fit.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from ripple_cli.terminal.words import plural

_PIECE = 1 << 16  # compressed bytes handed to zlib at a time: a corrupt stream still yields what came before
# Inflated bytes asked for at a time: zlib builds each call's output in a
# buffer of its own before handing it over, so one call for the whole bound
# would briefly hold it twice.
_STEP = 1 << 20


@dataclass(frozen=True, slots=True)
class Inflated:
    data: bytes  # what was inflated (all of it, or what came before an error)
    over: bool = False  # the output would exceed the bound: `data` is empty
    error: str | None = None  # why the zlib stream is not whole and clean


def inflate(payload: bytes, limit: int) -> Inflated:
    d = zlib.decompressobj()
    out: list[bytes] = []
    size = 0
    fed = 0  # compressed bytes handed to zlib so far
    try:
        while fed < len(payload) and not d.eof:
            piece = payload[fed : fed + _PIECE]
            fed += len(piece)
            # Until this piece is used up and zlib has nothing more to give:
            # with max_length, output may still be pending once the input is
            # all consumed (the rest of a long match), so an empty call follows.
            while not d.eof:
                chunk = d.decompress(piece, min(_STEP, limit + 1 - size))
                size += len(chunk)
                out.append(chunk)
                if size > limit:
                    return Inflated(b"", over=True)
                piece = d.unconsumed_tail
                if not piece and not chunk:
                    break
    except zlib.error as e:
        return Inflated(b"".join(out), error=f"not a valid zlib stream ({_reason(e)})")
    data = b"".join(out)
    if not d.eof:
        return Inflated(data, error="the zlib stream ends early")
    trailing = len(d.unused_data) + len(payload) - fed
    if trailing:
        return Inflated(data, error=f"{plural(trailing, 'byte')} after the end of the zlib stream")
    return Inflated(data)


def _reason(e: zlib.error) -> str:
    # "Error -3 while decompressing data: incorrect header check" -> "incorrect header check"
    text = str(e)
    return text.split(": ", 1)[1] if ": " in text else text
