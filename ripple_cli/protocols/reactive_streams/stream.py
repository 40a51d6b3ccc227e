"""One direction of a Reactive Streams connection: bytes in any chunking ->
messages and problems.

Messages delimit themselves (no length header), so the decoder keeps:
- the bytes of one unfinished message only (at most max_payload + HEADROOM);
- the elementSize that this direction's onSubscribe messages announced, per
  subscriber Id: an onNext carries no length when it is above 0, and
  onSubscribe and onNext both flow publisher -> subscriber, i.e. on this
  same direction (either side may publish, each for its own Ids);
- the parts of split elements not finished yet, to show the joined element
  on the last part (at most max_payload bytes in all).

Without a length header nothing marks where a message starts: after an
unknown type code, a varint running past 10 bytes, packed elements of an
unknown size, or a gap in a capture, the rest of the direction is shown as
`Raw` blocks of 4096 bytes (the last one shorter), and decoding stops.  A
field whose length is above max_payload is skipped without being buffered
(its length says where the message ends) and decoding goes on after it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.protocols.base import DissectOptions, Item, ProtoMessage, StreamDissector
from ripple_cli.protocols.reactive_streams.text import PROTOCOL, summary, to_json, to_sexp
from ripple_cli.protocols.reactive_streams.wire import (
    BY_CLASS,
    BY_CODE,
    PUBLISHER_SIGNALS,
    SUBSCRIBER_SIGNALS,
    FramingLost,
    Message,
    NeedMore,
    OnComplete,
    OnError,
    OnNextLastPart,
    OnNextPart,
    OnSubscribe,
    Raw,
    Read,
    TooLong,
    read_message,
    read_varint,
)
from ripple_cli.terminal.words import plural

RAW_BLOCK = 4096  # bytes per Raw message once decoding has stopped
MAX_TRACKED = 1 << 16  # fixed-size subscriptions, and unfinished split elements, per direction
REST_RAW = "the rest of this direction is shown raw"
# Flaws that keep a message from being shown decoded: its bytes are shown raw.
_HARD_FLAWS = frozenset(("bad_varint", "bad_long"))


class _Mode(Enum):
    DECODE = "decode"
    SKIP = "skip"  # passing over a message whose field is above max_payload
    RAW = "raw"  # framing lost: bytes shown as they are


@dataclass
class _Join:
    parts: int = 0
    data: bytearray | None = None  # None: given up (above the bound)


def proto_message(message: Message, offset: int, size: int) -> ProtoMessage:
    name = BY_CLASS[type(message)].name
    role = "subscriber" if name in SUBSCRIBER_SIGNALS else "publisher" if name in PUBLISHER_SIGNALS else None
    return ProtoMessage(
        protocol=PROTOCOL,
        offset=offset,
        size=size,
        type=name,
        text=to_sexp(message),
        fields=to_json(message),
        summary=summary(message),
        direction=role,
    )


class ReactiveStreamsStream(StreamDissector):
    def __init__(self, options: DissectOptions) -> None:
        self._max = options.max_payload
        self._buf = bytearray()
        self._off = 0  # stream offset of _buf[0]
        self._mode = _Mode.DECODE
        self._need = 1  # bytes the message at _buf[0] needs before it is worth reading again
        # SKIP: the message at _skip_start ends after _skip more bytes and
        # _trailing varints.
        self._skip = 0
        self._trailing = 0
        self._skip_start = 0
        self._skip_detail = ""
        self._sizes: dict[int, int] = {}  # subscriber Id -> elementSize > 0
        self._joins: dict[int, dict[int, _Join]] = {}  # subscriber Id -> element Id -> parts so far
        self._join_count = 0
        self._join_bytes = 0
        self._joining = True

    @property
    def buffered(self) -> int:
        """Bytes held: the unfinished message and the unfinished joins."""
        return len(self._buf) + self._join_bytes

    # ------------------------------------------------------------ the contract

    def feed(self, data: bytes) -> list[Item]:
        out: list[Item] = []
        self._buf += data
        self._run(out)
        return out

    def gap(self, size: int) -> list[Item]:
        out: list[Item] = []
        at = self._off + len(self._buf)
        if self._mode is _Mode.SKIP and not self._buf and size <= self._skip:
            # The hole is inside the message being passed over: its end is still known.
            self._skip -= size
            self._off += size
            out.append(
                Problem(at, "gap", f"{plural(size, 'byte')} missing from the stream, inside a message skipped anyway")
            )
            self._run(out)
            return out
        if self._mode is _Mode.SKIP:
            out.append(self._too_long_problem(at))
        elif self._buf:
            out.append(proto_message(Raw(bytes(self._buf)), self._off, len(self._buf)))
        rest = "" if self._mode is _Mode.RAW else f"; no framing to resynchronise on: {REST_RAW}"
        out.append(Problem(at, "gap", f"{plural(size, 'byte')} missing from the stream{rest}"))
        self._buf.clear()
        self._off = at + size
        self._mode = _Mode.RAW
        return out

    def finish(self) -> list[Item]:
        out: list[Item] = []
        end = self._off + len(self._buf)
        if self._mode is _Mode.SKIP:
            out.append(self._too_long_problem(end))
            out.append(Problem(end, "truncated", "the stream ends inside a message above the maximum size"))
        elif self._mode is _Mode.RAW:
            if self._buf:
                out.append(proto_message(Raw(bytes(self._buf)), self._off, len(self._buf)))
        elif self._buf:
            name = BY_CODE[self._buf[0]].name
            out.append(
                Problem(
                    self._off,
                    "truncated",
                    f"the stream ends inside a {name} message ({len(self._buf)} bytes of it)",
                    skipped=len(self._buf),
                )
            )
        self._off = end
        self._buf.clear()
        self._mode = _Mode.DECODE
        self._need = 1
        return out

    # ------------------------------------------------------------ the loop

    def _run(self, out: list[Item]) -> None:
        buf = self._buf
        end = len(buf)
        pos = 0
        while True:
            if self._mode is _Mode.SKIP:
                n = min(self._skip, end - pos)
                pos += n
                self._skip -= n
                if self._skip:
                    break
                try:
                    while self._trailing:
                        _v, q, _minimal = read_varint(buf, pos, end)
                        if q < 0:
                            break
                        pos = q
                        self._trailing -= 1
                except FramingLost as e:
                    out.append(self._too_long_problem(self._off + pos))
                    out.append(Problem(self._off + pos, e.kind, f"{e.detail}; {REST_RAW}"))
                    self._mode = _Mode.RAW
                    continue
                if self._trailing:
                    break
                out.append(self._too_long_problem(self._off + pos))
                self._mode = _Mode.DECODE
                self._need = 1
            elif self._mode is _Mode.RAW:
                while end - pos >= RAW_BLOCK:
                    out.append(proto_message(Raw(bytes(buf[pos : pos + RAW_BLOCK])), self._off + pos, RAW_BLOCK))
                    pos += RAW_BLOCK
                break
            else:
                if end - pos < self._need:
                    break
                try:
                    read = read_message(buf, pos, end, self._sizes, self._max)
                except NeedMore as e:
                    self._need = e.size
                    break
                except FramingLost as e:
                    out.append(Problem(self._off + pos, e.kind, f"{e.detail}; {REST_RAW}"))
                    self._mode = _Mode.RAW
                    continue
                except TooLong as e:
                    self._start_skip(e, self._off + pos)
                    continue
                self._accept(read, self._off + pos, bytes(buf[pos : pos + read.size]), out)
                pos += read.size
                self._need = 1
        del buf[:pos]
        self._off += pos

    def _start_skip(self, e: TooLong, offset: int) -> None:
        self._mode = _Mode.SKIP
        self._skip = e.end
        self._trailing = e.trailing
        self._skip_start = offset
        self._skip_detail = e.detail
        sub, eid = e.values.get("subscriber"), e.values.get("element_id")
        if e.layout.cls in (OnNextPart, OnNextLastPart) and isinstance(sub, int) and isinstance(eid, int):
            self._lose_part(sub, eid, last=e.layout.cls is OnNextLastPart)

    def _lose_part(self, sub: int, eid: int, last: bool) -> None:
        """A part skipped for its size: its element can no longer be joined."""
        join = self._joins.get(sub, {}).get(eid)
        if last:
            if join is not None:
                self._drop_join(sub, eid)
            return
        if join is None:
            if not self._joining or self._join_count >= MAX_TRACKED:
                return
            join = _Join()
            self._store_join(sub, eid, join)
        elif join.data is not None:
            self._join_bytes -= len(join.data)
        join.data = None
        join.parts += 1

    def _too_long_problem(self, end: int) -> Problem:
        return Problem(self._skip_start, "too_long", self._skip_detail, skipped=end - self._skip_start)

    # ------------------------------------------------------------ per message

    def _accept(self, read: Read, offset: int, wire: bytes, out: list[Item]) -> None:
        m = read.message
        problems: list[Problem] = []
        stop = False
        if isinstance(m, OnSubscribe):
            self._forget_joins(m.subscriber)  # a new subscription of this Id
            if not m.element_size:
                self._sizes.pop(m.subscriber, None)
            elif m.subscriber in self._sizes or len(self._sizes) < MAX_TRACKED:
                self._sizes[m.subscriber] = m.element_size
            else:
                problems.append(
                    Problem(
                        offset,
                        "state_limit",
                        f"more than {MAX_TRACKED} fixed-size subscriptions at once; {REST_RAW} after this message",
                    )
                )
                stop = True
        elif isinstance(m, OnComplete | OnError):
            self._sizes.pop(m.subscriber, None)
            self._forget_joins(m.subscriber)
        elif isinstance(m, OnNextPart | OnNextLastPart):
            m = self._join(m, offset, problems)
        for flaw in read.flaws:
            severity = Severity.ERROR if flaw.kind in _HARD_FLAWS else Severity.WARNING
            problems.append(Problem(offset, flaw.kind, flaw.detail, severity=severity))
        if any(f.kind in _HARD_FLAWS for f in read.flaws):
            m = Raw(wire)  # shown as its bytes; what it says still counts for the state above
        out.extend(problems)
        out.append(proto_message(m, offset, read.size))
        if stop:
            self._mode = _Mode.RAW

    def _join(self, m: OnNextPart | OnNextLastPart, offset: int, problems: list[Problem]) -> Message:
        join = self._joins.get(m.subscriber, {}).get(m.element_id)
        if join is None:
            if not self._joining:
                return m
            if self._join_count >= MAX_TRACKED:
                self._joining = False
                problems.append(
                    Problem(
                        offset,
                        "join_limit",
                        f"more than {MAX_TRACKED} split elements unfinished at once: parts are no longer joined",
                        severity=Severity.WARNING,
                    )
                )
                return m
            join = _Join(data=bytearray())
            self._store_join(m.subscriber, m.element_id, join)
        join.parts += 1
        if join.data is not None:
            if self._join_bytes + len(m.data) > self._max:
                problems.append(
                    Problem(
                        offset,
                        "join_limit",
                        f"the element joined from the parts of subscriber {m.subscriber} element {m.element_id} "
                        f"takes unfinished split elements above {self._max} bytes: it is not joined",
                        severity=Severity.WARNING,
                    )
                )
                self._join_bytes -= len(join.data)
                join.data = None
            else:
                join.data += m.data
                self._join_bytes += len(m.data)
        if isinstance(m, OnNextPart):
            return m
        self._drop_join(m.subscriber, m.element_id)
        return replace(m, parts=join.parts, element=None if join.data is None else bytes(join.data))

    def _store_join(self, sub: int, eid: int, join: _Join) -> None:
        self._joins.setdefault(sub, {})[eid] = join
        self._join_count += 1

    def _drop_join(self, sub: int, eid: int) -> None:
        per = self._joins[sub]
        join = per.pop(eid)
        if not per:
            del self._joins[sub]
        self._join_count -= 1
        if join.data is not None:
            self._join_bytes -= len(join.data)

    def _forget_joins(self, sub: int) -> None:
        for eid in list(self._joins.get(sub, {})):
            self._drop_join(sub, eid)
