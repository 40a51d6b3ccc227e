"""The segment store's rules across a connection, for `verify`.

The rules are those the Java server enforces (`AppendDecoder`,
`AppendProcessor`, `WriterState`) or that its peers rely on (the reader
checks every event's type code):

- Hello: the ranges of both sides must overlap, else the server replies
  with its Hello and closes (nothing more may come from it); each side
  starts with Hello.
- Appends: a writer id is set up (SetupAppend) before any append of it;
  nothing but an AppendBlockEnd of the same writer follows an open
  AppendBlock; `numEvents` > 0; a block's bytes past `sizeOfWholeEvents`
  are exactly one PartialEvent or Padding, and a Padding tail comes with
  empty AppendBlockEnd data; event numbers of a writer strictly increase
  (never back, never repeated); every record of appended or read data is
  an Event (type 0).
- Acks: DataAppended acks a writer's events up to its `eventNumber`; acks
  go up, each names the previous one, and ack only events that were sent;
  events a healthy connection never acked are reported at its end.

On a raw file (no connection), a message's side is that of its type:
requests from the client, replies from the server, the first Hello from
the client and the second from the server.  The ack rules apply only once
both sides have been seen.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.protocols.base import ConnectionAnalyzer, ProtoMessage
from ripple_cli.protocols.pravega import records as rec
from ripple_cli.protocols.pravega.commands import NEW_WRITER

KINDS = {
    "no_hello": "a side whose first message is not Hello (a warning: the capture may have begun late)",
    "bad_version_range": "a Hello whose high version is below its low version (a warning)",
    "version_mismatch": "the client's and the server's Hello version ranges do not overlap",
    "not_closed": "the server went on after a Hello whose versions do not overlap (it must close)",
    "setup_missing": "an append for a writer id no SetupAppend set up",
    "block_interrupted": "a command other than AppendBlockEnd after an open AppendBlock",
    "block_writer_mismatch": "an AppendBlockEnd for another writer than the open AppendBlock's",
    "block_unfinished": "the connection ends inside an AppendBlock",
    "bad_num_events": "an AppendBlockEnd whose numEvents is not above 0",
    "bad_block_size": "sizeOfWholeEvents below 0 or beyond the block's data",
    "bad_block_tail": "a block's bytes past sizeOfWholeEvents are not exactly one PartialEvent or Padding",
    "padding_with_data": "a block ended by Padding whose AppendBlockEnd carries data",
    "event_count_mismatch": "numEvents differs from the Event records appended (a warning)",
    "event_number_backwards": "a writer's event number below its previous one",
    "event_number_repeated": "a writer's event number equal to its previous one (not strictly increasing)",
    "bad_event_type": "a record of appended or read data whose type code is not 0 (Event)",
    "bad_event_data": "appended data that does not split into whole Event records",
    "misplaced_command": "an Event or PartialEvent as a command of its own (they only exist inside data)",
    "ack_unknown_event": "a DataAppended acking events never sent (or for a writer never set up)",
    "ack_backwards": "a DataAppended not above the writer's previous ack",
    "ack_previous_mismatch": "a DataAppended whose previousEventNumber is not the previous ack (a warning)",
    "unacked_events": "events a writer sent that were never acked before the connection ended",
}

MAX_PENDING = 100_000  # unanswered appends remembered per writer (offsets and times)
_WARNINGS = frozenset(("no_hello", "bad_version_range", "event_count_mismatch", "ack_previous_mismatch"))
_CLIENT, _SERVER = "client", "server"
# Replies that end a writer's appends (its events will not be acked here).
_FAILURES = frozenset(
    (
        "WrongHost",
        "SegmentIsSealed",
        "NoSuchSegment",
        "SegmentIsTruncated",
        "InvalidEventNumber",
        "AuthTokenCheckFailed",
        "ErrorMessage",
        "OperationUnsupported",
    )
)


@dataclass
class _Writer:
    setup: bool = False
    segment: str | None = None
    request_ids: set[int] = field(default_factory=set)
    last_sent: int | None = None  # the event number of its last append
    floor: int | None = None  # AppendSetup's lastEventNumber: what the server already has
    ack_floor: int | None = None  # the last ack (or AppendSetup's number): the next ack must be above it
    answered: int | None = None  # the highest event acked or refused (ConditionalCheckFailed)
    failed: bool = False
    appends: int = 0
    events: int = 0
    # Appends not answered yet: (event number, offset, capture time), oldest
    # first; bounded (see MAX_PENDING), for the unacked report's offset and
    # the ack latencies.
    pending: deque[tuple[int, int, int | None]] = field(default_factory=deque)
    max_ack_latency_ns: int | None = None

    def answer(self, n: int, time_ns: int | None) -> None:
        """Events up to `n` are answered: their latency, and they are no
        longer pending."""
        self.answered = n if self.answered is None else max(self.answered, n)
        while self.pending and self.pending[0][0] <= n:
            _n, _offset, sent_at = self.pending.popleft()
            if sent_at is not None and time_ns is not None:
                latency = time_ns - sent_at
                self.max_ack_latency_ns = max(latency, self.max_ack_latency_ns or 0)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "segment": self.segment,
            "appends": self.appends,
            "events": self.events,
            "last_event_number": self.last_sent,
            "acked": self.answered,
            "max_ack_latency_ns": self.max_ack_latency_ns,
        }
        return {k: v for k, v in out.items() if v is not None}  # what is not known is left out


@dataclass
class _Block:
    writer: str
    offset: int
    data_length: int
    records: list[dict[str, Any]]
    interrupted: bool = False  # reported once; the AppendBlockEnd is still matched with it


def _problem(msg: ProtoMessage | None, kind: str, detail: str) -> Problem:
    sev = Severity.WARNING if kind in _WARNINGS else Severity.ERROR
    return Problem(msg.offset if msg else -1, kind, detail, severity=sev)


def _records(data: Any) -> list[dict[str, Any]]:
    return list(data.get("records", [])) if isinstance(data, dict) else []


def _number(n: int | None) -> str:
    return "none (a new writer)" if n == NEW_WRITER or n is None else f"#{n}"


class PravegaAnalyzer(ConnectionAnalyzer):
    def __init__(self) -> None:
        self.connection = False  # a capture's connection (each message's side known), not a raw file
        self.reads = {"requests": 0, "replies": 0, "bytes": 0, "events": 0}
        self.errors: dict[str, int] = {}
        self.writers: dict[str, _Writer] = {}
        self.hellos: dict[str, tuple[int, int]] = {}
        self.started: set[str] = set()
        self.seen: set[str] = set()
        self.mismatch = False
        self.not_closed = False
        self.block: _Block | None = None
        self.raw_hellos = 0

    # ------------------------------------------------------------ plumbing

    def _side(self, from_client: bool | None, msg: ProtoMessage) -> str:
        if from_client is not None:
            return _CLIENT if from_client else _SERVER
        if msg.direction == "reply":
            return _SERVER
        if msg.type == "Hello":
            self.raw_hellos += 1
            return _CLIENT if self.raw_hellos == 1 else _SERVER
        return _CLIENT

    def _writer(self, msg: ProtoMessage) -> tuple[str, _Writer] | None:
        w = msg.fields.get("writer_id")
        if not isinstance(w, str):
            return None
        return w, self.writers.setdefault(w, _Writer())

    def observe(self, from_client: bool | None, msg: ProtoMessage) -> list[Problem]:
        out: list[Problem] = []
        self.connection = self.connection or from_client is not None
        side = self._side(from_client, msg)
        self.seen.add(side)
        if side not in self.started:
            self.started.add(side)
            if msg.type != "Hello":
                out.append(_problem(msg, "no_hello", f"the {side}'s first message is {msg.type}, not Hello"))
        if side == _SERVER:
            self._server(msg, out)
        else:
            self._client(msg, out)
        return out

    def close(self) -> list[Problem]:
        # Both problems are the client's: at the offset of its block, or of
        # its first append never answered (when still known).
        client: dict[str, object] = {"from_client": True} if self.connection else {}
        out: list[Problem] = []
        if self.block is not None:
            out.append(
                Problem(
                    self.block.offset,
                    "block_unfinished",
                    f"the AppendBlock of writer {self.block.writer} at offset {self.block.offset} never ended",
                    extra=client,
                )
            )
            self.block = None
        if self.seen == {_CLIENT, _SERVER} and not self.mismatch:
            for w, st in self.writers.items():
                if st.failed or st.last_sent is None:
                    continue
                if st.answered is None or st.answered < st.last_sent:
                    acked = "none" if st.answered is None else f"#{st.answered}"
                    offset = st.pending[0][1] if st.pending else -1
                    detail = f"writer {w}: events up to #{st.last_sent} sent, acked up to {acked}"
                    out.append(Problem(offset, "unacked_events", detail, extra=client))
        return out

    def report(self) -> dict[str, Any] | None:
        out: dict[str, Any] = {}
        if self.hellos:
            out["hello"] = {side: f"{low}..{high}" for side, (high, low) in self.hellos.items()}
        if self.writers:
            out["writers"] = {w: st.to_json() for w, st in self.writers.items()}
        if self.reads["requests"] or self.reads["replies"]:
            out["reads"] = dict(self.reads)
        if self.errors:
            out["errors"] = dict(sorted(self.errors.items()))
        return out or None

    # ------------------------------------------------------------ the client

    def _client(self, msg: ProtoMessage, out: list[Problem]) -> None:
        t, f = msg.type, msg.fields
        if self.block is not None and t != "AppendBlockEnd" and not self.block.interrupted:
            out.append(
                _problem(msg, "block_interrupted", f"{t} while the AppendBlock at offset {self.block.offset} is open")
            )
            self.block.interrupted = True
            if t == "AppendBlock":
                self.block = None  # the new block replaces it
        if t == "Hello":
            self._hello(_CLIENT, msg, out)
        elif t in ("Event", "PartialEvent"):
            out.append(_problem(msg, "misplaced_command", f"{t} as a command of its own, outside any data"))
        elif t == "SetupAppend":
            got = self._writer(msg)
            if got:
                got[1].setup = True
                if isinstance(f.get("segment"), str):
                    got[1].segment = f["segment"]
                if isinstance(f.get("request_id"), int):
                    got[1].request_ids.add(f["request_id"])
        elif t == "ReadSegment":
            self.reads["requests"] += 1
        elif t == "AppendBlock":
            self._append_block(msg, out)
        elif t == "AppendBlockEnd":
            self._block_end(msg, out)
        elif t in ("ConditionalAppend", "ConditionalBlockEnd"):
            got = self._appending(msg, out)
            if t == "ConditionalAppend":
                event = f.get("event")
                self._check_records(msg, [event] if isinstance(event, dict) else [], "event", out)
            else:
                self._check_records(msg, _records(f.get("data")), "data", out)
            if got and isinstance(f.get("event_number"), int):
                got[1].events += 1
                self._event_number(msg, got, f["event_number"], out)

    def _appending(self, msg: ProtoMessage, out: list[Problem]) -> tuple[str, _Writer] | None:
        got = self._writer(msg)
        if got and not got[1].setup:
            out.append(_problem(msg, "setup_missing", f"{msg.type} for writer {got[0]}, which no SetupAppend set up"))
            got[1].setup = True  # once per writer
        if got and isinstance(msg.fields.get("request_id"), int):
            got[1].request_ids.add(msg.fields["request_id"])
        return got

    def _append_block(self, msg: ProtoMessage, out: list[Problem]) -> None:
        got = self._appending(msg, out)
        data = msg.fields.get("data")
        records = _records(data)
        # The last record may be the block's PartialEvent or Padding tail.
        body = records[:-1] if records and records[-1]["kind"] in (rec.PARTIAL_KIND, rec.PADDING_KIND) else records
        self._check_records(msg, body, "block data", out)
        if got:
            length = data.get("length", 0) if isinstance(data, dict) else 0
            self.block = _Block(got[0], msg.offset, length, records)

    def _block_end(self, msg: ProtoMessage, out: list[Problem]) -> None:
        f = msg.fields
        got = self._appending(msg, out)
        block, self.block = self.block, None
        num = f.get("num_events")
        if isinstance(num, int) and num <= 0:
            out.append(_problem(msg, "bad_num_events", f"numEvents is {num}"))
        records = _records(f.get("data"))
        whole = f.get("size_of_whole_events")
        events = 0
        if block is not None and got is not None and isinstance(whole, int):
            if block.writer != got[0]:
                out.append(
                    _problem(
                        msg,
                        "block_writer_mismatch",
                        f"AppendBlockEnd of writer {got[0]} ends the block of writer {block.writer}",
                    )
                )
            self._block_tail(msg, block, whole, bool(records), out)
        if block is not None:
            events += sum(1 for r in block.records if r["kind"] == rec.EVENT_KIND)
        joined = f.get("completes_partial_event")
        if isinstance(joined, list):
            self._check_records(msg, joined, "joined partial event", out)
            events += sum(1 for r in joined if r.get("kind") == rec.EVENT_KIND)
        self._check_records(msg, records, "data", out)
        events += sum(1 for r in records if r.get("kind") == rec.EVENT_KIND)
        if isinstance(num, int) and num > 0 and events != num:
            detail = f"numEvents is {num} but the appended data holds {events} Event record{'' if events == 1 else 's'}"
            out.append(_problem(msg, "event_count_mismatch", detail))
        if got and isinstance(f.get("last_event_number"), int):
            got[1].events += num if isinstance(num, int) and num > 0 else 0
            self._event_number(msg, got, f["last_event_number"], out)

    def _block_tail(self, msg: ProtoMessage, block: _Block, whole: int, has_data: bool, out: list[Problem]) -> None:
        """The block's bytes past sizeOfWholeEvents must be exactly one
        PartialEvent or Padding (AppendDecoder parses them as one command)."""
        if whole < 0 or whole > block.data_length:
            out.append(
                _problem(
                    msg,
                    "bad_block_size",
                    f"sizeOfWholeEvents {whole} is outside the block's {block.data_length} bytes of data",
                )
            )
            return
        tail = [r for r in block.records if r["offset"] + r["size"] > whole]
        if not tail:
            return
        first = tail[0]
        if len(tail) != 1 or first["offset"] != whole or first["kind"] not in (rec.PARTIAL_KIND, rec.PADDING_KIND):
            what = ", ".join(r["kind"] for r in tail)
            out.append(
                _problem(
                    msg,
                    "bad_block_tail",
                    f"the block's {block.data_length - whole} bytes past sizeOfWholeEvents {whole} are {what}, "
                    "not exactly one PartialEvent or Padding",
                )
            )
        elif first["kind"] == rec.PADDING_KIND and has_data:
            out.append(_problem(msg, "padding_with_data", "the block ends with Padding but AppendBlockEnd has data"))

    def _check_records(
        self, msg: ProtoMessage, records: Iterable[dict[str, Any]], where: str, out: list[Problem]
    ) -> None:
        for r in records:
            kind = r.get("kind")
            if kind in (rec.EVENT_KIND, rec.CONTINUATION_KIND):
                continue
            at = r.get("offset", 0)
            if kind == rec.FRAGMENT_KIND:
                if msg.type == "SegmentRead":
                    continue  # a read may end inside an event: the next read goes on with it
                out.append(
                    _problem(msg, "bad_event_data", f"{where}: {r.get('size')} bytes at {at} are not a whole record")
                )
                continue
            code = r.get("type", -2 if kind == rec.PARTIAL_KIND else -1)
            out.append(
                _problem(msg, "bad_event_type", f"{where}: a record of type {code} ({kind}) at {at}, not an Event")
            )

    def _event_number(self, msg: ProtoMessage, got: tuple[str, _Writer], n: int, out: list[Problem]) -> None:
        w, st = got
        before = [x for x in (st.last_sent, st.floor) if x is not None]
        if before:
            prev = max(before)
            if n < prev:
                out.append(_problem(msg, "event_number_backwards", f"writer {w}: event #{n} after #{prev}"))
            elif n == prev:
                out.append(_problem(msg, "event_number_repeated", f"writer {w}: event #{n} again"))
        st.last_sent = n if st.last_sent is None else max(st.last_sent, n)
        st.appends += 1
        if len(st.pending) < MAX_PENDING:
            st.pending.append((n, msg.offset, self.time_ns))

    def _hello(self, side: str, msg: ProtoMessage, out: list[Problem]) -> None:
        high, low = msg.fields.get("high_version"), msg.fields.get("low_version")
        if not (isinstance(high, int) and isinstance(low, int)):
            return
        if high < low:
            out.append(_problem(msg, "bad_version_range", f"high version {high} below low version {low}"))
        self.hellos[side] = (high, low)
        if len(self.hellos) == 2 and not self.mismatch:
            (ch, cl), (sh, sl) = self.hellos[_CLIENT], self.hellos[_SERVER]
            if cl > sh or ch < sl:
                self.mismatch = True
                out.append(_problem(msg, "version_mismatch", f"client versions {cl}..{ch}, server versions {sl}..{sh}"))

    # ------------------------------------------------------------ the server

    def _server(self, msg: ProtoMessage, out: list[Problem]) -> None:
        t, f = msg.type, msg.fields
        if self.mismatch and not self.not_closed and t != "Hello":
            self.not_closed = True
            out.append(_problem(msg, "not_closed", f"{t} from the server after incompatible Hellos"))
        if t == "Hello":
            self._hello(_SERVER, msg, out)
        elif t == "AppendSetup":
            got = self._writer(msg)
            n = f.get("last_event_number")
            if got and isinstance(n, int):
                st = got[1]
                st.floor = None if n == NEW_WRITER else n
                st.ack_floor = n
                if st.floor is not None:
                    st.answer(st.floor, None)
        elif t == "DataAppended":
            self._ack(msg, out)
        elif t == "SegmentRead":
            self.reads["replies"] += 1
            data = f.get("data")
            if isinstance(data, dict):
                self.reads["bytes"] += data.get("length", 0)
                self.reads["events"] += data.get("event_count", 0)
            self.reads["events"] += sum(1 for r in f.get("completes_event", []) if r.get("kind") == rec.EVENT_KIND)
        elif t == "ConditionalCheckFailed":
            self.errors[t] = self.errors.get(t, 0) + 1
            got = self._writer(msg)
            n = f.get("event_number")
            if got and isinstance(n, int):
                got[1].answer(n, self.time_ns)  # answered, not appended: it needs no ack
        elif t in _FAILURES:
            self.errors[t] = self.errors.get(t, 0) + 1
            got = self._writer(msg)
            rid = f.get("request_id")
            for w, st in self.writers.items():
                if (got and got[0] == w) or (isinstance(rid, int) and rid in st.request_ids):
                    st.failed = True

    def _ack(self, msg: ProtoMessage, out: list[Problem]) -> None:
        got = self._writer(msg)
        n = msg.fields.get("event_number")
        if got is None or not isinstance(n, int):
            return
        w, st = got
        if _CLIENT in self.seen and (st.last_sent is None or n > st.last_sent):
            sent = "nothing" if st.last_sent is None else f"up to #{st.last_sent}"
            out.append(_problem(msg, "ack_unknown_event", f"writer {w}: ack of #{n}, {sent} sent"))
        if st.ack_floor is not None and n <= st.ack_floor:
            out.append(_problem(msg, "ack_backwards", f"writer {w}: ack of #{n} after #{st.ack_floor}"))
        prev = msg.fields.get("previous_event_number")
        if isinstance(prev, int) and st.ack_floor is not None and prev != st.ack_floor:
            out.append(
                _problem(
                    msg,
                    "ack_previous_mismatch",
                    f"writer {w}: previousEventNumber {prev}, but the previous ack was {_number(st.ack_floor)}",
                )
            )
        st.ack_floor = n if st.ack_floor is None else max(st.ack_floor, n)
        st.answer(n, self.time_ns)
