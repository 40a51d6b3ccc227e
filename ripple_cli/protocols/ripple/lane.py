"""Ripple's fast lane: boring envelopes in C (codec/fast), the rest in Python.

A `Lane` belongs to one stream's decoder (its FrameDecoder and schema
registry) and its `SequenceChecker` when stream rules are checked.  The
stream dissector (stream.py) alternates:

    lane.run()          the C scanner consumes the boring envelopes at the
                        head of the FrameDecoder's buffer -> one `LaneRun`
    frames.step()       the Python decoder takes exactly one item (the
                        envelope the scanner stopped at, or a damaged region)
                        -> events, which the caller handles at once

so the state both sides read (the checker's last seq and last applied
sequence_no, the registry a Handshake fills) is always up to date, and the
output is in stream order.

A LaneRun (a `Run` of protocols/item.py) stands for consecutive whole envelopes: how many and of which
types, their canonical lines when the lane renders (decode), and the
stream-rule problems among them as compact records (verify), turned into
`Problem`s by the same functions the checker uses, and only as many as are
kept (a stream with a million problems keeps ten thousand).
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ripple_cli.codec.crc import Buffer
from ripple_cli.codec.envelope import HEADER_SIZE
from ripple_cli.codec.fast.layout import (
    REC_BEFORE_SCHEMA,
    REC_DUPLICATE,
    REC_GAP,
    REC_SEQ_ORDER,
    REC_WORDS,
    RECORD_TYPECODE,
    RENDER_JSON,
    RENDER_NONE,
    RENDER_ROWS,
    RENDER_SEXP,
    RENDER_TABLE,
)
from ripple_cli.codec.fast.program import compile_program
from ripple_cli.codec.messages import (
    DELTA,
    HEARTBEAT,
    TYPE_NAMES,
    DeltaMode,
    Heartbeat,
    read_delta_msg,
    read_payload,
)
from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.base import ANYTHING, LaneKind, Prefilter
from ripple_cli.protocols.item import Run, TableRow
from ripple_cli.protocols.ripple.message import SHORT_TYPES, TYPE_STYLES
from ripple_cli.protocols.ripple.rules import (
    UNKNOWN_WORKER,
    ProgressTracker,
    SequenceChecker,
    before_schema_problem,
    duplicate_problem,
    gap_problem,
    seq_order_problem,
)

if TYPE_CHECKING:
    from ripple_cli.codec.delta import CompiledSchema
    from ripple_cli.codec.fast._speedups import Program, RowBuffers
    from ripple_cli.codec.framing import FrameDecoder
    from ripple_cli.codec.registry import SchemaRegistry


# Not frozen: a capture makes a LaneRun per packet, and a frozen dataclass's
# __init__ (object.__setattr__ per field) took four times as long.
@dataclass(slots=True)
class LaneRun(Run):
    """Consecutive whole envelopes the fast lane handled (not to be changed)."""

    offset: int  # stream offset of the first
    end: int  # stream offset after the last
    messages: int
    size: int  # bytes of the envelopes
    by_tag: tuple[int, ...]  # messages of each type tag 0..5
    # One line per message: their canonical lines (LaneKind.SEXP), or their
    # JSON objects after the head (LaneKind.JSON: render/json.py adds it); else b"".
    text: bytes
    lines: int  # in text: the messages shown (all of them, unless a selection passed over some)
    records: array[int]  # stream-rule problems, REC_WORDS each (codec/fast/layout.py)
    names: list[Any]  # fingerprints and (worker, output) keys the records point to
    # LaneKind.ROWS: their export rows' columns (the scanner's RowBuffers:
    # layout.py's ROW_* tables); else None.
    columns: RowBuffers | None = None

    @property
    def problem_count(self) -> int:
        return len(self.records) // REC_WORDS

    def counts(self) -> tuple[tuple[str, int], ...]:
        # Asked twice a run (the stream's counts, the report's), and a
        # capture makes a run per packet: the few shapes a stream's runs
        # take (all Deltas, a Heartbeat among them) are kept, not rebuilt.
        by_tag = self.by_tag
        named = _COUNTS.get(by_tag)
        if named is None:
            named = tuple((TYPE_NAMES[tag], n) for tag, n in enumerate(by_tag) if n)
            if len(_COUNTS) >= _COUNTS_KEPT:
                _COUNTS.clear()
            _COUNTS[by_tag] = named
        return named

    def problems(self, limit: int | None = None) -> Iterator[Problem]:
        return self._problems(0, limit)

    def _problems(self, first: int, limit: int | None) -> Iterator[Problem]:
        """The records from the first-th on as the Problems
        SequenceChecker.observe makes, in order."""
        recs, names = self.records, self.names
        for i in islice(range(first * REC_WORDS, len(recs), REC_WORDS), limit):
            kind, offset, seq, a, b, c = recs[i : i + REC_WORDS]
            if kind == REC_SEQ_ORDER:
                yield seq_order_problem(offset, seq, a)
            elif kind == REC_BEFORE_SCHEMA:
                yield before_schema_problem(offset, seq, names[a])
            elif kind == REC_DUPLICATE:
                yield duplicate_problem(offset, seq, names[a], c, b)
            else:
                yield gap_problem(offset, seq, names[a], c, b)

    def first_lines(self, n: int) -> bytes:
        """The first n lines (a line never holds a newline: atoms and JSON
        strings escape it)."""
        end = -1
        for _ in range(n):
            end = self.text.index(b"\n", end + 1)
        return self.text[: end + 1]

    def table_rows(self, limit: int | None = None) -> list[TableRow]:
        return _rows(self.text if limit is None else self.first_lines(limit))

    def last_table_rows(self, n: int) -> list[TableRow]:
        text = self.text
        start = len(text) - 1  # at the last line's newline
        for _ in range(n):
            start = text.rfind(b"\n", 0, start)
            if start < 0:
                break
        return _rows(text[start + 1 :])

    def last_problems(self, n: int) -> list[Problem]:
        return list(self._problems(max(0, self.problem_count - n), None))


def _rows(text: bytes) -> list[TableRow]:
    """LaneKind.TABLE's lines as rows.  The scanner's cells are escaped
    (codec/fast/tableout.h): no tab or newline in one, and valid UTF-8."""
    rows = []
    for line in text.decode("utf-8").split("\n")[:-1]:
        offset, seq, time, kind, schema, output, key, summary = line.split("\t")
        short, style = _TYPE_CELLS[kind]
        rows.append(TableRow("ripple", offset, seq, time, kind, short, style, schema, output, key, summary))
    return rows


_COUNTS: dict[tuple[int, ...], tuple[tuple[str, int], ...]] = {}  # LaneRun.counts, by by_tag
_COUNTS_KEPT = 4096


# The type cell of each type the scanner writes a row for: its short name and colour.
_TYPE_CELLS = {name: (SHORT_TYPES.get(name, name), TYPE_STYLES[name]) for name in TYPE_NAMES.values()}


# After a call that consumed nothing, the lane sits out this many Python
# steps (doubling up to the cap): a stream where every envelope needs
# Python (all flagged, all Handshakes) pays little for the lane.
_BACKOFF_CAP = 64


class _Resolver:
    """What the scanner asks about a fingerprint: is the schema known
    (registry.get), and its program."""

    __slots__ = ("programs", "raw", "registry")

    def __init__(self, registry: SchemaRegistry, raw: bool) -> None:
        self.registry = registry
        self.raw = raw
        self.programs: dict[CompiledSchema, Program | None] = {}

    def __call__(self, fingerprint: bytes) -> tuple[bool, Program | None]:
        compiled = self.registry.get(fingerprint)
        if compiled is None:
            return False, None
        if self.raw or compiled.flaw is not None:  # (a flawed schema's Deltas: Python reports them)
            return True, None
        # The scanner asks again at every run (a Handshake in between may
        # have changed the answer), and a capture calls run once a packet:
        # compile_program's cache hashes the whole Schema tree, which cost
        # more than decoding the packet.  CompiledSchema hashes by identity.
        program = self.programs.get(compiled, _UNCOMPILED)
        if program is _UNCOMPILED:
            program = self.programs[compiled] = compile_program(compiled.schema)
        return True, program


_UNCOMPILED: Any = object()


def _follow(
    tracker: ProgressTracker, buf: Buffer, lasts: tuple[int, ...], records: array[int], seq: int | None
) -> None:
    """A run's part in its stream's progress: its last seq, its last Delta,
    watermark and Heartbeat (read where the scanner saw them, a few
    envelopes a run), and the numbering its stream-rule records tell."""
    tracker.progress.seq = seq
    delta, heartbeat, watermarked = lasts[DELTA], lasts[HEARTBEAT], lasts[6]
    if watermarked >= 0 and watermarked != delta:
        wm = read_delta_msg(_payload(buf, watermarked)).watermark_ns
        assert wm is not None  # the scanner saw one
        tracker.watermark(wm)
    if delta >= 0:
        d = read_delta_msg(_payload(buf, delta))
        tracker.delta(d.source_output, d.sequence_no, d.watermark_ns)
    if heartbeat >= 0:
        hb = read_payload(HEARTBEAT, _payload(buf, heartbeat))
        assert isinstance(hb, Heartbeat)
        tracker.heartbeat(hb.load)
    missing = duplicates = out_of_order = 0
    for i in range(0, len(records), REC_WORDS):
        kind = records[i]
        if kind == REC_GAP:
            missing += records[i + 4] - records[i + 5] - 1  # sequence_no - last applied - 1
        elif kind == REC_DUPLICATE:
            duplicates += 1
        elif kind == REC_SEQ_ORDER:
            out_of_order += 1
    if missing or duplicates or out_of_order:
        tracker.numbering(missing, duplicates, out_of_order)


_LENGTH = struct.Struct("<i")  # a payload's length, as envelope.HEADER has it


def _payload(buf: Buffer, at: int) -> bytes:
    (length,) = _LENGTH.unpack_from(buf, at + HEADER_SIZE - _LENGTH.size)  # the header ends in it
    return bytes(buf[at + HEADER_SIZE : at + HEADER_SIZE + length])


_RENDER = {
    LaneKind.COUNT: RENDER_NONE,
    LaneKind.SEXP: RENDER_SEXP,
    LaneKind.JSON: RENDER_JSON,
    LaneKind.TABLE: RENDER_TABLE,
    LaneKind.ROWS: RENDER_ROWS,
    LaneKind.SELECT: RENDER_NONE,
}


def _select(kind: LaneKind, pre: Prefilter) -> dict[str, Any]:
    """The scanner's arguments for a selecting lane: the type tags that may
    pass, and the outputs and key texts a Delta must have (None: any)."""
    if kind is LaneKind.COUNT or not pre.constrains:
        return {}
    # A lane that writes (SEXP, JSON) writes the messages that pass: the
    # selection must be exactly its conditions (render/show.py asks so).
    assert kind is LaneKind.SELECT or pre.exact
    tags = sum(1 << tag for tag, name in TYPE_NAMES.items() if pre.types is None or name in pre.types)
    outputs = None if pre.outputs is None else tuple(sorted(pre.outputs))
    keys = None if pre.keys is None else tuple(sorted(pre.keys))
    exact = kind is not LaneKind.SELECT
    return {"select": True, "exact": exact, "tags": tags, "outputs": outputs, "keys": keys}


class Lane:
    def __init__(
        self,
        accel: ModuleType,
        frames: FrameDecoder,
        registry: SchemaRegistry,
        deltas: DeltaMode,
        checker: SequenceChecker | None,
        kind: LaneKind,
        prefilter: Prefilter = ANYTHING,
        tracker: ProgressTracker | None = None,
        rules: bool = True,
    ) -> None:
        """`tracker`: the stream's progress, fed each run's last envelopes
        and numbering.  `rules`: the checker's findings are the stream's
        problems (verify); else it is there for the tracker only, and the
        runs hold no problem."""
        self.frames = frames
        self.checker = checker
        self.tracker = tracker
        self.rules = rules
        self.raw = deltas is DeltaMode.RAW
        # The scanner holds the resolver, not the lane, so a finished stream's
        # lane goes with its last reference; the scanner also takes part in
        # garbage collection, so a cycle through it would be freed anyway.
        self._scanner = accel.Scanner(
            max_payload=frames.max_payload,
            render=_RENDER[kind],
            raw=self.raw,
            rules=checker is not None,
            resolve=_Resolver(registry, self.raw),
            **(select := _select(kind, prefilter)),
        )
        self._selecting = bool(select)
        self._skip = 0
        self._backoff = 1
        self._resumes_at = -1  # stream offset where the last run stopped

    def run(self) -> LaneRun | None:
        """Consume the boring envelopes at the head of the buffer."""
        if self._skip:
            self._skip -= 1
            return None
        window = self.frames.lane_window()
        if window is None:
            return None
        buf, pos, stop = window
        base = self.frames.offset - pos
        checker = self.checker
        if checker is not None:
            last_seq, worker, applied = checker.last_seq, checker.worker or UNKNOWN_WORKER, checker.last_applied
        else:
            last_seq, worker, applied = None, None, None
        # Only the Python decoder changes the registry (a Handshake): when it
        # consumed nothing since the last run, the scanner's answers hold.
        fresh = base + pos != self._resumes_at
        end, messages, nbytes, by_tag, last_seq, text, recs, names = self._scanner.run(
            buf, pos, stop, base, last_seq, worker, applied, fresh
        )
        self._resumes_at = base + end
        if not messages:
            self._skip = self._backoff
            self._backoff = min(2 * self._backoff, _BACKOFF_CAP)
            return None
        self._backoff = 1
        records: array[int] = array(RECORD_TYPECODE)
        if recs:
            records.frombytes(recs)
        if self.tracker is not None:  # before advance: the run's envelopes are still in buf
            _follow(self.tracker, buf, self._scanner.lasts(), records, last_seq)
        if not self.rules:
            del records[:]
        self.frames.advance(end)
        if checker is not None:
            checker.last_seq = last_seq
        if isinstance(text, tuple):  # LaneKind.ROWS
            return LaneRun(base + pos, base + end, messages, nbytes, by_tag, b"", 0, records, names, text)
        text = text or b""
        lines = text.count(b"\n") if self._selecting else messages if text else 0
        return LaneRun(base + pos, base + end, messages, nbytes, by_tag, text, lines, records, names)
