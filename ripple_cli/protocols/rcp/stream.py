"""One direction of an RCP connection: bytes in any chunking -> messages.

At each message boundary the next bytes say what comes: "RCPX" starts a
binary frame, anything else starts a JSON line when the direction carries
lines (after a HELLO response that negotiated `jsonl`, or once a line was
seen), and a `{` starts one in any direction.  So the switch to JSON lines
is followed whether the server writes its HELLO response itself as a frame
or, as the real server does (it records the wire mode before it encodes
that response), already as a line.  A line where the peer could not have
negotiated one is decoded and reported (`unexpected_jsonl`).

A frame at a boundary is read by the version 1 layout whatever its
version or flags say (the oddities are problems, the bytes are kept).
Where the bytes are no message (bad magic, a payload above the bound, a
capture hole), decoding skips to the next sure start: a frame with version
1, known flags and a matching CRC (see wire.valid_frame_at), or in a
direction that carries lines, the start of the next line.  Buffering is
bounded by the largest frame (18 + 65535 + max_payload bytes) or line.
"""

from __future__ import annotations

from typing import Any

from ripple_cli.codec.crc import crc32c
from ripple_cli.codec.crcrange import STEP, RangeCrcs, prefixes
from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.protocols.base import DissectOptions, Item, ProtoMessage, json_bytes
from ripple_cli.protocols.buffered import BufferedStream
from ripple_cli.protocols.note import Note
from ripple_cli.protocols.rcp import payload as pl
from ripple_cli.protocols.rcp.text import NAME, frame_sexp, frame_type, line_sexp
from ripple_cli.protocols.rcp.wire import (
    COMPRESSED,
    CRC_PRESENT,
    HEADER_SIZE,
    MAGIC,
    MAX_PAYLOAD,
    VALID_FLAGS,
    VERSION,
    RcpFrame,
    flag_names,
    read_frame,
    read_header,
    valid_frame_at,
)
from ripple_cli.terminal.words import plural

PROTOCOL = NAME.decode("ascii")


class RcpStream(BufferedStream):
    def __init__(self, options: DissectOptions, from_client: bool | None) -> None:
        super().__init__()
        self.max_payload = options.max_payload
        self.from_client = from_client
        self.jsonl = False  # this direction carries JSON lines
        # Stream offset up to which the line at the boundary was searched for
        # its newline: a long line arriving in pieces is scanned once.
        self._scanned = 0
        self._line_reported = False  # unexpected_jsonl is reported once per direction
        # While candidates are tried (resync, or frames inside a frame whose
        # CRC fails), the CRCs of the stream's prefixes from where the search
        # began: a candidate's CRC then costs the same whatever the payload
        # its header claims (crcrange.py), so that a search over headers
        # claiming large payloads stays linear.
        self._prefixes: RangeCrcs | None = None
        # The frame at the boundary whose CRC fails while the search for a
        # whole frame inside it waits for bytes: (its stream offset, the
        # stream offset of the first candidate not yet decided), so that
        # each chunk goes on from there instead of starting again.
        self._suspect: tuple[int, int] | None = None

    # ------------------------------------------------------------ decoding

    def _at_end(self, out: list[Item]) -> None:
        # _run leaves a partial message (or the damage) for this: only here
        # is it known that no more bytes will come.
        if self._damage is not None:
            self._close_damage(len(self._buf), out)
        elif self._pos < len(self._buf):
            at = self._base + self._pos
            left = len(self._buf) - self._pos
            if self._buf[self._pos : self._pos + 4] != MAGIC[: min(4, left)]:
                detail = f"stream ends inside a JSON line ({plural(left, 'byte')}, no newline)"
            elif left >= HEADER_SIZE:
                need = read_header(self._buf, self._pos).size
                detail = f"stream ends inside a frame: it needs {need} bytes, {left} remain"
            else:
                detail = f"stream ends inside a frame header ({left} of {HEADER_SIZE} bytes)"
            out.append(Problem(at, "truncated", detail, skipped=left))

    def _lines_possible(self) -> bool:
        # The server reads only frames: a client direction does not resync
        # onto lines unless it has shown lines already.
        return self.jsonl or self.from_client is not True

    def _run(self, out: list[Item], final: bool) -> None:
        buf = self._buf
        n = len(buf)
        while self._pos < n:
            if self._damage is not None:
                if not self._resync(out, final):
                    return
                continue
            p = self._pos
            if n - p < 4 and MAGIC.startswith(buf[p:n]):
                return  # maybe a magic: wait (at the end, finish() reports it truncated)
            if buf[p : p + 4] == MAGIC:
                if not self._frame(out, final):
                    return
            elif self.jsonl or buf[p] == 0x7B:  # "{"
                if not self._line(out):
                    return
            elif n - p < 4 and not final:
                return  # wait for the 4 bytes the problem shows
            else:
                head = bytes(buf[p : p + 4]).hex(" ")
                self._open_damage(p, "bad_magic", f"bad magic {head} (expected 52 43 50 58, RCPX)")
                self._pos = p + 1

    def _resync(self, out: list[Item], final: bool) -> bool:
        """Skip to the next sure message start; False when more bytes are needed."""
        buf = self._buf
        n = len(buf)
        p = self._pos
        line_at = -2  # not looked for yet (-1: none in the buffer); looked for again only once passed
        while True:
            frame_at = buf.find(MAGIC, p)
            if self.jsonl or self._lines_possible():
                if line_at == -2 or 0 <= line_at - 1 < p:
                    nl = buf.find(b"\n" if self.jsonl else b"\n{", p)
                    line_at = nl + 1 if nl >= 0 else -1
            else:
                line_at = -1
            if frame_at < 0 and line_at < 0:
                # Keep the tail that may begin a magic or a newline-brace.
                self._pos = n if final else max(p, n - 3)
                return False
            # A line start is a sure start even when a magic follows its
            # newline at once (that frame is then read at the boundary,
            # whatever its flags): whether the magic's bytes had arrived must
            # not move the end of the skip (it did, by chunking).
            if line_at >= 0 and (frame_at < 0 or line_at <= frame_at):
                self._close_damage(line_at, out)
                self._pos = line_at
                return True
            found = valid_frame_at(buf, frame_at, n, self.max_payload, self._crc)
            if found is True and not final:
                self._pos = frame_at  # a frame may start here: wait for the rest of it
                return False
            if isinstance(found, RcpFrame):
                self._close_damage(frame_at, out)
                self._pos = frame_at
                return True
            p = frame_at + 1

    def _frame(self, out: list[Item], final: bool) -> bool:
        """The frame at the boundary; False when more bytes are needed."""
        buf = self._buf
        p = self._pos
        n = len(buf)
        if n - p < HEADER_SIZE:
            return False
        header = read_header(buf, p)
        if header.payload_len > self.max_payload:
            detail = f"payload length {header.payload_len} above the limit of {self.max_payload}"
            self._open_damage(p, "oversize", detail)
            self._pos = p + 1
            return True
        if n - p < header.size:
            if final:
                # The stream ends inside it: an inflated length, when whole
                # frames start within its bytes (they are decoded, not lost).
                inner, _ = self._frame_within(p + 1, n, final)
                if inner is not None:
                    detail = f"frame length {header.size} runs past the end of the stream"
                    self._open_damage(p, "bad_length", f"{detail}; a whole frame starts at {self._base + inner}")
                    self._pos = p + 1
                    return True
            return False
        at = self._base + p
        if self._suspect is None or self._suspect[0] != at:
            self._suspect = None
            start = p + HEADER_SIZE + header.header_len
            if header.flags & CRC_PRESENT and crc32c(memoryview(buf)[start : p + header.size]) != header.crc:
                self._suspect = (at, at + 1)
        if self._suspect is not None:
            # A wrong CRC over bytes that hold whole frames: the length is
            # what is wrong (inflated), and those frames are intact.
            inner, wait = self._frame_within(self._suspect[1] - self._base, p + header.size, final)
            if wait:
                assert inner is not None
                self._suspect = (at, self._base + inner)
                return False  # a frame may start inside it: wait for the rest of that one
            self._suspect = None
            if inner is not None:
                detail = f"frame length {header.size} fails its CRC; a whole frame starts at {self._base + inner}"
                self._open_damage(p, "bad_length", detail)
                self._pos = p + 1
                return True
        frame = read_frame(buf, p, header)
        self._pos = p + header.size
        self._emit_frame(at, frame, out)
        return True

    def _frame_within(self, start: int, end: int, final: bool) -> tuple[int | None, bool]:
        """Where the first sure frame starting in `_buf[start:end]` is (it
        may end beyond `end`, within the buffer), or None: there is none;
        and whether more bytes would tell (then the place is the first
        candidate still undecided: those before it are not frames)."""
        buf = self._buf
        at = buf.find(MAGIC, start, end)
        while at >= 0:
            found = valid_frame_at(buf, at, len(buf), self.max_payload, self._crc)
            if isinstance(found, RcpFrame):
                return at, False
            if found is True and not final:
                return at, True
            at = buf.find(MAGIC, at + 1, end)
        return None, False

    def _crc(self, start: int, end: int) -> int:
        """crc32c(_buf[start:end]), for a candidate at or after `_pos`."""
        if end - start < STEP:
            return crc32c(memoryview(self._buf)[start:end])
        base = self._base
        pre = self._prefixes
        if pre is None:
            pre = self._prefixes = prefixes(base + self._pos)
        return pre.crc(self._buf, base, base + start, base + end)

    def _compact(self) -> None:
        pre = self._prefixes
        if pre is None or (self._suspect is None and self._damage is None):
            self._prefixes = None  # no search open: nothing to keep
            super()._compact()
            return
        # Keep the bytes from the prefix mark at or before `_pos` on: the
        # range CRC of a later candidate starts from that mark.
        start = self._base + self._pos
        mark = start - (start - pre.origin) % STEP
        pre.extend(self._buf, self._base, mark)
        keep = mark - self._base
        if keep > 0:
            del self._buf[:keep]
            self._base += keep
            self._pos -= keep

    def _forget_across_gap(self) -> None:
        self._prefixes = None
        self._suspect = None

    def _line(self, out: list[Item]) -> bool:
        """The JSON line at the boundary; False when more bytes are needed."""
        buf = self._buf
        p = self._pos
        n = len(buf)
        limit = self.max_payload
        end = min(n, p + limit + 1)
        nl = buf.find(b"\n", max(p, self._scanned - self._base), end)
        if nl < 0:
            self._scanned = self._base + end  # only this far: a line after an oversize one starts before n
            if n - p > limit:
                self._open_damage(p, "oversize", f"JSON line longer than the limit of {limit} bytes")
                self.jsonl = True  # resynchronise on the next line
                self._pos = p + 1
                return True
            return False
        text = bytes(buf[p:nl])
        self._pos = nl + 1
        self._emit_line(self._base + p, text, out)
        if len(text) > MAX_PAYLOAD:  # as for frames: --max-payload allowed it
            out.append(
                Problem(
                    self._base + p, "oversize", f"JSON line of {len(text)} bytes above RCP's limit of {MAX_PAYLOAD}"
                )
            )
        return True

    # ------------------------------------------------------------ messages

    def _emit_frame(self, at: int, frame: RcpFrame, out: list[Item]) -> None:
        notes: list[Note] = []
        if frame.version != VERSION:
            notes.append(
                Note(
                    "bad_version",
                    f"protocol version {frame.version} (only {VERSION} exists); read as version {VERSION}",
                )
            )
        if frame.flags & ~VALID_FLAGS:
            notes.append(Note("reserved_flags", f"flags {frame.flags:#06x}: bits outside 0x000F are set"))
        if len(frame.payload) > MAX_PAYLOAD:  # decoded because --max-payload allows more than RCP does
            notes.append(Note("oversize", f"payload length {len(frame.payload)} above RCP's limit of {MAX_PAYLOAD}"))
        computed = frame.computed_crc
        crc_ok = computed == frame.crc if frame.flags & CRC_PRESENT else None
        if crc_ok is False:
            notes.append(Note("crc_mismatch", f"CRC mismatch: field {frame.crc:08x}, payload's CRC32C {computed:08x}"))
        elif crc_ok is None and frame.crc != 0:
            notes.append(
                Note(
                    "crc_without_flag", f"CRC field {frame.crc:08x} without CRC_PRESENT (not checked)", Severity.WARNING
                )
            )
        if frame.extension:
            notes.append(
                Note(
                    "header_extension",
                    f"header extension of {len(frame.extension)} bytes (unused in version 1), skipped",
                    Severity.WARNING,
                )
            )
        if frame.flags & COMPRESSED:
            notes.append(
                Note("compressed", "COMPRESSED flag (reserved, no codec defined): payload not read", Severity.WARNING)
            )
            parsed = pl.Parsed(False)
        else:
            parsed = pl.parse(frame.payload)
            notes.extend(parsed.notes)
        if self.jsonl and self.from_client is False:
            notes.append(
                Note("unexpected_frame", "a binary frame after this direction switched to JSON lines", Severity.WARNING)
            )
        self._follow_mode(parsed)
        fields: dict[str, Any] = {
            "wire": "frame",
            "version": frame.version,
            "flags": frame.flags,
            "flag_names": flag_names(frame.flags),
            "header_len": len(frame.extension),
            "payload_len": len(frame.payload),
            "crc": frame.crc,
            "crc_ok": crc_ok,
        }
        if frame.extension:
            fields["extension"] = json_bytes(frame.extension)
        fields.update(pl.message_fields(parsed))
        if not parsed.ok:
            fields["payload"] = json_bytes(frame.payload)
        type_name = frame_type(frame.flags, parsed.kind)
        summary = pl.summary(parsed, len(frame.payload))
        if frame.flags & COMPRESSED:
            summary = f"{len(frame.payload)} bytes, compressed"
        shown = [name for name in flag_names(frame.flags) if name != "CRC_PRESENT"]
        if frame.flags & ~VALID_FLAGS:
            shown.append(f"{frame.flags & ~VALID_FLAGS:#06x}")
        if shown:
            summary += f" [{' '.join(shown)}]"
        msg = ProtoMessage(
            PROTOCOL, at, frame.size, type_name, frame_sexp(frame, type_name, computed), fields, summary, parsed.kind
        )
        out.append(msg)
        out.extend(note.at(at) for note in notes)

    def _emit_line(self, at: int, text: bytes, out: list[Item]) -> None:
        parsed = pl.parse(text)
        notes = list(parsed.notes)
        if not self.jsonl and not self._line_reported and self.from_client is not None:
            self._line_reported = True
            if self.from_client:
                notes.append(
                    Note("unexpected_jsonl", "a JSON line from the client: the server reads only binary frames")
                )
            elif pl.negotiated_mode(parsed) != "jsonl":
                notes.append(
                    Note("unexpected_jsonl", "a JSON line before any HELLO response negotiated jsonl", Severity.WARNING)
                )
        self.jsonl = True
        self._follow_mode(parsed)
        fields: dict[str, Any] = {"wire": "jsonl", "payload_len": len(text)}
        fields.update(pl.message_fields(parsed))
        if not parsed.ok:
            fields["payload"] = json_bytes(text)
        summary = "jsonl " + pl.summary(parsed, len(text))
        msg = ProtoMessage(PROTOCOL, at, len(text) + 1, "JsonLine", line_sexp(text), fields, summary, parsed.kind)
        out.append(msg)
        out.extend(note.at(at) for note in notes)

    def _follow_mode(self, parsed: pl.Parsed) -> None:
        # A HELLO response says what the server writes from now on (its own
        # bytes may already be in the new mode: see the module's docstring).
        if self.from_client is True:
            return
        mode = pl.negotiated_mode(parsed)
        if mode == "jsonl":
            self.jsonl = True
        elif mode == "binary_json":
            self.jsonl = False
