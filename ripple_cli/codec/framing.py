"""Finding envelopes in a byte stream fed in any chunking.

`FrameDecoder` holds only what it has not yet been able to frame: at most
one envelope (bounded by the maximum payload length) plus one chunk.  After
any damage it resynchronizes on the next offset where a whole envelope with
a valid CRC starts, so that no intact envelope after the damage is lost.
"""

from __future__ import annotations

from crc32c import crc32c

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
from ripple_cli.codec.problems import Problem, Severity

_COMPACT_AT = 1 << 20


class FrameDecoder:
    def __init__(self, max_payload: int = DEFAULT_MAX_PAYLOAD, start_offset: int = 0) -> None:
        self.max_payload = max_payload
        self._buf = bytearray()
        self._pos = 0  # index in _buf of the first byte not yet framed
        self._base = start_offset  # stream offset of _buf[0]
        # An open damaged region: (stream offset, kind, detail), closed when
        # the next whole envelope is found or the stream ends.
        self._damage: tuple[int, str, str] | None = None

    @property
    def offset(self) -> int:
        """Stream offset of the first byte not yet framed."""
        return self._base + self._pos

    @property
    def buffered(self) -> int:
        return len(self._buf) - self._pos

    def feed(self, data: bytes | bytearray | memoryview) -> list[Frame | Problem]:
        self._buf += data
        out: list[Frame | Problem] = []
        self._run(out, final=False)
        if self._pos >= _COMPACT_AT or (self._pos and self._pos == len(self._buf)):
            del self._buf[: self._pos]
            self._base += self._pos
            self._pos = 0
        return out

    def finish(self) -> list[Frame | Problem]:
        """The stream has ended: what is left is a truncated tail or garbage,
        unless whole envelopes can still be found in it."""
        out: list[Frame | Problem] = []
        self._run(out, final=True)
        self._base += len(self._buf)
        self._buf = bytearray()
        self._pos = 0
        return out

    def gap(self, size: int) -> list[Frame | Problem]:
        """`size` bytes of the stream were lost (a hole in a capture, input
        dropped by a busy tap).  What is framed before the hole comes out;
        the envelope cut by it is reported with the hole, and decoding
        resynchronizes on the first whole envelope after it."""
        out: list[Frame | Problem] = []
        self._run(out, final=False)
        hole_at = self._base + len(self._buf)
        detail = f"{size} bytes missing from the stream at offset {hole_at}"
        if self._damage is not None:
            start, kind, first = self._damage
            self._damage = (start, kind, f"{first}; then {detail}")
        else:
            self._damage = (self._base + self._pos, "gap", detail)
        self._base = hole_at + size
        self._buf = bytearray()
        self._pos = 0
        return out

    def join_midstream(self) -> None:
        """The stream is entered part-way (a connection already open when a
        capture began): skip to the first whole envelope, quietly if the
        stream happens to start on one."""
        self._damage = (self._base + self._pos, "midstream", "joined the stream part-way")

    def _open_damage(self, pos: int, kind: str, detail: str) -> None:
        self._damage = (self._base + pos, kind, detail)

    def _close_damage(self, pos: int, out: list[Frame | Problem]) -> None:
        assert self._damage is not None
        start, kind, detail = self._damage
        skipped = self._base + pos - start
        self._damage = None
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

    def _check(self, buf: bytearray, p: int, n: int, final: bool) -> tuple[str, str] | bool | None:
        """Is there a whole valid envelope at p?  None: yes.  False: not
        enough bytes yet.  (kind, detail): no, and why."""
        if n - p < HEADER_SIZE:
            if not final:
                return False
            head = bytes(buf[p : p + 4])
            if MAGIC.startswith(head):
                return "truncated", f"stream ends inside an envelope header ({n - p} of {HEADER_SIZE} bytes)"
            return "bad_magic", f"bad magic {head.hex(' ')} (expected 52 49 50 50, RIPP)"
        magic, version, _tag, _flags, _seq, _time, _fp, length = HEADER.unpack_from(buf, p)
        if magic != MAGIC:
            return "bad_magic", f"bad magic {magic.hex(' ')} (expected 52 49 50 50, RIPP)"
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
        computed = crc32c(memoryview(buf)[p:end])
        if stored != computed:
            return "crc_mismatch", f"CRC mismatch: stored {stored:08x}, computed {computed:08x}"
        return None

    def _run(self, out: list[Frame | Problem], final: bool) -> None:
        buf = self._buf
        n = len(buf)
        p = self._pos
        base = self._base
        while p < n:
            if self._damage is not None:
                idx = buf.find(MAGIC, p)
                if idx < 0:
                    if final:
                        p = n
                        break
                    p = max(p, n - 3)  # the magic may be split across chunks
                    break
                p = idx
                verdict = self._check(buf, p, n, final)
                if verdict is False:
                    break
                if verdict is not None:
                    p += 1
                    continue
                self._close_damage(p, out)
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
        if final and self._damage is not None:
            self._close_damage(n, out)
        self._pos = p


def find_envelope(buf: bytes | bytearray, max_payload: int = DEFAULT_MAX_PAYLOAD) -> int | None:
    """Where the first whole envelope with a valid CRC starts in `buf`, or
    None.  Used to recognise Ripple traffic by its content."""
    p = buf.find(MAGIC)
    n = len(buf)
    while p >= 0:
        if n - p >= OVERHEAD:
            _m, version, _t, _f, _s, _ts, _fp, length = HEADER.unpack_from(buf, p)
            end = p + HEADER_SIZE + length
            plausible = version == VERSION and 0 <= length <= max_payload and end + 4 <= n
            if plausible and CRC.unpack_from(buf, end)[0] == crc32c(memoryview(buf)[p:end]):
                return p
        p = buf.find(MAGIC, p + 1)
    return None
