"""Ripple's stream rules, what `verify` checks beyond each envelope on its
own (reference section 2): envelope sequence numbers, Delta `sequence_no`
per (worker, output), schemas known before Deltas, refused negotiations.

They hold per direction (a worker's stream), so the stream dissector
checks them as it decodes: the fast lane checks the same rules in C and
reads and updates this checker's state between its runs."""

from __future__ import annotations

import functools

from ripple_cli.codec.messages import DELTA, DeltaMsg, DeltaView, Handshake, Heartbeat, SchemaNegotiation
from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.codec.registry import SchemaRegistry
from ripple_cli.codec.schema import Schema, text
from ripple_cli.protocols.item import Progress
from ripple_cli.protocols.ripple.message import Message

UNKNOWN_WORKER = b"?"


class SequenceChecker:
    """One per stream (per connection and direction).  `registry` is the
    decoder's own, which already holds the stream's Handshake schemas."""

    def __init__(self, registry: SchemaRegistry) -> None:
        self.registry = registry
        self.last_seq: int | None = None
        self.worker: bytes | None = None
        self.handshake_seen = False
        # (worker, output) -> last sequence_no applied
        self.last_applied: dict[tuple[bytes, bytes], int] = {}

    def observe(self, msg: Message) -> list[Problem]:
        f = msg.frame
        out: list[Problem] = []
        if self.last_seq is not None and f.seq <= self.last_seq:
            out.append(seq_order_problem(f.offset, f.seq, self.last_seq))
        self.last_seq = f.seq
        body = msg.body
        if isinstance(body, Handshake):
            self.worker = body.source_worker_id
            self.handshake_seen = True
            out.extend(duplicate_schema_problems(f.offset, f.seq, body))
        elif isinstance(body, SchemaNegotiation) and not body.ok:
            errors = "; ".join(text(e) for e in body.errors) or "no errors given"
            out.append(Problem(f.offset, "negotiation_failed", f"Schema_negotiation refused: {errors}", seq=f.seq))
        elif f.tag == DELTA and isinstance(body, (DeltaMsg, DeltaView)):
            if f.fingerprint not in self.registry:
                out.append(before_schema_problem(f.offset, f.seq, f.fingerprint))
            out.extend(self._delta_seq(f.offset, f.seq, body.source_output, body.sequence_no))
        return out

    def _delta_seq(self, offset: int, seq: int, output: bytes, n: int) -> list[Problem]:
        worker = self.worker or UNKNOWN_WORKER
        key = (worker, output)
        last = self.last_applied.get(key)
        if last is None or n != last + 1:
            return self._delta_problem(offset, seq, key, last, n)
        self.last_applied[key] = n
        return []

    def _delta_problem(
        self, offset: int, seq: int, key: tuple[bytes, bytes], last: int | None, n: int
    ) -> list[Problem]:
        worker, output = key
        who = f"({text(worker)}, {text(output)})"
        if last is None and self.handshake_seen and n < 1:
            # None applied yet, as if the last were 0: at or below it (a
            # negative count of missing Deltas was said here), and not applied.
            return [duplicate_problem(offset, seq, key, 0, n)]
        if last is None:
            self.last_applied[key] = n
            if self.handshake_seen and n != 1:
                return [
                    Problem(
                        offset,
                        "delta_gap",
                        f"{who} first sequence_no is {n}, expected 1 ({n - 1} missing)",
                        seq=seq,
                        extra={"worker": text(worker), "output": text(output), "missing": n - 1},
                    )
                ]
            return []
        if n <= last:
            return [duplicate_problem(offset, seq, key, last, n)]
        self.last_applied[key] = n
        if n > last + 1:
            return [gap_problem(offset, seq, key, last, n)]
        return []


# The problems the rules raise, also made from the fast lane's records
# (lane.py): one wording for both.


def seq_order_problem(offset: int, seq: int, last: int) -> Problem:
    return Problem(offset, "seq_order", f"envelope seq {seq} is not above the previous {last}", seq=seq)


def before_schema_problem(offset: int, seq: int, fingerprint: bytes) -> Problem:
    return Problem(offset, "delta_before_schema", _before_schema_detail(fingerprint), seq=seq)


@functools.lru_cache(maxsize=256)
def _before_schema_detail(fingerprint: bytes) -> str:
    # One string for the many Deltas of an undeclared output (a stream can
    # list 10,000 problems of one kind): made and held once, not per Delta.
    return f"Delta for {text(fingerprint)} before its schema is known"


def duplicate_problem(offset: int, seq: int, key: tuple[bytes, bytes], last: int, n: int) -> Problem:
    worker, output = key
    return Problem(
        offset,
        "delta_duplicate",
        f"({text(worker)}, {text(output)}) sequence_no {n} at or below the last applied {last} (duplicate)",
        seq=seq,
        extra={"worker": text(worker), "output": text(output)},
    )


def gap_problem(offset: int, seq: int, key: tuple[bytes, bytes], last: int, n: int) -> Problem:
    """sequence_no n after last, n > last + 1."""
    worker, output = key
    missing = n - last - 1
    which = str(last + 1) if missing == 1 else f"{last + 1}..{n - 1}"
    return Problem(
        offset,
        "delta_gap",
        f"({text(worker)}, {text(output)}) sequence_no jumped from {last} to {n} ({missing} missing: {which})",
        seq=seq,
        extra={"worker": text(worker), "output": text(output), "missing": missing},
    )


class ProgressTracker:
    """A stream's `Progress`, for the tap's live view: the last seq and
    Delta, the watermark, heartbeats, and what the stream rules say of the
    numbering.  Fed in stream order by the stream dissector (stream.py):
    each message the Python decoder takes, with the problems the checker
    found in it, and each fast lane run's last envelopes and stream-rule
    records (lane.py)."""

    def __init__(self) -> None:
        self.progress = Progress()

    def message(self, msg: Message, problems: list[Problem]) -> None:
        self.progress.seq = msg.frame.seq
        body = msg.body
        if isinstance(body, DeltaMsg | DeltaView):
            self.delta(body.source_output, body.sequence_no, body.watermark_ns)
        elif isinstance(body, Heartbeat):
            self.heartbeat(body.load)
        for p in problems:
            if p.kind == "delta_gap":
                n = p.extra.get("missing", 1)
                self.numbering(missing=n if isinstance(n, int) else 1)
            elif p.kind == "delta_duplicate":
                self.numbering(duplicates=1)
            elif p.kind == "seq_order":
                self.numbering(out_of_order=1)

    def delta(self, output: bytes, sequence_no: int, watermark_ns: int | None) -> None:
        pr = self.progress
        pr.position = (text(output), sequence_no)
        if watermark_ns is not None:
            self.watermark(watermark_ns)

    def watermark(self, watermark_ns: int) -> None:
        self.progress.watermark_ns = watermark_ns
        self.progress.watermarks += 1

    def heartbeat(self, load: float) -> None:
        self.progress.load = load
        self.progress.heartbeats += 1

    def numbering(self, missing: int = 0, duplicates: int = 0, out_of_order: int = 0) -> None:
        pr = self.progress
        pr.missing += missing
        pr.duplicates += duplicates
        pr.out_of_order += out_of_order


def duplicate_schema_problems(offset: int, seq: int, hs: Handshake) -> list[Problem]:
    """A Handshake that declares one fingerprint twice with different
    schemas (a warning): the reference does not say which holds; ripple
    takes the last, everywhere (decode, encode, schema show and extract)."""
    seen: dict[bytes, tuple[bytes, Schema]] = {}
    out = []
    for output, schema in hs.output_schemas:
        first = seen.get(schema.fingerprint)
        if first is not None and first[1] != schema:
            out.append(
                Problem(
                    offset,
                    "duplicate_schema",
                    f"{text(schema.fingerprint)} declared twice, differently (outputs {text(first[0])} and "
                    f"{text(output)}): the last is used",
                    severity=Severity.WARNING,
                    seq=seq,
                )
            )
        seen[schema.fingerprint] = (output, schema)
    return out
