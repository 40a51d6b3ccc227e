"""Does a Lumberjack frame plausibly start here?  For detection and resync.

The framing has no magic and no checksum: any `1A` followed by four bytes
is a well-formed ack.  So before trusting bytes as Lumberjack (at the start
of a connection, or after damage) ripple asks for more than the layout:
values a real writer would send (a window below a million, a zlib header
in a `C` payload, a JSON document in a `J` payload, short UTF-8 keys in a
`D` frame).  These bounds are ripple's choice, documented in
ripple-lumberjack(7); decoding itself accepts any well-formed frame.
"""

from __future__ import annotations

import re
from enum import Enum

from ripple_cli.protocols.lumberjack.wire import (
    ACK,
    COMPRESSED,
    DATA,
    JSON,
    SEQ_LEN,
    U32,
    VERSION_BYTES,
    WINDOW,
    WRITER_TYPES,
)

MAX_PLAUSIBLE_WINDOW = 1 << 20  # go-lumber refuses windows above 10000; Beats' bulk_max_size is 2048 by default
MAX_PLAUSIBLE_PAIRS = 1 << 16
MAX_PLAUSIBLE_KEY = 1 << 12  # D keys are field names
MAX_PLAUSIBLE_ACK = 1 << 24  # an ack at the start of a connection acknowledges few events
DETECT_PAYLOAD = 16 << 20  # the default --max-payload: detection has no options
JSON_STARTS = frozenset(b' \t\r\n{["-0123456789tfn')
ALL_TYPES = frozenset((*WRITER_TYPES, ACK))
CANDIDATE = re.compile(rb"[12][WDJCA]")  # where a frame may start: a version byte, a type letter


class Verdict(Enum):
    YES = "yes"
    NO = "no"
    MORE = "more"


def zlib_header_ok(cmf: int, flg: int) -> bool:
    """RFC 1950: deflate (method 8), a window of at most 32 KiB, the check
    bits, and no preset dictionary (no Lumberjack peer uses one)."""
    return cmf & 0x0F == 8 and cmf >> 4 <= 7 and (cmf << 8 | flg) % 31 == 0 and not flg & 0x20


def header(
    buf: bytes | bytearray,
    p: int,
    n: int,
    types: frozenset[int] = ALL_TYPES,
    max_payload: int = DETECT_PAYLOAD,
) -> tuple[Verdict, int | None]:
    """Whether a plausible frame of one of `types` starts at `buf[p]`,
    judged on its first bytes only (at most 14), and where it ends when
    that is known from them (W, A, J, C; None for D)."""
    if n - p < 1:
        return Verdict.MORE, None
    if buf[p] not in VERSION_BYTES:
        return Verdict.NO, None
    if n - p < 2:
        return Verdict.MORE, None
    kind = buf[p + 1]
    if kind not in types:
        return Verdict.NO, None
    if kind in (WINDOW, ACK):
        if n - p < 6:
            return Verdict.MORE, None
        value = U32.unpack_from(buf, p + 2)[0]
        bound = MAX_PLAUSIBLE_WINDOW if kind == WINDOW else MAX_PLAUSIBLE_ACK
        return (Verdict.YES, p + 6) if value <= bound else (Verdict.NO, None)
    if kind == COMPRESSED:
        if n - p < 8:
            return Verdict.MORE, None
        length = U32.unpack_from(buf, p + 2)[0]
        # The smallest zlib stream is 8 bytes (header, an empty block, Adler-32).
        if not 8 <= length <= max_payload or not zlib_header_ok(buf[p + 6], buf[p + 7]):
            return Verdict.NO, None
        return Verdict.YES, p + 6 + length
    if kind == JSON:
        if n - p < 11:
            return Verdict.MORE, None
        _seq, length = SEQ_LEN.unpack_from(buf, p + 2)
        if not 1 <= length <= max_payload or buf[p + 10] not in JSON_STARTS:
            return Verdict.NO, None
        return Verdict.YES, p + 10 + length
    assert kind == DATA
    if n - p < 10:
        return Verdict.MORE, None
    _seq, pairs = SEQ_LEN.unpack_from(buf, p + 2)
    if not 1 <= pairs <= MAX_PLAUSIBLE_PAIRS:
        return Verdict.NO, None
    if n - p < 14:
        return Verdict.MORE, None
    if not 1 <= U32.unpack_from(buf, p + 10)[0] <= MAX_PLAUSIBLE_KEY:
        return Verdict.NO, None
    return Verdict.YES, None
