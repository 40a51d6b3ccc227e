"""IPv4 and IPv6 fragments back to their datagrams, within bounds.

A mirror's tunnel adds 50 bytes or more to each packet, so the mirror's
outer packets are often fragmented; a path with a small MTU fragments plain
ones.  `capture.packets` hands each fragment over as a `Fragment`; the
`Defragmenter` keeps the datagrams being rebuilt and gives back each whole
IP packet, to be decoded like any other.

Bounds, so that hostile or broken captures stay small and linear: a
datagram is at most 65,535 bytes after its header (as IP allows); at most
`max_bytes` are buffered in all (a datagram's buffer is as long as its
furthest fragment reaches), and at most `max_datagrams` datagrams are open;
beyond either, the oldest is dropped.  A datagram still incomplete
`timeout_ns` of capture time after its first fragment is dropped too (Linux
waits 30 s).  Each dropped datagram is a note (`ip_fragment`, a warning: its
bytes are missing from the stream).  Fragments that overlap with different
bytes (RFC 5722: an attack or a broken sender) drop their datagram and are a
problem (`fragment_overlap`), as is a fragment past the end a last fragment
set or past 65,535 bytes (`bad_fragment`).  Identical overlaps, such as a
fragment captured twice, are merged silently.
"""

from __future__ import annotations

import socket
from collections import OrderedDict

from ripple_cli.capture.events import CaptureNote

MAX_DATAGRAM = 65535
FragmentKey = tuple[bytes, bytes, int, int]  # (src, dst, protocol or 0 for IPv6, identification)


class Fragment:
    """One fragment: the datagram it belongs to, where its bytes go, and
    (for the fragment at offset 0) the header the whole datagram gets."""

    __slots__ = ("data", "head", "key", "more", "offset")

    def __init__(self, key: FragmentKey, offset: int, more: bool, head: bytes | None, data: bytes) -> None:
        self.key = key
        self.offset = offset
        self.more = more
        self.head = head  # an IPv4 header, or an IPv6 fixed header whose next header is the fragment's
        self.data = data


class _Datagram:
    __slots__ = ("buf", "filled", "first_ns", "frames", "head", "mask", "total")

    def __init__(self, time_ns: int, frame: int) -> None:
        self.buf = bytearray()
        self.mask = bytearray()  # 1 where buf holds a received byte
        self.filled = 0
        self.total = -1  # the length, once the last fragment is seen
        self.head: bytes | None = None
        self.first_ns = time_ns
        self.frames = [frame, frame]  # the first and last frame numbers, for notes

    def conflicts(self, a: int, data: bytes) -> bool:
        """Whether `data` at `a` differs from bytes already received there:
        compared run by run of received bytes, each run in one slice."""
        mask = self.mask
        b = min(a + len(data), len(mask))
        i = a
        while i < b:
            start = mask.find(1, i, b)
            if start < 0:
                return False
            end = mask.find(0, start, b)
            if end < 0:
                end = b
            if self.buf[start:end] != data[start - a : end - a]:
                return True
            i = end
        return False

    def write(self, a: int, data: bytes) -> int:
        """Stores `data` at `a`; the buffer growth, in bytes."""
        b = a + len(data)
        grown = max(0, b - len(self.buf))
        if grown:
            self.buf.extend(bytes(grown))
            self.mask.extend(bytes(grown))
        self.filled += (b - a) - self.mask.count(1, a, b)
        self.buf[a:b] = data
        self.mask[a:b] = b"\x01" * (b - a)
        return 2 * grown

    def whole(self) -> bytes | None:
        if self.total < 0 or self.filled != self.total or self.head is None:
            return None
        head = self.head
        if head[0] >> 4 == 4:
            size = len(head) + self.total
            head = head[:2] + size.to_bytes(2, "big") + head[4:6] + b"\x00\x00" + head[8:]
        else:
            head = head[:4] + self.total.to_bytes(2, "big") + head[6:]
        return head + bytes(self.buf[: self.total])


def _label(key: FragmentKey) -> str:
    family = socket.AF_INET if len(key[0]) == 4 else socket.AF_INET6
    version = 4 if family == socket.AF_INET else 6
    return f"IPv{version} {socket.inet_ntop(family, key[0])} -> {socket.inet_ntop(family, key[1])} id {key[3]}"


class Defragmenter:
    def __init__(self, max_datagrams: int = 4096, max_bytes: int = 64 << 20, timeout_ns: int = 30_000_000_000) -> None:
        self.max_datagrams = max_datagrams
        self.max_bytes = max_bytes
        self.timeout_ns = timeout_ns
        self.open: OrderedDict[FragmentKey, _Datagram] = OrderedDict()  # oldest first
        self.size = 0  # bytes buffered

    def add(self, frag: Fragment, time_ns: int, frame: int) -> tuple[bytes | None, list[CaptureNote]]:
        """Takes the fragment seen in capture frame number `frame` (from 1):
        the whole IP packet when it completes one, and notes."""
        notes: list[CaptureNote] = []
        self._expire(time_ns, notes)
        key = frag.key
        dg = self.open.get(key)
        if dg is None:
            while len(self.open) >= self.max_datagrams:
                self._drop(next(iter(self.open)), time_ns, "too many datagrams being reassembled", notes)
            dg = self.open[key] = _Datagram(time_ns, frame)
        dg.frames[1] = frame
        a, data = frag.offset, frag.data
        b = a + len(data)
        problem = ""
        if b > MAX_DATAGRAM:
            problem = f"a fragment reaching byte {b}, past the {MAX_DATAGRAM} an IP datagram can hold"
        elif (dg.total >= 0 and b > dg.total) or (not frag.more and b < len(dg.buf) and dg.mask.count(1, b)):
            problem = "a fragment past the end its last fragment set"
        elif not frag.more and dg.total >= 0 and b != dg.total:
            problem = f"two last fragments, ending at {dg.total} and {b}"
        if problem:
            self._fail(key, "bad_fragment", problem, time_ns, frame, notes)
            return None, notes
        if dg.conflicts(a, data):
            where = f"bytes {a}-{b - 1}"
            self._fail(
                key, "fragment_overlap", f"fragments overlap with different bytes ({where})", time_ns, frame, notes
            )
            return None, notes
        self.size += dg.write(a, data)
        if not frag.more:
            dg.total = b
        if frag.head is not None:
            dg.head = frag.head
        whole = dg.whole()
        if whole is not None:
            self._forget(key)
        else:
            while self.size > self.max_bytes and self.open:
                self._drop(next(iter(self.open)), time_ns, "over the fragment memory bound", notes)
        return whole, notes

    def finish(self, time_ns: int) -> list[CaptureNote]:
        """Notes for the datagrams the capture ended before completing."""
        notes: list[CaptureNote] = []
        while self.open:
            self._drop(next(iter(self.open)), time_ns, "at the end of the capture", notes)
        return notes

    def _expire(self, time_ns: int, notes: list[CaptureNote]) -> None:
        limit = time_ns - self.timeout_ns
        while self.open:
            key, dg = next(iter(self.open.items()))
            if dg.first_ns >= limit:
                break
            self._drop(key, time_ns, f"after {self.timeout_ns / 1e9:g} s", notes)

    def _forget(self, key: FragmentKey) -> None:
        dg = self.open.pop(key)
        self.size -= 2 * len(dg.buf)

    def _drop(self, key: FragmentKey, time_ns: int, why: str, notes: list[CaptureNote]) -> None:
        dg = self.open[key]
        self._forget(key)
        total = str(dg.total) if dg.total >= 0 else "?"
        detail = (
            f"{_label(key)} (frames {dg.frames[0]}-{dg.frames[1]}) incomplete {why}: "
            f"{dg.filled} of {total} bytes, missing from the stream"
        )
        notes.append(CaptureNote(None, time_ns, "ip_fragment", detail))

    def _fail(self, key: FragmentKey, kind: str, why: str, time_ns: int, frame: int, notes: list[CaptureNote]) -> None:
        first = self.open[key].frames[0]
        self._forget(key)
        detail = f"{_label(key)}: {why} in frame {frame} (datagram from frame {first} dropped)"
        notes.append(CaptureNote(None, time_ns, kind, detail, error=True))
