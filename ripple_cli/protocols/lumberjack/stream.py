"""`LumberjackStream`: one direction of a Lumberjack connection, bytes in any
chunking -> messages and problems.

Buffering: only the frame not yet complete is held, and a frame's length
is checked against `--max-payload` before its bytes are waited for.  A `C`
frame is inflated within `--max-inflate` (shared by the frames nested in
it), and the frames inside it are decoded and emitted after it, each with
`in_compressed` (the offset of the outermost `C` frame) and size 0: they
take no bytes of the stream of their own.

Damage (a byte that starts no frame, a length above the bound, a capture
hole) opens a damaged region that closes at the next offset where a
plausible whole frame starts (see plausible.py): one problem for the
region, with the bytes skipped.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any

from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.base import DissectOptions, Item, ProtoMessage, json_bytes
from ripple_cli.protocols.buffered import BufferedStream
from ripple_cli.protocols.lumberjack.inflate import inflate
from ripple_cli.protocols.lumberjack.plausible import (
    ALL_TYPES,
    CANDIDATE,
    MAX_PLAUSIBLE_KEY,
    Verdict,
    header,
)
from ripple_cli.protocols.lumberjack.text import NAMES, frame_sexp
from ripple_cli.protocols.lumberjack.view import MAX_EVENT_OBJECTS, fields_of, object_cost, parse_json, summary_of
from ripple_cli.protocols.lumberjack.wire import (
    ACK,
    DATA,
    TYPE_LETTERS,
    WRITER_TYPES,
    Compressed,
    Data,
    DataScan,
    Invalid,
    Json,
    LumberjackFrame,
    Need,
    Window,
    is_writer,
    read_frame,
)

PROTOCOL = "lumberjack"
MAX_NESTING = 16  # C frames inside C frames: real writers nest none; the readers recurse without a bound
MAX_INNER_FRAMES = 1 << 16  # frames per outermost C frame (go-lumber caps a batch at 10000 events)


@dataclass(slots=True)
class _Budget:
    """What one outermost C frame may still inflate to, nested frames included."""

    bytes: int
    frames: int


class LumberjackStream(BufferedStream):
    def __init__(self, options: DissectOptions, from_client: bool | None) -> None:
        super().__init__()
        self.options = options
        self._scan: DataScan | None = None  # a D frame read in part, at _pos
        # The kinds of frame this direction carries, learnt from its first
        # frame (or from the side of the connection): resync looks for those.
        self._types = ALL_TYPES if from_client is None else (WRITER_TYPES if from_client else frozenset((ACK,)))
        self._learnt = False
        self._version: int | None = None  # of the writer's frames, once seen
        self._windows = 0
        self._last_window: int | None = None
        self._after_damage = False  # the next message is the first after damage

    # ------------------------------------------------------------ framing

    def _forget_across_gap(self) -> None:
        self._scan = None  # the D frame read in part is cut by the hole

    def _run(self, out: list[Item], final: bool) -> None:
        out.extend(self._items(final))

    def _items(self, final: bool) -> Iterator[Item]:
        """The frames decoded from `_pos` on, one by one: a chunk of `C`
        frames may inflate to millions of them, delivered as they come."""
        buf, n, p = self._buf, len(self._buf), self._pos
        limit = self.options.max_payload
        while p < n:
            if self._damage is not None:
                m = CANDIDATE.search(buf, p)
                if m is None:
                    # A version byte at the very end may start a frame.
                    p = n if final or buf[n - 1] not in b"12" else n - 1
                    break
                p = m.start()
                verdict = self._candidate(p, n, final)
                if verdict is Verdict.MORE:
                    break
                if verdict is Verdict.NO:
                    p += 1
                    continue
                yield from self._closing(p)
                continue
            if self._scan is None and n - p > 1 and buf[p + 1] == DATA:
                self._scan = DataScan()  # read pair by pair, keeping its progress across chunks
            r = read_frame(buf, p, n, limit, self._scan)
            if isinstance(r, Need):
                if not final:
                    break
                self._scan = None
                self._open_damage(p, "truncated", self._truncated(p, n, r))
                p += 1
                continue
            self._scan = None
            if isinstance(r, Invalid):
                self._open_damage(p, r.kind, r.detail)
                p += 1
                continue
            frame, end = r
            yield from self._emit(frame, self._base + p, end - p)
            p = end
        if final and self._damage is not None:
            yield from self._closing(n)
        self._pos = p

    def _closing(self, pos: int) -> list[Item]:
        out: list[Item] = []
        self._close_damage(pos, out)
        return out

    def _truncated(self, p: int, n: int, need: Need) -> str:
        letter = TYPE_LETTERS.get(self._buf[p + 1], "?") if n - p > 1 else "?"
        if letter == "D" and n - p >= 10:
            return f"the stream ends inside a D frame ({n - p} bytes of it, its pairs incomplete)"
        return f"the stream ends inside a {letter} frame: it needs {need.total} bytes, {n - p} remain"

    def _candidate(self, p: int, n: int, final: bool) -> Verdict:
        """Is there a plausible whole frame at p, of the kinds this
        direction carries?  MORE: not enough bytes yet."""
        verdict, _end = header(self._buf, p, n, self._types, self.options.max_payload)
        if verdict is not Verdict.YES:
            return Verdict.NO if verdict is Verdict.NO or final else Verdict.MORE
        r = read_frame(self._buf, p, n, self.options.max_payload)
        if isinstance(r, Need):
            return Verdict.NO if final else Verdict.MORE
        if isinstance(r, Invalid):
            return Verdict.NO
        frame = r[0]
        if is_writer(frame) and self._version is not None and frame.version != self._version:
            return Verdict.NO
        if isinstance(frame, Data) and not all(_plausible_key(k) for k, _v in frame.pairs):
            return Verdict.NO
        return Verdict.YES

    def _close_damage(self, pos: int, out: list[Item]) -> None:
        super()._close_damage(pos, out)
        self._after_damage = True

    # ------------------------------------------------------------ messages

    def _emit(self, frame: LumberjackFrame, offset: int, size: int) -> Iterator[Item]:
        if not self._learnt:
            self._learnt = True
            self._types = WRITER_TYPES if is_writer(frame) else frozenset((ACK,))
        if is_writer(frame) and self._version is None:
            self._version = frame.version
        # The first frame after damage says so: the analysis cannot count what the damage took.
        mark = {"after_damage": True} if self._after_damage else {}
        self._after_damage = False
        if isinstance(frame, Compressed):
            budget = _Budget(self.options.max_inflate, MAX_INNER_FRAMES)
            yield from self._compressed(frame, offset, size, None, budget, 0, mark, emit=True)
        else:
            yield from self._simple(frame, offset, size, None, mark)

    def _message(
        self, frame: LumberjackFrame, offset: int, size: int, inside: int | None, extra: dict[str, Any]
    ) -> ProtoMessage:
        fields = fields_of(frame, inside, extra)
        return ProtoMessage(
            PROTOCOL,
            offset,
            size,
            NAMES[type(frame)],
            frame_sexp(frame, inside),
            fields,
            summary_of(frame, fields),
            direction="writer" if is_writer(frame) else "reader",
        )

    def _simple(
        self, frame: LumberjackFrame, offset: int, size: int, inside: int | None, mark: dict[str, Any]
    ) -> Iterator[Item]:
        extra: dict[str, Any] = {}
        problem: Problem | None = None
        if isinstance(frame, Window):
            self._windows += 1
            extra.update(batch=self._windows, previous_count=self._last_window)
            self._last_window = frame.count
        elif isinstance(frame, Json):
            problem = self._event(frame, offset, inside, extra)
        yield self._message(frame, offset, size, inside, extra | mark)
        if problem is not None:
            yield problem

    def _event(self, frame: Json, offset: int, inside: int | None, extra: dict[str, Any]) -> Problem | None:
        """A J frame's `event` (its parsed payload) into `extra`, and what is wrong with it."""
        where = f" in the C frame at offset {inside}" if inside is not None else ""
        cost = object_cost(frame.payload)
        if cost > MAX_EVENT_OBJECTS:
            # Parsed, small arrays and objects take ~20-100x their bytes:
            # such a payload is shown as its bytes, not parsed.
            extra.update(event=None, payload=json_bytes(frame.payload))
            return Problem(
                offset,
                "event_limit",
                f"J frame seq {frame.seq}{where}: {len(frame.payload)} bytes of JSON would take about "
                f"{cost >> 20} MiB as objects (more than {MAX_EVENT_OBJECTS >> 20} MiB): not parsed",
            )
        value, why = parse_json(frame.payload) if frame.payload else (None, None)
        extra["event"] = value
        if why is None:
            return None
        extra["payload"] = json_bytes(frame.payload)
        return Problem(offset, "bad_json", f"J frame seq {frame.seq}{where}: invalid JSON: {why}")

    def _compressed(
        self,
        frame: Compressed,
        offset: int,
        size: int,
        inside: int | None,
        budget: _Budget,
        depth: int,
        mark: dict[str, Any],
        emit: bool,
    ) -> Iterator[Item]:
        """A C frame, then the frames it holds (recursively), then what is
        wrong with its zlib data.  Not `emit`: only walked, for what it
        takes of the budget (see `_inner`)."""
        top = offset if inside is None else inside
        where = f"the C frame at offset {top}" + (f" (nested {depth} deep)" if depth else "")
        problems: list[Problem] = []
        extra: dict[str, Any] = {"inflated_size": None, "frames": None, "complete": False}
        if depth >= MAX_NESTING:
            problems.append(Problem(top, "inflate_limit", f"{where}: C frames nested more than {MAX_NESTING} deep"))
        else:
            inflated = inflate(frame.payload, budget.bytes)
            if inflated.over:
                limit = self.options.max_inflate
                text = f"{where} inflates to more than {limit} bytes (--max-inflate)"
                problems.append(Problem(top, "inflate_limit", text, extra={"limit": limit}))
            else:
                budget.bytes -= len(inflated.data)
                extra.update(inflated_size=len(inflated.data))
                # A zlib stream cut short or corrupt usually ends mid-frame:
                # that is its fault, reported once as bad_zlib.
                whole = inflated.error is None
                walk = (inflated.data, top, where, depth, whole)
                if emit:
                    # The C frame's message comes first and says how many
                    # frames it holds: a walk that only counts tells, on a
                    # copy of the budget, before the one that yields them.
                    counted = _result(self._inner(*walk, _Budget(budget.bytes, budget.frames), emit=False))
                    extra["frames"], extra["complete"] = counted[0], whole and counted[1]
                    yield self._message(frame, offset, size, inside, extra | mark)
                yield from self._inner(*walk, budget, emit=emit)
                if inflated.error is not None:
                    problems.append(Problem(top, "bad_zlib", f"{where}: {inflated.error}"))
                if emit:
                    yield from problems
                return
        if emit:
            yield self._message(frame, offset, size, inside, extra | mark)
            yield from problems

    def _inner(
        self, data: bytes, top: int, where: str, depth: int, whole: bool, budget: _Budget, emit: bool
    ) -> Generator[Item, None, tuple[int, bool]]:
        """The frames in the inflated bytes of a C frame (whole frames
        only), one by one; returns how many it holds directly, and whether
        all of them were read.  Not `emit`: only the budget is spent."""
        p, n, count = 0, len(data), 0
        while p < n:
            r = read_frame(data, p, n, self.options.max_payload)
            if isinstance(r, Need):
                if not whole:
                    return count, False
                if emit:
                    kind = TYPE_LETTERS.get(data[p + 1], "?") if n - p > 1 else "?"
                    text = f"{where}: its inflated data ends inside a {kind} frame (at inflated byte {p}, {n - p} left)"
                    yield Problem(top, "compressed_partial_frame", text)
                return count, False
            if isinstance(r, Invalid):
                if emit:
                    left = f"; the last {n - p} inflated bytes are skipped"
                    yield Problem(top, r.kind, f"{where}, inflated byte {p}: {r.detail}{left}")
                return count, False
            if budget.frames == 0:
                if emit:
                    yield Problem(top, "inflate_limit", f"{where} holds more than {MAX_INNER_FRAMES} frames")
                return count, False
            budget.frames -= 1
            frame, end = r
            count += 1
            if isinstance(frame, Compressed):
                yield from self._compressed(frame, top, 0, top, budget, depth + 1, {}, emit)
            elif emit:
                yield from self._simple(frame, top, 0, top, {})
            p = end
        return count, True


def _result(walk: Generator[Item, None, tuple[int, bool]]) -> tuple[int, bool]:
    """What a walk that yields nothing returns."""
    while True:
        try:
            next(walk)
        except StopIteration as end:
            counted: tuple[int, bool] = end.value
            return counted


def _plausible_key(key: bytes) -> bool:
    if not 0 < len(key) <= MAX_PLAUSIBLE_KEY:
        return False
    try:
        key.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
