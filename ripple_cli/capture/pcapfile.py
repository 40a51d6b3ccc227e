"""pcap and pcapng files as frames: (time in ns, link type, frame bytes).

Both readers stream: they hold one record (plus at most one read chunk) at a
time, so memory does not grow with the file, and on a pipe (`tcpdump -U -w -
| ripple decode -`) each packet comes out as soon as its record is complete.
Problems with the file itself (a truncated last record, garbage after a
valid magic) come out as a `CaptureNote`; they are never raised.  A damaged
record or block does not end the reading: the reader resynchronizes at the
next plausible one (a pcap record header followed by another, or the end;
a pcapng block of a known type whose two lengths agree), with one note
naming the offset and the bytes skipped.  Only damage pays for this: the
loops over whole records are unchanged.

The framing and the blocks read (section and interface headers, the
options that say how to read timestamps) are ripple's own, because dpkt's
readers do not fit (checked against dpkt 1.9.8):

- `dpkt.pcap.Reader` yields a truncated last record as if it were whole (it
  never compares what `read` returned with the record's length), gives float
  seconds, and builds a header object per packet (several times slower than
  the struct loop below);
- `dpkt.pcapng.Reader` keeps the link type and timestamp resolution of the
  first interface only, reads only the first section's byte order, skips
  Simple and obsolete Packet Blocks, and loses nanoseconds in a float;
- `dpkt.pcap.UniversalReader` seeks back to the start: not on a pipe;
- `dpkt.pcapng.InterfaceDescriptionBlock` raises on a comment that is not
  UTF-8, which loses the interface and every packet on it.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Iterator
from typing import BinaryIO

from ripple_cli.capture.events import CaptureNote
from ripple_cli.capture.formats import PCAP_MAGICS, PCAPNG_MAGIC
from ripple_cli.terminal.words import plural

LinkFrame = tuple[int, int, bytes]  # (time_ns, link type, frame bytes)

CHUNK_SIZE = 1 << 16
# A record longer than this is not a packet but a damaged length field
# (Wireshark's limit too); refusing it keeps memory bounded.
MAX_PACKET = 262144
MAX_BLOCK = 16 << 20

_PCAPNG_BOM = 0x1A2B3C4D
_BT_SHB = 0x0A0D0D0A
_BT_IDB = 1
_BT_OPB = 2  # the obsolete Packet Block
_BT_SPB = 3
_BT_EPB = 6
# The smallest valid block of each type: fixed fields and both lengths.
_MIN_BLOCK = {_BT_SHB: 28, _BT_IDB: 20, _BT_OPB: 32, _BT_SPB: 16, _BT_EPB: 32}
# The block types of pcapng's specification (and its custom blocks): where
# resynchronizing may resume.
_KNOWN_BLOCKS = frozenset({_BT_SHB, _BT_IDB, _BT_OPB, _BT_SPB, 4, 5, _BT_EPB, 9, 10, 0xBAD, 0x40000BAD})
_OPT_IF_TSRESOL = 9
_OPT_IF_TSOFFSET = 14
# Where a block of a known type may start, by section byte order (little?).
_BLOCK_STARTS = {
    little: re.compile(b"|".join(re.escape(struct.pack("<I" if little else ">I", t)) for t in sorted(_KNOWN_BLOCKS)))
    for little in (True, False)
}


class _Input:
    """A file read forward into a sliding buffer.

    With `read1` (buffered files, stdin) it asks for big chunks and gets what
    is there; without it (a plain `read(n)` object, which may wait for all n
    bytes) it asks for exactly the bytes of the next record, so that a live
    source never waits for bytes that have not been written yet.
    """

    def __init__(self, f: BinaryIO, head: bytes) -> None:
        read1 = getattr(f, "read1", None)
        self._read: Callable[[int], bytes] = read1 if read1 is not None else f.read
        self._greedy = read1 is not None
        self.buf = bytes(head)
        self.base = 0  # file offset of buf[0]

    def refill(self, pos: int, need: int) -> bool:
        """Make `need` bytes available from `pos`, which becomes 0 (the
        buffer is `self.buf` afterwards).  False: the file ended first."""
        rest = self.buf[pos:]
        self.base += pos
        parts = [rest]
        missing = need - len(rest)
        while missing > 0:
            chunk = self._read(max(missing, CHUNK_SIZE) if self._greedy else missing)
            if not chunk:
                break
            parts.append(chunk)
            missing -= len(chunk)
        self.buf = b"".join(parts) if len(parts) > 1 else rest
        return missing <= 0


def _bad(time_ns: int | None, detail: str, skipped: int = 0) -> CaptureNote:
    """The file is damaged."""
    return CaptureNote(None, time_ns, "bad_capture", detail, error=True, skipped=skipped)


class _Cut:
    """Packets a capture kept only the start of (its record's captured
    length under the packet's): what a stream misses without them is a hole,
    and the note at the end says where the holes came from.  It names the
    most bytes kept of such a packet, not the header's snap length, which
    tools that cut packets afterwards (editcap -s) leave as it was."""

    __slots__ = ("kept", "packets", "time_ns")

    def __init__(self) -> None:
        self.packets = 0
        self.kept = 0
        self.time_ns: int | None = None

    def add(self, caplen: int, time_ns: int) -> None:
        self.packets += 1
        self.kept = max(self.kept, caplen)
        self.time_ns = time_ns

    def undo(self) -> None:
        """The last packet counted was not cut but damaged: a pcap record
        whose length field was made short, so that garbage follows it."""
        self.packets -= 1

    def note(self) -> CaptureNote:
        return CaptureNote(
            None,
            self.time_ns,
            "snap_length",
            f"{plural(self.packets, 'packet')} cut short when captured (at most {plural(self.kept, 'byte')} "
            "kept of each): what they lost is missing from their streams (capture with tcpdump -s 0)",
        )


def _resumed(offset: int, resumed: int | None) -> int:
    return 0 if resumed is None else resumed - offset


# How far from the last good record's time a record's may be and still be
# plausible when resynchronizing: a capture may well last a week.
_PLAUSIBLE_SECONDS = 7 * 86400


def _skipped(offset: int, resumed: int | None) -> str:
    if resumed is None:
        return "no plausible record after it: the rest of the file is skipped"
    return f"skipped {plural(resumed - offset, 'byte')} to the next plausible record at offset {resumed}"


def _resync(
    inp: _Input, pos: int, plausible: Callable[[bytes, int], int | None], starts: re.Pattern[bytes] | None = None
) -> int | None:
    """The first position after `pos` where `plausible(buf, at)` gives the
    record's size and another plausible record (or the end of the file)
    follows it; `inp.buf` is refilled as needed (positions are relative to
    the new buffer).  None: none left.  Every byte offset is a candidate
    (damage need not keep the file's alignment: a byte dropped from a
    pcapng shifts every block after it off its 4-byte grid), or, with
    `starts`, the offsets where that pattern matches, found in C, so that
    a long damaged stretch is crossed at the speed of `re`."""
    at = pos + 1
    span = 2 * (MAX_PACKET + 64)  # a candidate, the record after it, and slack
    while True:
        if len(inp.buf) - at <= span:  # (`<` looped for ever once a stretch of garbage passed 2 spans)
            more = inp.refill(at, 2 * span)  # twice: each refill is followed by `span` positions scanned
            at = 0
            if not inp.buf:
                return None
        else:
            more = True
        buf = inp.buf
        stop = len(buf) - span if more else len(buf)
        while at < stop:
            if starts is not None:
                m = starts.search(buf, at, stop + 3)
                if m is None or m.start() >= stop:
                    at = stop
                    break
                at = m.start()
            size = plausible(buf, at)
            if size is not None:
                nxt = at + size
                if (nxt == len(buf) and not more) or (nxt < len(buf) and plausible(buf, nxt) is not None):
                    return at
            at += 1
        if not more:
            return None


def _truncated(time_ns: int | None, offset: int, what: str, need: int, have: int) -> CaptureNote:
    # Warning only: a capture cut short (tcpdump killed, a file still being
    # written) is ordinary, and every whole record before it was read.
    # A file cut inside its file header had nothing to read: it is damaged.
    detail = f"the capture ends inside {what} at offset {offset}: {have} of {need} bytes"
    if offset == 0:
        return _bad(time_ns, detail)
    return CaptureNote(None, time_ns, "capture_truncated", detail)


class _PcapHeader:
    """What a pcap file header says about the records after it."""

    __slots__ = ("frac_max", "limit", "linktype", "magic_secs", "scale", "unpack")

    def __init__(self, b: bytes, at: int) -> None:
        """The header at `at` (24 bytes there, a known magic); ValueError
        with the reason when it is not one."""
        order, nano = PCAP_MAGICS[b[at : at + 4]]
        major, minor, _zone, _sigfigs, snaplen, network = struct.unpack_from(order + "HHiIII", b, at + 4)
        if major != 2:
            raise ValueError(f"version {major}.{minor} (expected 2.4)")
        self.linktype = network & 0xFFFF  # the upper bits say whether frames end with an FCS
        self.scale = 1 if nano else 1000
        self.frac_max = 1_000_000_000 if nano else 1_000_000
        self.limit = min(max(snaplen, MAX_PACKET), MAX_BLOCK)  # a damaged snaplen must not lift the bound
        self.unpack = struct.Struct(order + "IIII").unpack_from
        # A record whose seconds read as a magic may be the header of a
        # second file joined on by `cat` (2055 is a rare time for a packet).
        self.magic_secs = frozenset(struct.unpack(order + "I", m)[0] for m in PCAP_MAGICS)


def read_pcap(f: BinaryIO, head: bytes = b"") -> Iterator[LinkFrame | CaptureNote]:
    """The frames of a pcap file (either byte order, microsecond or
    nanosecond timestamps).  `head`: bytes already read from `f` (the magic).
    Files joined by `cat` are read on: each header after the first is noted
    (a warning) and says how to read the records after it.  Packets cut
    short by the snap length are counted in one note at the end."""
    cut = _Cut()
    yield from _pcap_records(f, head, cut)
    if cut.packets:
        yield cut.note()


def _pcap_records(f: BinaryIO, head: bytes, cut: _Cut) -> Iterator[LinkFrame | CaptureNote]:
    inp = _Input(f, head)
    if not inp.refill(0, 24):
        yield _truncated(None, 0, "the pcap file header", 24, len(inp.buf))
        return
    buf = inp.buf
    if buf[:4] not in PCAP_MAGICS:
        yield _bad(None, "not a pcap file: no pcap magic")
        return
    try:
        hdr = _PcapHeader(buf, 0)
    except ValueError as e:
        yield _bad(None, f"bad pcap file header: {e}")
        return
    pos = 24
    time_ns = 0
    seen: int | None = None  # time_ns once a record was read: what notes give as their time
    cut_end = -1  # the file offset where the last record counted as cut ends
    # The loop's names for what the header says (locals: faster per record).
    unpack, magic_secs, limit, scale, linktype = hdr.unpack, hdr.magic_secs, hdr.limit, hdr.scale, hdr.linktype

    def plausible(b: bytes, at: int) -> int | None:
        if len(b) - at < 16:
            return None
        if b[at : at + 4] in PCAP_MAGICS:
            return 24 if _header_at(b, at) else None
        s, f, cap, orig = hdr.unpack(b, at)
        if cap > hdr.limit or cap > orig or orig > MAX_BLOCK or f >= hdr.frac_max:
            return None
        if time_ns and abs(s - time_ns // 1_000_000_000) > _PLAUSIBLE_SECONDS:
            return None
        return 16 + int(cap)

    while True:
        if len(buf) - pos < 16:
            if not inp.refill(pos, 16):
                if inp.buf:
                    yield _truncated(seen, inp.base, "a record header", 16, len(inp.buf))
                return
            buf, pos = inp.buf, 0
        sec, frac, caplen, origlen = unpack(buf, pos)
        if sec in magic_secs:
            if len(buf) - pos < 24 and inp.refill(pos, 24):
                buf, pos = inp.buf, 0
            if _header_at(buf, pos):
                hdr = _PcapHeader(buf, pos)
                unpack, magic_secs, limit, scale, linktype = (
                    hdr.unpack,
                    hdr.magic_secs,
                    hdr.limit,
                    hdr.scale,
                    hdr.linktype,
                )
                yield CaptureNote(
                    None,
                    seen,
                    "pcap_header",
                    f"another pcap file header at offset {inp.base + pos} (files joined?): read on with it",
                )
                pos += 24
                continue
        if caplen > limit or caplen > origlen:
            offset = inp.base + pos
            if offset == cut_end:
                cut.undo()
            why = f"length {caplen} is more than {limit}" if caplen > limit else f"length {caplen} > {origlen}"
            found = _resync(inp, pos, plausible)
            resumed = None if found is None else inp.base + found
            yield _bad(
                seen,
                f"bad pcap record at offset {offset}: {why}; {_skipped(offset, resumed)}",
                _resumed(offset, resumed),
            )
            if found is None:
                return
            buf, pos = inp.buf, found
            continue
        end = pos + 16 + caplen
        if end > len(buf):
            if not inp.refill(pos, 16 + caplen):
                yield _truncated(seen, inp.base, "a packet record", 16 + caplen, len(inp.buf))
                return
            buf, pos, end = inp.buf, 0, 16 + caplen
        time_ns = seen = sec * 1_000_000_000 + frac * scale
        if caplen < origlen:
            cut.add(caplen, time_ns)
            cut_end = inp.base + end
        yield (time_ns, linktype, buf[pos + 16 : end])
        pos = end


def _header_at(b: bytes, at: int) -> bool:
    """Whether a whole pcap file header (a magic, version 2) is at `at`."""
    if len(b) - at < 24 or b[at : at + 4] not in PCAP_MAGICS:
        return False
    try:
        _PcapHeader(b, at)
    except ValueError:
        return False
    return True


class _Interface:
    __slots__ = ("linktype", "offset_ns", "snaplen", "to_ns")

    def __init__(self, linktype: int, snaplen: int, to_ns: Callable[[int], int], offset_ns: int) -> None:
        self.linktype = linktype
        self.snaplen = snaplen
        self.to_ns = to_ns
        self.offset_ns = offset_ns


def _resolution(code: int) -> Callable[[int], int]:
    """if_tsresol: the high bit says a negative power of 2, else of 10."""
    exp = code & 0x7F
    if code & 0x80:
        return lambda t: (t * 1_000_000_000) >> exp
    if exp <= 9:
        mul = 10 ** (9 - exp)
        return lambda t: t * mul
    div = 10 ** (exp - 9)
    return lambda t: t // div


def _interface(block: bytes, little: bool) -> _Interface:
    """An Interface Description Block: its link type, snap length and the
    options that say how to read its timestamps; the other options (a
    comment, a name: text that need not even be UTF-8) are not read.
    Raises struct.error on a block too short for its fields."""
    order = "<" if little else ">"
    linktype, _reserved, snaplen = struct.unpack_from(order + "HHI", block, 8)
    to_ns = _resolution(6)  # the default: microseconds
    offset_ns = 0
    at, end = 16, len(block) - 4
    while at + 4 <= end:
        code, size = struct.unpack_from(order + "HH", block, at)
        if code == 0:  # opt_endofopt
            break
        data = block[at + 4 : at + 4 + size]
        if code == _OPT_IF_TSRESOL and len(data) >= 1:
            to_ns = _resolution(data[0])
        elif code == _OPT_IF_TSOFFSET and len(data) >= 8:
            offset_ns = struct.unpack(order + "q", data[:8])[0] * 1_000_000_000
        at += 4 + (size + 3) // 4 * 4
    return _Interface(linktype, snaplen, to_ns, offset_ns)


def read_pcapng(f: BinaryIO, head: bytes = b"") -> Iterator[LinkFrame | CaptureNote]:
    """The frames of a pcapng file: every section (each with its own byte
    order) and every interface (each with its own link type and timestamp
    resolution); Enhanced, Simple and obsolete Packet Blocks.  A Simple
    Packet Block has no timestamp: it gets the previous packet's time.
    Packets cut short by the snap length are counted in one note at the
    end."""
    cut = _Cut()
    yield from _pcapng_blocks(f, head, cut)
    if cut.packets:
        yield cut.note()


def _pcapng_blocks(f: BinaryIO, head: bytes, cut: _Cut) -> Iterator[LinkFrame | CaptureNote]:
    inp = _Input(f, head)
    buf = inp.buf
    pos = 0
    little = True
    interfaces: list[_Interface] = []
    time_ns = 0
    seen: int | None = None  # time_ns once a packet was read: what notes give as their time

    def plausible(b: bytes, at: int) -> int | None:
        """A block's length, if a plausible block starts at `at`: a known
        type, its two lengths equal, a multiple of 4, whole in `b`."""
        if len(b) - at < 12:
            return None
        order = "<" if little else ">"
        btype, blen = struct.unpack_from(order + "II", b, at)
        if btype not in _KNOWN_BLOCKS or blen < _MIN_BLOCK.get(btype, 12) or blen % 4 or at + blen > len(b):
            return None
        if btype == _BT_SHB and b[at + 8 : at + 12] not in (b"\x4d\x3c\x2b\x1a", b"\x1a\x2b\x3c\x4d"):
            return None
        (trailer,) = struct.unpack_from(order + "I", b, at + blen - 4)
        return blen if trailer == blen else None

    while True:
        if len(buf) - pos < 12:
            if not inp.refill(pos, 12):
                if inp.buf:
                    yield _truncated(seen, inp.base, "a block header", 12, len(inp.buf))
                return
            buf, pos = inp.buf, 0
        offset = inp.base + pos
        damage = ""
        if buf[pos : pos + 4] == PCAPNG_MAGIC:
            # A new section: its byte-order magic says how to read everything
            # in it, this block's length included.
            bom = buf[pos + 8 : pos + 12]
            if bom == b"\x4d\x3c\x2b\x1a":
                little = True
            elif bom == b"\x1a\x2b\x3c\x4d":
                little = False
            else:
                damage = f"bad pcapng section header at offset {offset}: no byte-order magic"
            interfaces = []
        order = "<" if little else ">"
        btype, blen = struct.unpack_from(order + "II", buf, pos)
        if not damage and (blen < _MIN_BLOCK.get(btype, 12) or blen % 4 or blen > MAX_BLOCK):
            damage = f"bad pcapng block at offset {offset}: length {blen}"
        if damage:
            found = _resync(inp, pos, plausible, _BLOCK_STARTS[little])
            resumed = None if found is None else inp.base + found
            yield _bad(seen, f"{damage}; {_skipped(offset, resumed)}", _resumed(offset, resumed))
            if found is None:
                return
            buf, pos, damage = inp.buf, found, ""
            continue
        if len(buf) - pos < blen:
            if not inp.refill(pos, blen):
                yield _truncated(seen, inp.base, "a pcapng block", blen, len(inp.buf))
                return
            buf, pos = inp.buf, 0
        end = pos + blen
        (trailer,) = struct.unpack_from(order + "I", buf, end - 4)
        if trailer != blen:
            found = _resync(inp, pos, plausible, _BLOCK_STARTS[little])
            resumed = None if found is None else inp.base + found
            yield _bad(
                seen,
                f"bad pcapng block at offset {offset}: lengths {blen} and {trailer} differ; "
                + _skipped(offset, resumed),
                _resumed(offset, resumed),
            )
            if found is None:
                return
            buf, pos = inp.buf, found
            continue
        if btype in (_BT_EPB, _BT_OPB):
            if btype == _BT_EPB:
                iface_id, ts_high, ts_low, caplen, origlen = struct.unpack_from(order + "IIIII", buf, pos + 8)
            else:
                iface_id, _drops, ts_high, ts_low, caplen, origlen = struct.unpack_from(order + "HHIIII", buf, pos + 8)
            if caplen > blen - 32:
                yield _bad(seen, f"bad pcapng packet block at offset {offset}: length {caplen}; skipped")
            elif iface_id >= len(interfaces):
                yield _bad(seen, f"packet at offset {offset} is on undeclared interface {iface_id}")
            else:
                iface = interfaces[iface_id]
                time_ns = seen = iface.to_ns((ts_high << 32) | ts_low) + iface.offset_ns
                if caplen < origlen:
                    cut.add(caplen, time_ns)
                yield (time_ns, iface.linktype, buf[pos + 28 : pos + 28 + caplen])
        elif btype == _BT_SPB:
            if not interfaces:
                yield _bad(seen, f"packet at offset {offset} before any interface")
            else:
                (origlen,) = struct.unpack_from(order + "I", buf, pos + 8)
                iface = interfaces[0]
                caplen = min(origlen, blen - 16, iface.snaplen or MAX_BLOCK)
                if caplen < origlen:
                    cut.add(caplen, time_ns)
                yield (time_ns, iface.linktype, buf[pos + 12 : pos + 12 + caplen])
        elif btype == _BT_SHB:
            major = struct.unpack_from(order + "H", buf, pos + 12)[0]
            if major != 1:
                yield _bad(seen, f"pcapng section at offset {offset} has version {major}")
                return
        elif btype == _BT_IDB:
            try:
                interfaces.append(_interface(buf[pos:end], little))
            except struct.error as e:
                yield _bad(seen, f"bad pcapng interface block at offset {offset}: {e}; its packets are skipped")
        # Other blocks (name resolution, statistics, secrets, custom) carry no packets.
        pos = end
