"""One direction of a Pravega connection: bytes in any chunking -> commands.

Framing is `int32 type, int32 length, body`.  The decoder holds at most
one unfinished command (its length bounded by `max_payload`) plus the
chunk being read.  A header that cannot be one (a type outside -127..127,
a negative length, a frame above the protocol's 16 MiB - 1) opens a
damaged region, closed at the next offset where a known command's header
with a sane length starts.  A command longer than `max_payload` but legal
is reported and its body passed over as it streams by, unbuffered.  A
command that runs past the end of the stream is damage too: the commands
that start inside it (its length was inflated) are decoded.

Two things span commands of one direction, and the decoder follows them
to show whole events (`Command.completes`):
- a Java writer's batched AppendBlock ends with a PartialEvent whose rest
  is the start of the next AppendBlockEnd's data;
- a read returns a byte range, so a SegmentRead may end inside an event
  that the next SegmentRead of that segment (at the following offset)
  finishes.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace

from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.base import DissectOptions, Item, ProtoMessage
from ripple_cli.protocols.buffered import BufferedStream
from ripple_cli.protocols.pravega import records as rec
from ripple_cli.protocols.pravega.commands import (
    APPEND_BLOCK,
    APPEND_BLOCK_END,
    HEADER_SIZE,
    MAX_BODY,
    MAX_EVENT_SIZE,
    MAX_WIRECOMMAND_SIZE,
    SEGMENT_READ,
    TOP_LEVEL,
    Side,
    name_of,
    side_of,
)
from ripple_cli.protocols.pravega.text import summary, to_fields, to_sexp
from ripple_cli.protocols.pravega.wire import HEADER, Command, Data, MString, read_body, reads_cleanly

PROTOCOL = "pravega"
MAX_TRACKED_READS = 64  # segments whose cut event a direction remembers


@dataclass
class _Block:
    """The AppendBlock last seen, until its AppendBlockEnd."""

    writer_id: uuid.UUID | None
    partial: bytes | None  # the PartialEvent tail's bytes, if the block ended with one


@dataclass
class _Read:
    """Where the last SegmentRead of a segment ended, and the event it cut."""

    end: int  # segment offset just past its data
    pending: bytes  # the cut event's bytes so far (empty: it ended on a record boundary)


def message(cmd: Command, offset: int, size: int, from_client: bool | None) -> ProtoMessage:
    side = side_of(cmd.code)
    if side is Side.BOTH:
        direction = None if from_client is None else (Side.CLIENT if from_client else Side.SERVER).value
    else:
        direction = side.value if side else None
    return ProtoMessage(
        protocol=PROTOCOL,
        offset=offset,
        size=size,
        type=name_of(cmd.code),
        text=to_sexp(cmd),
        fields=to_fields(cmd),
        summary=summary(cmd),
        direction=direction,
    )


def _a(name: str) -> str:
    return ("an " if name[0] in "AEIOU" else "a ") + name


def plausible(code: int, length: int) -> bool:
    return -127 <= code <= 127 and 0 <= length <= MAX_BODY


class PravegaStream(BufferedStream):
    def __init__(self, options: DissectOptions, from_client: bool | None) -> None:
        super().__init__()
        self.max_payload = options.max_payload
        self.from_client = from_client
        self._skip = 0  # body bytes of an over-long command still to pass over
        self._skip_from = 0  # stream offset of that command
        self._block: _Block | None = None
        self._reads: dict[bytes, _Read] = {}

    # ------------------------------------------------------------ state sizes

    @property
    def held(self) -> int:
        """Bytes kept to join cut events (a PartialEvent, cut reads)."""
        partial = len(self._block.partial) if self._block and self._block.partial else 0
        return partial + sum(len(r.pending) for r in self._reads.values())

    # ------------------------------------------------------------ holes

    def _forget_across_gap(self) -> None:
        # Whatever spanned the hole can no longer be joined.
        self._block = None
        self._reads.clear()

    def _bridge_gap(self, size: int, detail: str, out: list[Item]) -> bool:
        # A hole inside a command whose length is known keeps the framing:
        # the command is lost, but its length says where the next one starts.
        if self._skip:
            if size <= self._skip:
                self._skip -= size
                hole_at = self._base + len(self._buf)
                out.append(Problem(hole_at, "gap", f"{detail}, inside the body being passed over"))
            else:
                self._damage = (self._skip_from, "gap", f"{detail}, past the end of the command being passed over")
                self._skip = 0
            return True
        need = self._whole_size()
        if need is None or self.buffered + size > need:
            return False
        start = self._base + self._pos
        name = name_of(HEADER.unpack_from(self._buf, self._pos)[0])
        out.append(Problem(start, "gap", f"{detail}: the {name} of {need} bytes there is lost", skipped=need))
        self._skip = need - self.buffered - size
        self._skip_from = start
        return True

    # ------------------------------------------------------------ framing

    def _whole_size(self) -> int | None:
        if self.buffered < HEADER_SIZE:
            return None
        code, length = HEADER.unpack_from(self._buf, self._pos)
        if not plausible(code, length) or length > self.max_payload:
            return None
        return HEADER_SIZE + int(length)

    def _run(self, out: list[Item], final: bool) -> None:
        buf = self._buf
        while True:
            end = len(buf)
            if self._skip:
                k = min(self._skip, end - self._pos)
                self._pos += k
                self._skip -= k
                if self._skip:
                    if final:
                        out.append(Problem(self._skip_from, "truncated", "the stream ends inside the body passed over"))
                        self._skip = 0
                    return
            if self._damage is not None and not self._resync(out, final):
                return
            avail = end - self._pos
            if avail < HEADER_SIZE:
                if final and avail:
                    out.append(self._truncated(avail, None))
                    self._pos = end
                return
            code, length = HEADER.unpack_from(buf, self._pos)
            if not plausible(code, length):
                self._open_damage(self._pos, *self._bad_header(code, length))
                self._pos += 1
                continue
            size = HEADER_SIZE + length
            if length > self.max_payload:
                at = self._base + self._pos
                detail = f"{_a(name_of(code))} of {size} bytes, above --max-payload {self.max_payload}: passed over"
                out.append(Problem(at, "too_large", detail, skipped=size))
                self._skip, self._skip_from = length, at
                self._pos += HEADER_SIZE
                continue
            if avail < size:
                if final:
                    # Running past the end: a length inflated over whole
                    # commands, or a command cut short.  Either way the
                    # commands that start inside it are decoded (resync).
                    problem = self._truncated(avail, (code, size))
                    at = self._pos
                    self._open_damage(at, problem.kind, problem.detail)
                    self._pos = at + 1
                    found: list[Item] = []
                    if self._resync(found, final):
                        out.extend(found)
                        continue
                    self._damage = None  # nothing whole inside: the command was cut short
                    out.append(problem)
                    self._pos = end
                return
            at = self._base + self._pos
            body = bytes(buf[self._pos + HEADER_SIZE : self._pos + size])
            self._pos += size
            self._command(code, body, at, size, out)

    def _bad_header(self, code: int, length: int) -> tuple[str, str]:
        if length >= 0 and -127 <= code <= 127:
            return (
                "too_large",
                f"{_a(name_of(code))} header with length {length}: above the {MAX_WIRECOMMAND_SIZE}-byte frame limit",
            )
        return "bad_header", f"not a command header (type {code}, length {length})"

    def _truncated(self, avail: int, header: tuple[int, int] | None) -> Problem:
        at = self._base + self._pos
        if header is None:
            return Problem(at, "truncated", f"the stream ends {avail} bytes into a command header")
        code, size = header
        return Problem(at, "truncated", f"the stream ends {avail} bytes into {_a(name_of(code))} of {size} bytes")

    def _resync(self, out: list[Item], final: bool) -> bool:
        """Look for the next command header; True when found (the damaged
        region is then reported), False when more bytes are needed.  What
        it holds meanwhile is at most one candidate command and the header
        after it."""
        assert self._damage is not None
        buf, end = self._buf, len(self._buf)
        p = self._pos
        limit = min(MAX_BODY, self.max_payload)
        # Every code fits in a byte, so a header starts with 00 00 00 or
        # FF FF FF: look only there (each pattern's next place is kept, so
        # the scan stays linear).
        nxt = {b"\x00\x00\x00": -2, b"\xff\xff\xff": -2}  # -2: not looked for yet, -1: none left
        while end - p >= HEADER_SIZE:
            for pattern, at in nxt.items():
                if at != -1 and at < p:
                    nxt[pattern] = buf.find(pattern, p, end - 5)
            cands = [c for c in nxt.values() if c >= 0]
            if not cands:
                p = end - (HEADER_SIZE - 1)
                break
            p = min(cands)
            code, length = HEADER.unpack_from(buf, p)
            if code in TOP_LEVEL and 0 <= length <= limit:
                # A header alone is weak evidence: the one after it (or the
                # end of the stream) must be where its length says, or its
                # body must read cleanly as its documented layout.
                after = p + HEADER_SIZE + length
                if after + HEADER_SIZE > end and not final:
                    self._pos = p  # wait for the bytes that decide
                    return False
                if after + HEADER_SIZE <= end:
                    code2, length2 = HEADER.unpack_from(buf, after)
                    sure = code2 in TOP_LEVEL and 0 <= length2 <= limit
                else:
                    sure = after <= end
                sure = sure or reads_cleanly(code, buf, p + HEADER_SIZE, min(after, end))
                if sure:
                    self._close_damage(p, out)
                    self._pos = p
                    return True
            p += 1
        if final:
            self._close_damage(end, out)
            self._pos = end
            return False
        self._pos = max(self._pos, p)
        return False

    # ------------------------------------------------------------ commands

    def _command(self, code: int, body: bytes, at: int, size: int, out: list[Item]) -> None:
        cmd = read_body(code, body)
        if cmd.raw is None:
            if code == APPEND_BLOCK_END:
                cmd = self._join_block(cmd)
            elif code == SEGMENT_READ:
                cmd = self._join_read(cmd)
        if code == APPEND_BLOCK:
            self._open_block(cmd)
        elif code != APPEND_BLOCK_END and side_of(code) is not Side.SERVER:
            # Only an AppendBlockEnd may follow a block (the analyzer says
            # so); the join is not attempted across anything else.
            self._block = None
        out.extend(n.at(at) for n in cmd.notes)
        out.append(message(cmd, at, size, self.from_client))

    def _open_block(self, cmd: Command) -> None:
        writer = cmd.values.get("writer_id")
        data = cmd.values.get("data")
        partial = None
        if isinstance(data, Data) and data.records and data.records[-1].kind == rec.PARTIAL_KIND:
            partial = data.records[-1].body
        self._block = _Block(writer if isinstance(writer, uuid.UUID) else None, partial)

    def _join_block(self, cmd: Command) -> Command:
        block, self._block = self._block, None
        data = cmd.values.get("data")
        if block is None or block.partial is None or block.writer_id != cmd.values.get("writer_id"):
            return cmd
        if not isinstance(data, Data):
            return cmd
        partial = block.partial
        joined = rec.split(partial + data.raw)
        begun = tuple(r for r in joined if r.offset < len(partial))
        cont = 0
        if begun:
            cont = min(len(data.raw), max(0, begun[-1].offset + begun[-1].size - len(partial)))
        return replace(cmd.with_data(Data.of(data.raw, cont)), completes=begun)

    def _join_read(self, cmd: Command) -> Command:
        seg, off, data = cmd.values.get("segment"), cmd.values.get("segment_offset"), cmd.values.get("data")
        if not (isinstance(seg, MString) and isinstance(off, int) and isinstance(data, Data)):
            return cmd
        last = self._reads.pop(seg.raw, None)
        completes: tuple[rec.Record, ...] | None = None
        pending = b""
        if last is not None and last.pending and last.end == off:
            joined = last.pending + data.raw
            total = rec.whole_size(joined[:HEADER_SIZE])
            if total is None and len(joined) >= HEADER_SIZE:
                pass  # the cut record's header is no header: nothing to join
            elif total is None or total > len(joined):
                # Still not whole: all of this data goes on with the event.
                cmd = cmd.with_data(Data.of(data.raw, len(data.raw)))
                pending = joined
            else:
                cmd = cmd.with_data(Data.of(data.raw, total - len(last.pending)))
                completes = tuple(rec.split(joined[:total]))
        if not pending:
            new = cmd.values["data"]
            assert isinstance(new, Data)
            tail = new.records[-1] if new.records else None
            if tail is not None and tail.kind == rec.FRAGMENT_KIND:
                pending = tail.raw
        if pending and self._worth_keeping(pending):
            self._reads[seg.raw] = _Read(off + len(data.raw), pending)
            self._bound_reads()
        return replace(cmd, completes=completes) if completes is not None else cmd

    def _worth_keeping(self, pending: bytes) -> bool:
        total = rec.whole_size(pending[:HEADER_SIZE])
        if total is None:
            return len(pending) < HEADER_SIZE  # not even a whole header yet
        return total <= min(MAX_EVENT_SIZE + HEADER_SIZE, self.max_payload)

    def _bound_reads(self) -> None:
        # The oldest cut reads go first: at most MAX_TRACKED_READS segments,
        # and no more pending bytes in all than one command may have.
        while len(self._reads) > MAX_TRACKED_READS or (
            len(self._reads) > 1 and sum(len(r.pending) for r in self._reads.values()) > self.max_payload
        ):
            del self._reads[next(iter(self._reads))]
