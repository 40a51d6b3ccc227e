"""CRC-32C of any range of a stream, from the CRCs of its prefixes.

Resynchronising after damage tries every offset where the magic appears,
and each candidate's CRC covers the payload its header claims: headers
claiming large payloads, one after the other, cost the square of the
stream's size when each candidate's CRC is computed afresh.  With the CRC
of the stream's prefix at every STEP bytes (computed once), the CRC of any
range is two short CRCs and a few multiplications in GF(2)[x] modulo the
Castagnoli polynomial (zlib's crc32_combine: crc(A || B) = crc(A) * x^8|B|
+ crc(B)), whatever the range's length.

`prefixes(origin)` gives the C extension's CrcPrefixes when it is built
(resync asks once per magic in damaged bytes, and this arithmetic in Python
was most of a hostile stream's time), else `PurePrefixes`, the definition.
"""

from __future__ import annotations

from typing import Protocol

from ripple_cli.codec.crc import Buffer, crc32c
from ripple_cli.codec.fast import speedups

POLY = 0x82F63B78  # CRC-32C, reflected
STEP = 512  # bytes between two prefix CRCs: a candidate hashes at most twice this
_ONE = 1 << 31  # x^0, reflected


def _mul(a: int, b: int) -> int:
    """a * b modulo the polynomial, both reflected."""
    m, p = _ONE, 0
    while a:
        if a & m:
            p ^= b
            a ^= m
        m >>= 1
        b = (b >> 1) ^ POLY if b & 1 else b >> 1
    return p


class _Powers:
    """x^(8n) for any n, as x^(8 STEP q) * x^(8 r): two tables, grown as needed."""

    def __init__(self) -> None:
        self.small: list[int] = []  # x^(8r), r < STEP
        self.large: list[int] = [_ONE]  # x^(8 STEP q)

    def of(self, n: int) -> int:
        if not self.small:
            x8 = _ONE >> 8  # x^8
            table = [_ONE]
            for _ in range(STEP - 1):
                table.append(_mul(table[-1], x8))
            self.small = table
        q, r = divmod(n, STEP)
        large = self.large
        while len(large) <= q:
            large.append(_mul(large[-1], _mul(self.small[-1], _ONE >> 8)))
        return _mul(large[q], self.small[r])


_POWERS = _Powers()


def _shift(crc: int, n: int) -> int:
    """The CRC register moved past n zero bytes."""
    return _mul(_POWERS.of(n), crc) if n else crc


_accel = speedups()
shift = _accel.crc32c_shift if _accel is not None else _shift


def combine(crc_a: int, crc_b: int, len_b: int) -> int:
    """crc32c(A + B) from crc32c(A), crc32c(B) and len(B)."""
    return shift(crc_a, len_b) ^ crc_b


class RangeCrcs(Protocol):
    """What the framings use of a Prefixes, in C or in Python."""

    @property
    def origin(self) -> int: ...

    def extend(self, buf: Buffer, base: int, upto: int) -> None: ...

    def crc(self, buf: Buffer, base: int, start: int, end: int) -> int: ...


class PurePrefixes:
    """The CRCs of a stream's prefixes from `origin` on, one every STEP bytes.
    Buffers hold part of the stream: `buf[i]` is the stream's byte `base + i`."""

    def __init__(self, origin: int) -> None:
        self.origin = origin
        self.marks = [0]  # crc32c(stream[origin : origin + k STEP])

    @property
    def covered(self) -> int:
        """Stream offset up to which the marks go."""
        return self.origin + (len(self.marks) - 1) * STEP

    def extend(self, buf: Buffer, base: int, upto: int) -> None:
        """Marks up to stream offset `upto`; the buffer holds the bytes from `covered` on."""
        view = memoryview(buf)
        marks = self.marks
        while self.covered + STEP <= upto:
            i = self.covered - base
            marks.append(combine(marks[-1], crc32c(view[i : i + STEP]), STEP))

    def upto(self, buf: Buffer, base: int, x: int) -> int:
        """crc32c(stream[origin:x])."""
        self.extend(buf, base, x)
        k = (x - self.origin) // STEP
        m = self.origin + k * STEP
        if m == x:
            return self.marks[k]
        return combine(self.marks[k], crc32c(memoryview(buf)[m - base : x - base]), x - m)

    def crc(self, buf: Buffer, base: int, start: int, end: int) -> int:
        """crc32c(stream[start:end]), origin <= start <= end."""
        return self.upto(buf, base, end) ^ shift(self.upto(buf, base, start), end - start)


def prefixes(origin: int) -> RangeCrcs:
    """The prefix CRCs of a stream from `origin` on: in C when it is built."""
    if _accel is not None:
        return _accel.CrcPrefixes(origin)  # type: ignore[no-any-return]
    return PurePrefixes(origin)
