"""`LumberjackAnalyzer`: the rules of one Lumberjack connection, both sides.

The writer announces a batch with `W n` and sends n events (`D` in v1, `J`
in v2, bare or inside `C` frames); the reader acknowledges with `A`.  Real
readers ack in one of two styles, and both are accepted:
- go-lumber: the ack is the number of events of the batch acknowledged;
- logstash-input-beats (and the old Ruby server): the ack is the highest
  seq seen, and in v1 it may cover several batches (a bulk ack).
In v2 the two agree (seq restarts at 1 in every batch).  In v1, where seq
runs on across the connection, the style is learnt from the first ack that
only one of them explains.  An ack smaller than the batch is partial
progress; `A 0` is a keepalive (sent with version 2 even on a v1
connection by logstash-input-beats), or the ack of an empty batch (`W 0`).

A v1 writer may keep sending past its window without a new `W`
(lumberjack-protocol sends one `W` per connection): the events then form
batches of the same size, as the original Ruby reader treated them.  In v2
an event that no `W` made room for is an error (go-lumber refuses it).

Each direction's role is fixed by its first frame (writer frames or acks),
so a capture that guessed the client wrongly is still read right; a raw
file (from_client None) is taken by frame type alone.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.protocols.base import ConnectionAnalyzer, ProtoMessage
from ripple_cli.protocols.lumberjack.wire import U32_MAX

ANALYSIS_KINDS: Mapping[str, str] = {
    "wrong_direction": "a writer frame (W, D, J, C) on the side that acks, or an ack on the writer's side",
    "version_mismatch": "a frame whose version is not the connection's (a version 2 keepalive on v1 is accepted)",
    "window_in_compressed": "a W frame inside a C frame (go-lumber refuses it, logstash-input-beats accepts it)",
    "json_in_v1_batch": "a J frame in a batch opened by a version 1 W",
    "data_in_v2_batch": "a D frame in a batch opened by a version 2 W",
    "empty_event": "a D frame without pairs or a J frame without payload (logstash-input-beats rejects both)",
    "event_outside_batch": "an event that no W made room for (an error in v2; a warning in v1, before any W)",
    "batch_incomplete": "a new W, or in v2 the end of the connection, before the batch had all its events (a warning)",
    "seq_order": "an event seq out of order: v2 counts each batch from 1, v1 counts the connection's events",
    "ack_above_batch": "an ack above the batch it answers: neither a count of its events nor one of their seqs",
    "ack_unseen": "an ack for more events than were sent",
    "ack_backwards": "an ack below an earlier ack of the same batch",
    "unexpected_ack": "an ack (not 0) while no batch waits for one",
    "unacked_at_close": "events never acknowledged when the connection closed (a warning)",
}

# Batches followed at once.  A reader acks each batch before the writer
# sends many more (go-lumber waits for every ack; Beats pipelines two), so
# more waiting means the acks are not in the input (one side of a
# connection, a raw file of the writer's frames): the oldest are then
# counted, not followed, to keep the memory bounded.
MAX_BATCHES = 1 << 16
MAX_LISTED = 1 << 16  # seqs kept for a batch whose seqs do not run on by one
WINDOWS_KEPT = 32  # W counts listed in the report, from the first

WRITER = "writer"
READER = "reader"
EVENTS = frozenset(("Data", "Json"))


@dataclass
class Batch:
    offset: int  # of its W (or of its first event, when no W opened it)
    version: int
    count: int | None  # events announced; None when no W said
    size: int = 0  # events received
    acked: int = 0  # events acknowledged, from the first
    closed: bool = False  # no more events join it
    opaque: bool = False  # some of its events could not be seen: its counts are not judged
    # The events' seqs, kept in constant space while they run on by one (as
    # they do but for a seq_order problem): the first, or the whole list.
    first: int = 0
    listed: list[int] | None = None
    last_ns: int | None = None  # capture time of its last event: ack latency runs from it

    @property
    def full(self) -> bool:
        return self.count is not None and self.size >= self.count

    def add(self, seq: int) -> None:
        if self.size == 0:
            self.first = seq
        elif self.listed is None and seq != (self.first + self.size) & U32_MAX:
            self.listed = [(self.first + i) & U32_MAX for i in range(self.size)]
        if self.listed is not None:
            if len(self.listed) < MAX_LISTED:
                self.listed.append(seq)
            else:
                self.opaque = True  # a batch of scrambled seqs too long to follow: acks are taken at their word
        self.size += 1

    def index(self, seq: int) -> int | None:
        """Where the event with this seq is in the batch (the first one)."""
        if self.listed is not None:
            return self.listed.index(seq) if seq in self.listed else None
        i = (seq - self.first) & U32_MAX
        return i if i < self.size else None

    def seq_range(self) -> str:
        last = self.listed[-1] if self.listed is not None else (self.first + self.size - 1) & U32_MAX
        return f"{self.first}..{last}"

    def describe(self) -> str:
        size = f"W {self.count}" if self.count is not None else "no W"
        return f"the batch at offset {self.offset} ({size})"


class LumberjackAnalyzer(ConnectionAnalyzer):
    def __init__(self) -> None:
        self.roles: dict[bool, str] = {}  # from_client -> the role its frames showed
        self.version: int | None = None  # the writer's version
        self.batches: deque[Batch] = deque()  # not yet fully acknowledged, oldest first
        self.current: Batch | None = None  # the batch events join
        self.style: str | None = None  # v1: "count" or "seq", once an ack tells
        self.last_seq: int | None = None  # v1: the previous event's seq
        self.windows: list[tuple[int, int]] = []  # (offset, count) of the first W frames: the window over time
        self.window_total = 0
        self.last_window: int | None = None
        self.acks = 0
        self.keepalives = 0
        self.events = 0
        self.connection = False  # a real connection (not a raw file)
        self.untracked = 0  # unacknowledged events of batches no longer followed (MAX_BATCHES)
        self.untracked_batches = 0
        self.batch_count = 0
        self.acked_events = 0
        self.partial_acks = 0
        # Ack latency (captures): from a batch's last event to the ack completing it, in ns.
        self.latency: list[int] = []  # count, min, max, sum once there is one
        self.window_changes = 0
        self.window_min = self.window_max = 0
        self._outside_reported = False

    # ------------------------------------------------------------ entry points

    def observe(self, from_client: bool | None, msg: ProtoMessage) -> list[Problem]:
        out: list[Problem] = []
        role = READER if msg.type == "Ack" else WRITER
        if from_client is not None:
            self.connection = True
            if not self._role_ok(from_client, role, msg, out):
                return out
        if msg.fields.get("after_damage"):
            self._damaged(role)
        if msg.type == "Ack":
            self._ack(msg, out)
        elif msg.type == "Window":
            self._window(msg, out)
        elif msg.type in EVENTS:
            self._event(msg, out)
        elif msg.type == "Compressed":
            self._writer_version(msg, out)
            if not msg.fields.get("complete") and self.current is not None:
                self.current.opaque = True  # some of its events are in bytes that could not be read
        return out

    def close(self) -> list[Problem]:
        out: list[Problem] = []
        # Both problems concern the writer's events: reported on its side.
        writer = next((side for side, role in self.roles.items() if role == WRITER), None)
        side: dict[str, object] = {} if writer is None else {"from_client": writer}
        cur = self.current
        if cur is not None and cur.version == 2 and not cur.closed and not cur.full and not cur.opaque:
            out.append(
                Problem(
                    cur.offset,
                    "batch_incomplete",
                    f"{cur.describe()} had {cur.size} of its events when the connection closed",
                    severity=Severity.WARNING,
                    extra=dict(side),
                )
            )
        # A raw file shows one side only: acks are not expected in it.
        if self.connection or self.acks:
            waiting = [b for b in self.batches if b.size > b.acked]
            if waiting:
                n = sum(b.size - b.acked for b in waiting) + self.untracked
                which = waiting[0].describe()
                if len(waiting) > 1:
                    which = f"{len(waiting)} batches, from {which}"
                out.append(
                    Problem(
                        waiting[0].offset,
                        "unacked_at_close",
                        f"{n} events never acknowledged at the end of the connection: {which}",
                        severity=Severity.WARNING,
                        extra={"events": n, **side},
                    )
                )
        return out

    def report(self) -> dict[str, Any] | None:
        """The connection's figures for verify's summary: batches and
        events, acks (the style the reader showed, keepalives, partial acks),
        the writer's window over time and, in a capture, the ack latency."""
        if not (self.window_total or self.events or self.acks):
            return None
        v1 = self.version == 1
        batches: dict[str, Any] = {"count": self.batch_count, "events": self.events}
        out: dict[str, Any] = {"version": self.version, "batches": batches}
        if self.connection or self.acks:  # a raw file of the writer's frames has no acks to count
            batches.update(
                acked=self.acked_events, unacked=sum(b.size - b.acked for b in self.batches) + self.untracked
            )
            out["acks"] = {
                "total": self.acks,
                "keepalives": self.keepalives,
                "partial": self.partial_acks,
                # In v2 a count and the highest seq are the same number.
                "style": (self.style or "either") if v1 else "either",
            }
        if self.window_total:
            out["window"] = {
                "first": self.windows[0][1],
                "last": self.last_window,
                "min": self.window_min,
                "max": self.window_max,
                "changes": self.window_changes,
                "counts": [c for _o, c in self.windows] + (["..."] if self.window_total > WINDOWS_KEPT else []),
            }
        if self.latency:
            n, low, high, total = self.latency
            out["ack_latency_ns"] = {"batches": n, "min": low, "mean": total // n, "max": high}
        return out

    # ------------------------------------------------------------ the writer

    def _role_ok(self, from_client: bool, role: str, msg: ProtoMessage, out: list[Problem]) -> bool:
        mine = self.roles.get(from_client)
        other = self.roles.get(not from_client)
        if mine is None and other != role:
            self.roles[from_client] = role
            return True
        if mine == role:
            return True
        side = "client" if from_client else "server"
        owner = "acks" if role == WRITER else "the writer's frames"
        out.append(
            Problem(msg.offset, "wrong_direction", f"a {msg.type} frame from the {side}, the side that sends {owner}")
        )
        return False

    def _writer_version(self, msg: ProtoMessage, out: list[Problem]) -> None:
        version = msg.fields["version"]
        if self.version is None:
            self.version = version
        elif version != self.version:
            out.append(
                Problem(
                    msg.offset,
                    "version_mismatch",
                    f"a version {version} {msg.type} frame on a version {self.version} connection",
                )
            )

    def _window(self, msg: ProtoMessage, out: list[Problem]) -> None:
        self._writer_version(msg, out)
        count = msg.fields["count"]
        if "in_compressed" in msg.fields:
            out.append(
                Problem(msg.offset, "window_in_compressed", f"W {count} inside the C frame at offset {msg.offset}")
            )
        cur = self.current
        if cur is not None and not cur.closed and cur.count is not None and not cur.full and not cur.opaque:
            out.append(
                Problem(
                    msg.offset,
                    "batch_incomplete",
                    f"a new W came before {cur.describe()} had its events ({cur.size} came)",
                    severity=Severity.WARNING,
                )
            )
        if cur is not None:
            cur.closed = True
        self._window_seen(msg.offset, count)
        self._outside_reported = False
        batch = Batch(msg.offset, msg.fields["version"], count, closed=count == 0)
        self._track(batch)
        self.current = batch

    def _window_seen(self, offset: int, count: int) -> None:
        if len(self.windows) < WINDOWS_KEPT:
            self.windows.append((offset, count))
        if self.window_total == 0:
            self.window_min = self.window_max = count
        elif count != self.last_window:
            self.window_changes += 1
        self.window_min, self.window_max = min(self.window_min, count), max(self.window_max, count)
        self.window_total += 1
        self.last_window = count

    def _event(self, msg: ProtoMessage, out: list[Problem]) -> None:
        self._writer_version(msg, out)
        self.events += 1
        version = msg.fields["version"]
        seq = msg.fields["seq"]
        letter = "J" if msg.type == "Json" else "D"
        if (msg.type == "Data" and msg.fields["pairs"] == 0) or (msg.type == "Json" and msg.fields["length"] == 0):
            what = "no pairs" if msg.type == "Data" else "an empty payload"
            out.append(Problem(msg.offset, "empty_event", f"{letter} frame seq {seq} with {what}"))
        batch = self._batch_for(msg, version, letter, seq, out)
        if batch.version == 1 and msg.type == "Json":
            out.append(Problem(msg.offset, "json_in_v1_batch", f"J frame seq {seq} in {batch.describe()}, a v1 batch"))
        elif batch.version == 2 and msg.type == "Data":
            out.append(Problem(msg.offset, "data_in_v2_batch", f"D frame seq {seq} in {batch.describe()}, a v2 batch"))
        if not batch.opaque:
            self._check_seq(msg, batch, letter, seq, out)
        if batch.version == 1:
            self.last_seq = seq
        batch.add(seq)
        batch.last_ns = self.time_ns
        if batch.full:
            batch.closed = True

    def _batch_for(self, msg: ProtoMessage, version: int, letter: str, seq: int, out: list[Problem]) -> Batch:
        """The batch this event joins, opening one when none has room."""
        cur = self.current
        if cur is not None and not cur.closed:
            return cur
        if cur is not None and cur.version == 1 and cur.count:
            # v1 past its window without a new W: a batch of the same size.
            batch = Batch(msg.offset, 1, cur.count)
        else:
            batch = Batch(msg.offset, version, None, opaque=True)
            if not self._outside_reported:
                # Once per run of such events: the first says it all.
                self._outside_reported = True
                after = f"after {cur.describe()} was complete" if cur is not None else "before any W"
                sev = Severity.ERROR if version == 2 else Severity.WARNING
                out.append(
                    Problem(msg.offset, "event_outside_batch", f"{letter} frame seq {seq} {after}", severity=sev)
                )
        self._track(batch)
        self.current = batch
        return batch

    def _track(self, batch: Batch) -> None:
        self.batch_count += 1
        if self.untracked_batches:
            batch.opaque = True
        self.batches.append(batch)
        if len(self.batches) > MAX_BATCHES:
            old = self.batches.popleft()
            self.untracked += old.size - old.acked
            self.untracked_batches += 1
            if self.untracked_batches == 1:
                for b in self.batches:  # acks may be for the batch dropped: they can no longer be matched
                    b.opaque = True

    def _check_seq(self, msg: ProtoMessage, batch: Batch, letter: str, seq: int, out: list[Problem]) -> None:
        if batch.version == 2:
            want = batch.size + 1
            if seq != want:
                out.append(
                    Problem(
                        msg.offset,
                        "seq_order",
                        f"{letter} frame seq {seq}, expected {want} (v2 counts each batch's events from 1)",
                    )
                )
        elif self.last_seq is not None:
            want = (self.last_seq + 1) & U32_MAX
            if seq != want:
                out.append(
                    Problem(
                        msg.offset,
                        "seq_order",
                        f"{letter} frame seq {seq}, expected {want} (v1 counts the connection's events, wrapping to 0)",
                    )
                )

    def _damaged(self, role: str) -> None:
        # Frames were lost: what they held (events, acks) is unknown.
        if role == WRITER:
            if self.current is not None:
                self.current.opaque = True
            self.last_seq = None
        else:
            self.batches.clear()
            self.current = None

    # ------------------------------------------------------------ the reader

    def _ack(self, msg: ProtoMessage, out: list[Problem]) -> None:
        self.acks += 1
        version, a = msg.fields["version"], msg.fields["seq"]
        if self.version is not None and version != self.version and not (version == 2 and a == 0):
            detail = f"a version {version} ack on a version {self.version} connection"
            out.append(Problem(msg.offset, "version_mismatch", detail))
        v1 = (self.version or version) == 1
        # Empty batches first: logstash-input-beats acks a W 0 with A 0, go-lumber never acks it.
        if a == 0 and self.batches and self.batches[0].count == 0:
            self._done(self.batches[0])
            return
        while self.batches and self.batches[0].count == 0:
            self.batches.popleft()
        found = self._find_seq(a) if v1 else None
        if a == 0 and found is None:
            self.keepalives += 1
            return
        if not self.batches:
            if self.events or self.window_total:  # a capture that starts mid-connection may show acks for unseen events
                out.append(Problem(msg.offset, "unexpected_ack", f"ack {a} while no batch waits for one"))
            return
        front = self.batches[0]
        if front.opaque:
            self._ack_opaque(front, a, found)
            return
        by_count = a if front.count is not None and a <= front.count else None
        if v1 and found is not None and (by_count is None or self.style != "count"):
            if by_count is None:
                self.style = "seq"
            index, k = found
            for _ in range(index):  # a bulk ack: the batches before are acknowledged whole
                self._done(self.batches[0])
            self._apply(self.batches[0], k, a, msg, out)
            return
        if by_count is None:
            seqs = f", seqs {front.seq_range()}" if front.size and v1 else ""
            out.append(Problem(msg.offset, "ack_above_batch", f"ack {a} is above {front.describe()}{seqs}"))
            return
        if v1 and found is None and front.size:
            self.style = "count"
        self._apply(front, by_count, a, msg, out)

    def _find_seq(self, a: int) -> tuple[int, int] | None:
        """(index of the batch, events acknowledged in it) if `a` is the seq
        of an event of a batch still waiting (v1: seqs are unique on a
        connection, until they wrap after 2^32 events)."""
        for index, batch in enumerate(self.batches):
            k = batch.index(a)
            if k is not None:
                return index, k + 1
        return None

    def _ack_opaque(self, front: Batch, a: int, found: tuple[int, int] | None) -> None:
        # Events of this batch went unseen: take the ack at its word.
        if found is not None:
            for _ in range(found[0]):
                self._done(self.batches[0])
            front = self.batches[0]
            self._acked(front, max(front.acked, found[1]))
        elif front.count is None or a >= front.count:
            self._acked(front, front.size)
            front.closed = True
        if front.closed and front.acked >= front.size:
            self._done(front)

    def _apply(self, batch: Batch, k: int, a: int, msg: ProtoMessage, out: list[Problem]) -> None:
        if k < batch.acked:
            out.append(
                Problem(
                    msg.offset,
                    "ack_backwards",
                    f"ack {a} acknowledges {k} events of {batch.describe()}, {batch.acked} were already",
                )
            )
            return
        if k > batch.size:
            out.append(
                Problem(
                    msg.offset,
                    "ack_unseen",
                    f"ack {a} acknowledges {k} events of {batch.describe()}, {batch.size} were sent",
                )
            )
            k = batch.size
        self._acked(batch, k)
        if batch.closed and batch.acked >= batch.size:
            self._done(batch)
        else:
            self.partial_acks += 1

    def _acked(self, batch: Batch, k: int) -> None:
        self.acked_events += max(0, k - batch.acked)
        batch.acked = max(batch.acked, k)

    def _done(self, batch: Batch) -> None:
        """The oldest batch is acknowledged whole."""
        assert self.batches[0] is batch
        self._acked(batch, batch.size)
        self.batches.popleft()
        if self.time_ns is not None and batch.last_ns is not None:
            ns = self.time_ns - batch.last_ns
            lat = self.latency
            self.latency = [lat[0] + 1, min(lat[1], ns), max(lat[2], ns), lat[3] + ns] if lat else [1, ns, ns, ns]
