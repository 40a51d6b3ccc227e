"""Byte ranges of a large raw stream, decoded in parallel.

Pure: `plan_ranges` cuts a file into ranges; `first_envelope` finds where a
range's task starts, given a way to read bytes at an offset.  A task starts
at the first offset of its range where a whole envelope with a valid CRC
begins and decodes on past the range's end up to the first envelope it
frames there: the next range's task starts at that same envelope (the
decoder resynchronizes on exactly that rule after damage), so the ranges'
rows together are the rows of one decode of the whole file, whatever the
split size.  A damaged region is the task's that reaches it: the one whose
decoder was in the stream when it began (see tasks.raw_range_rows).
"""

from __future__ import annotations

from collections.abc import Callable

from ripple_cli.codec.crc import crc32c
from ripple_cli.codec.envelope import CRC, HEADER, HEADER_SIZE, MAGIC, OVERHEAD, VERSION

Reader = Callable[[int, int], bytes]  # (offset, n) -> the bytes there, fewer only at the end of the file

WINDOW = 1 << 20


def plan_ranges(size: int, split_size: int) -> list[tuple[int, int]]:
    """[start, end) ranges covering [0, size); one empty range for an empty file."""
    if split_size < 1:
        raise ValueError("split size must be at least 1")
    if size == 0:
        return [(0, 0)]
    return [(s, min(s + split_size, size)) for s in range(0, size, split_size)]


def first_envelope(read: Reader, start: int, end: int, size: int, max_payload: int) -> int | None:
    """The first offset p, start <= p < end, where a whole envelope with a
    valid CRC begins in the file (`size` bytes, read through `read`), or None.
    Reads a window at a time; an envelope longer than the window is read
    whole only when its header is plausible."""
    base = start
    buf = read(base, min(WINDOW, size - base))
    p = start
    while p < end:
        i = buf.find(MAGIC, p - base)
        if i < 0:
            if base + len(buf) >= size:
                return None
            # The magic may straddle the window's end: keep its last 3 bytes.
            p = max(p, base + len(buf) - (len(MAGIC) - 1))
            base = p
            buf = read(base, min(WINDOW, size - base))
            continue
        p = base + i
        if p >= end or p + OVERHEAD > size:
            return None
        if p + HEADER_SIZE > base + len(buf):
            base = p
            buf = read(base, min(max(WINDOW, HEADER_SIZE), size - base))
            continue
        _m, version, _t, _f, _s, _ts, _fp, length = HEADER.unpack_from(buf, i)
        total = OVERHEAD + length
        if version == VERSION and 0 <= length <= max_payload and p + total <= size:
            env = buf[i : i + total] if p + total <= base + len(buf) else read(p, total)
            if CRC.unpack_from(env, total - 4)[0] == crc32c(memoryview(env)[: total - 4]):
                return p
        p += 1
    return None


def bytes_reader(data: bytes) -> Reader:
    """A Reader over bytes in memory (tests, small inputs)."""
    return lambda offset, n: data[offset : offset + n]
