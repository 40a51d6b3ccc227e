"""Finding envelopes in a byte stream fed in any chunking.

`FrameDecoder` holds only what it has not yet been able to frame: at most
one envelope (bounded by the maximum payload length) plus one chunk.  After
any damage it resynchronizes on the next offset where a whole envelope with
a valid CRC starts, so that no intact envelope after the damage is lost.

Its buffer keeps its size from chunk to chunk: what is pending moves to the
front only when a chunk would not fit after it.  Letting a bytearray shrink
(del of the framed prefix) and grow again for every chunk cost more than
reading the stream: each round frees and reallocates a chunk's worth of
memory, which the allocator hands back to the system and faults in again.

A chunk that is an mmap window of a file (sources/files.py) is not copied:
the decoder frames in the window itself (it *borrows* it).  Only the seam
between two windows is copied: the envelope cut by it, taken from the
bytes left of the last window and the head of the next, after which the
decoder moves on into the next window.
"""

from __future__ import annotations

import mmap

from ripple_cli.codec.crc import Buffer, crc32c
from ripple_cli.codec.crcrange import STEP, RangeCrcs, prefixes
from ripple_cli.codec.envelope import (
    CRC,
    DEFAULT_MAX_PAYLOAD,
    HEADER,
    HEADER_SIZE,
    MAGIC,
    OVERHEAD,
    VERSION,
    Frame,
)
from ripple_cli.codec.fast import speedups
from ripple_cli.codec.problems import Problem, Severity, then_hole

# The C lane's resync (find_envelope's too): the same search as the Python
# below (tests compare), one call per damaged region instead of a Python
# round per magic in it (issue 15: a stream of headers claiming long
# payloads decoded at 13x a clean stream's time per byte).
_accel = speedups()

# What of a window is copied at first to join it to the bytes left of the
# last one; more when the envelope across the seam is longer.
SEAM = 64 << 10


class FrameDecoder:
    def __init__(self, max_payload: int = DEFAULT_MAX_PAYLOAD, start_offset: int = 0) -> None:
        self.max_payload = max_payload
        self._own = bytearray()
        self._buf: bytearray | mmap.mmap = self._own  # _own, or a borrowed window
        # A window whose head, up to index k, ends _own (a seam being
        # framed): (window, k).  The decoder moves into it once what is left
        # to frame lies in that head.
        self._next: tuple[mmap.mmap, int] | None = None
        self._end = 0  # bytes of _buf in use: _buf[_end:] is room for the next chunks
        self._pos = 0  # index in _buf of the first byte not yet framed
        self._base = start_offset  # stream offset of _buf[0]
        # An open damaged region: (stream offset, kind, detail), closed when
        # the next whole envelope is found or the stream ends.
        self._damage: tuple[int, str, str] | None = None
        # While it is open, the CRCs of the stream's prefixes from where the
        # resync began: a candidate's CRC then costs the same whatever the
        # payload its header claims (crcrange.py), so that resync over
        # headers claiming large payloads stays linear.
        self._prefixes: RangeCrcs | None = None

    @property
    def offset(self) -> int:
        """Stream offset of the first byte not yet framed."""
        return self._base + self._pos

    @property
    def buffered(self) -> int:
        return self._end - self._pos

    def feed(self, data: Buffer) -> list[Frame | Problem]:
        self.append(data)
        out: list[Frame | Problem] = []
        self._run(out, final=False)
        self.compact()
        return out

    def finish(self) -> list[Frame | Problem]:
        """The stream has ended: what is left is a truncated tail or garbage,
        unless whole envelopes can still be found in it."""
        out: list[Frame | Problem] = []
        self._run(out, final=True)
        self.drop_all()
        return out

    def gap(self, size: int) -> list[Frame | Problem]:
        """`size` bytes of the stream were lost (a hole in a capture, input
        dropped by a busy tap).  What is framed before the hole comes out;
        the envelope cut by it is reported with the hole, and decoding
        resynchronizes on the first whole envelope after it."""
        out: list[Frame | Problem] = []
        self._run(out, final=False)
        self.hole(size)
        return out

    # The same three, one item at a time, so that a fast lane can take the
    # boring envelopes in between (StreamDecoder.steps): append, then step
    # until it returns nothing, then compact (feed), drop_all (finish) or
    # hole (gap).

    def append(self, data: Buffer) -> None:
        if self._next is not None:  # not framed past the seam: the rest of that window first
            self._copy_next(len(self._next[0]))
        if isinstance(data, mmap.mmap):
            if self._pos == self._end and self._prefixes is None:
                self._base += self._end
                self._buf, self._pos, self._end = data, 0, len(data)
                return
            head = min(len(data), SEAM)
            self._copy(memoryview(data)[:head])
            self._next = (data, head) if head < len(data) else None
            return
        self._copy(data)

    def _copy(self, data: bytes | bytearray | memoryview) -> None:
        if self._buf is not self._own:
            self._unborrow()
        k = len(data)
        if self._end + k > len(self._own):
            self._make_room(k)
        self._own[self._end : self._end + k] = data  # same length: a copy, no resizing
        self._end += k

    def _unborrow(self) -> None:
        """What is left of the borrowed window, into _own."""
        window = self._buf
        keep = self._keep()
        self._own[: self._end - keep] = window[keep : self._end]
        self._buf = self._own
        self._base += keep
        self._pos, self._end = self._pos - keep, self._end - keep

    def _copy_next(self, upto: int) -> None:
        """More of the window across the seam into _own, up to index `upto`."""
        assert self._next is not None
        window, k = self._next
        self._next = None
        with memoryview(window) as view:
            self._copy(view[k:upto])
        if upto < len(window):
            self._next = (window, upto)

    def _cross_seam(self) -> None:
        """Framing stopped short of the end of _own with a window after it:
        into the window, when what is left to frame lies in its head (and no
        damaged region needs older bytes); else more of its head is copied."""
        assert self._next is not None
        window, k = self._next
        at = self._end - k  # index in _own of window[0]
        if self._pos >= at and self._damage is None:
            self._next = None
            self._base += at
            self._buf, self._pos, self._end = window, self._pos - at, len(window)
            return
        self._copy_next(min(len(window), 2 * k + SEAM))

    def _keep(self) -> int:
        """The first index of the buffer still needed: the next byte to
        frame, or, during a resync over long claimed payloads, the mark its
        range CRCs start from."""
        keep = self._pos
        pre = self._prefixes
        if pre is not None:  # a later candidate's range CRC needs the bytes from the mark before it on
            start = self._base + self._pos
            mark = start - (start - pre.origin) % STEP
            pre.extend(self._buf, self._base, mark)
            keep = min(keep, mark - self._base)  # not `covered`: marks may reach past _pos
        return keep

    def _make_room(self, k: int) -> None:
        keep = self._keep()
        pending = self._end - keep
        own = self._own
        if keep:
            own[:pending] = own[keep : self._end]
            self._base += keep
            self._pos, self._end = self._pos - keep, pending
        if pending + k > len(own):
            own += bytes(max(pending + k, 2 * len(own)) - len(own))

    def step(self, final: bool) -> list[Frame | Problem]:
        """At most one Frame or Problem, or nothing: more bytes are needed
        (or, when final, everything is done)."""
        out: list[Frame | Problem] = []
        self._run(out, final, limit=1)
        return out

    def lane_window(self) -> tuple[bytearray | mmap.mmap, int, int] | None:
        """The buffer, the index where the next envelope should start and
        the end of the bytes in use, or None while a damaged region is open
        (only the Python scan resynchronizes)."""
        return None if self._damage is not None else (self._buf, self._pos, self._end)

    def advance(self, pos: int) -> None:
        """Whole envelopes up to index `pos` were consumed by a fast lane."""
        self._pos = pos

    def compact(self) -> None:
        if self._pos == self._end and self._next is None:  # all framed: the whole buffer is room again
            self._base += self._pos
            self._pos = self._end = 0
            self._buf = self._own  # a borrowed window is let go

    def drop_all(self) -> None:
        self._base += self._end
        self._own = self._buf = bytearray()
        self._next = None
        self._pos = self._end = 0
        self._prefixes = None

    def hole(self, size: int) -> None:
        if self._next is not None:
            self._copy_next(len(self._next[0]))
        hole_at = self._base + self._end
        detail = f"{size} bytes missing from the stream at offset {hole_at}"
        if self._damage is not None:
            start, kind, first = self._damage
            self._damage = (start, kind, then_hole(first, detail, size))
        else:
            self._damage = (self._base + self._pos, "gap", detail)
        self._base = hole_at + size
        self._own = self._buf = bytearray()
        self._next = None
        self._pos = self._end = 0
        self._prefixes = None

    def join_midstream(self) -> None:
        """The stream is entered part-way (a connection already open when a
        capture began): skip to the first whole envelope, quietly if the
        stream happens to start on one."""
        self._damage = (self._base + self._pos, "midstream", "joined the stream part-way")

    def _open_damage(self, pos: int, kind: str, detail: str) -> None:
        self._damage = (self._base + pos, kind, detail)

    def _close_damage(self, pos: int, out: list[Frame | Problem], found: bool = False) -> None:
        """`found`: closed by a whole envelope at `pos` (not by the end)."""
        assert self._damage is not None
        start, kind, detail = self._damage
        if found and kind == "truncated":
            # The stream did not end inside that envelope: whole ones follow,
            # so the length it claimed is what was wrong.
            need = detail.partition(": ")[2]  # "it needs N bytes, M remain"
            kind = "bad_length"
            detail = (
                f"payload length runs past the end of the stream ({need}), "
                "yet a whole envelope follows: the length is wrong"
            )
        skipped = self._base + pos - start
        self._damage = None
        self._prefixes = None
        if kind == "midstream":
            if skipped:
                out.append(
                    Problem(
                        start,
                        kind,
                        f"{detail}: no envelope boundary before offset {start + skipped}",
                        skipped=skipped,
                        severity=Severity.WARNING,
                    )
                )
            return
        out.append(Problem(start, kind, detail, skipped=skipped))

    def _check(self, buf: Buffer, p: int, n: int, final: bool, resync: bool = False) -> tuple[str, str] | bool | None:
        """Is there a whole valid envelope at p?  None: yes.  False: not
        enough bytes yet.  (kind, detail): no, and why.  `resync`: a
        candidate after damage, its CRC from the prefixes."""
        if n - p < HEADER_SIZE:
            if not final:
                return False
            head = bytes(buf[p : min(p + 4, n)])
            if MAGIC.startswith(head):
                return "truncated", f"stream ends inside an envelope header ({n - p} of {HEADER_SIZE} bytes)"
            return "bad_magic", f"bad magic {head.hex(' ')} (expected 52 49 50 50, RIPP)"
        magic, version, _tag, _flags, _seq, _time, _fp, length = HEADER.unpack_from(buf, p)
        if magic != MAGIC:
            hint = ""
            if self._base + p == 0 and magic.startswith(b"(("):  # what `ripple decode` prints, given back to it
                hint = ": this looks like s-expression text, which `ripple encode` turns into a stream"
            return "bad_magic", f"bad magic {magic.hex(' ')} (expected 52 49 50 50, RIPP){hint}"
        if version != VERSION:
            return "bad_version", f"unsupported protocol version {version} (only {VERSION} is supported)"
        if length < 0 or length > self.max_payload:
            return "bad_length", f"payload length {length} outside 0..{self.max_payload}"
        end = p + HEADER_SIZE + length
        if end + 4 > n:
            if not final:
                return False
            return "truncated", f"stream ends inside an envelope: it needs {OVERHEAD + length} bytes, {n - p} remain"
        stored = CRC.unpack_from(buf, end)[0]
        if resync and length >= STEP:
            pre = self._prefixes
            if pre is None or pre.origin > self._base + p:
                pre = self._prefixes = prefixes(self._base + p)
            computed = pre.crc(buf, self._base, self._base + p, self._base + end)
        else:
            computed = crc32c(memoryview(buf)[p:end])
        if stored != computed:
            return "crc_mismatch", f"CRC mismatch: stored {stored:08x}, computed {computed:08x}"
        return None

    def _run(self, out: list[Frame | Problem], final: bool, limit: int | None = None) -> None:
        """Frame from _pos on; with `limit`, stop once that many items are out."""
        stop_at = len(out) + limit if limit is not None else -1
        while True:
            self._frame(out, final and self._next is None, stop_at)
            if self._next is None or len(out) == stop_at:
                return
            self._cross_seam()

    def _frame(self, out: list[Frame | Problem], final: bool, stop_at: int) -> None:
        """_run in the buffer as it is."""
        buf = self._buf
        n = self._end
        p = self._pos
        base = self._base
        while p < n:
            if len(out) == stop_at:
                break
            if self._damage is not None:
                if _accel is not None:
                    status, p, self._prefixes = _accel.resync(buf, p, n, final, self.max_payload, base, self._prefixes)
                    if status == 0:  # a valid envelope at p
                        self._close_damage(p, out, found=True)
                        continue
                    break  # a candidate at p needs more bytes, or no magic up to p
                idx = buf.find(MAGIC, p, n)
                if idx < 0:
                    if final:
                        p = n
                        break
                    p = max(p, n - 3)  # the magic may be split across chunks
                    break
                p = idx
                verdict = self._check(buf, p, n, final, resync=True)
                if verdict is False:
                    break
                if verdict is not None:
                    p += 1
                    continue
                self._close_damage(p, out, found=True)
                continue
            verdict = self._check(buf, p, n, final)
            if verdict is False:
                break
            if verdict is not None:
                kind, detail = verdict  # type: ignore[misc]
                self._open_damage(p, kind, detail)
                p += 1
                continue
            _m, version, tag, flags, seq, time_ns, fp, length = HEADER.unpack_from(buf, p)
            end = p + HEADER_SIZE + length
            out.append(
                Frame(
                    base + p,
                    version,
                    tag,
                    flags,
                    seq,
                    time_ns,
                    fp.rstrip(b"\0"),
                    bytes(buf[p + HEADER_SIZE : end]),
                    CRC.unpack_from(buf, end)[0],
                )
            )
            p = end + 4
        if final and self._damage is not None and p >= n:
            self._close_damage(n, out)
        self._pos = p


def find_envelope(buf: bytes | bytearray, max_payload: int = DEFAULT_MAX_PAYLOAD) -> int | None:
    """Where the first whole envelope with a valid CRC starts in `buf`, or
    None.  Used to recognise Ripple traffic by its content."""
    if _accel is not None:  # the resync search from 0, to the end: the same candidates, the same checks
        status, pos, _prefixes = _accel.resync(buf, 0, len(buf), True, max_payload, 0, None)
        return pos if status == 0 else None
    p = buf.find(MAGIC)
    n = len(buf)
    ranges = prefixes(0)  # candidates claiming long payloads: see crcrange.py
    while p >= 0:
        if n - p >= OVERHEAD:
            _m, version, _t, _f, _s, _ts, _fp, length = HEADER.unpack_from(buf, p)
            end = p + HEADER_SIZE + length
            plausible = version == VERSION and 0 <= length <= max_payload and end + 4 <= n
            if plausible:
                crc = ranges.crc(buf, 0, p, end) if length >= STEP else crc32c(memoryview(buf)[p:end])
                if CRC.unpack_from(buf, end)[0] == crc:
                    return p
        p = buf.find(MAGIC, p + 1)
    return None
