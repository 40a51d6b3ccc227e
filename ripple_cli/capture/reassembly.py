"""TCP reassembly: segments in capture order to the events of `events.py`.

Each connection has two directions.  A direction delivers its bytes in
sequence order; a segment that arrives early waits in a per-direction
out-of-order buffer whose segments never overlap (the first copy of any byte
is kept: later copies are trimmed against it, and compared with it); the
buffer is a sorted list of offsets, searched by bisection, so a segment
costs O(log n) comparisons wherever it lands, and a retransmission is
trimmed against the delivered point, compared only with the recent
history it overlaps.  All
sequence arithmetic is modulo 2**32, relative to the next expected byte, so
wrap-around needs no special case; past that point positions are stream
offsets (Python ints, from 0 at the direction's first byte).

Which side is the client (the rule `StreamId.client` documents):

1. the sender of a SYN without ACK, or the receiver of a SYN+ACK;
2. with no handshake seen, the side whose port is not among the server
   ports given (`--port`), when exactly one side's port is;
3. else, when exactly one of the two ports is ephemeral (>= 32768, where
   Linux's and IANA's ephemeral ranges begin), that side;
4. else the side first seen sending.

When a missing segment (a hole) is declared a `StreamGap` of its exact size
(then the bytes after it are delivered):

- when the direction's out-of-order buffer holds more than `window` bytes
  (`--reassembly-window`; a `reassembly_window` note says so, once);
- when the connection ends: a RST, eviction, end of capture.  FINs do not
  declare: data before them may still come, out of order or retransmitted
  (capture points reorder across directions: multi-queue NICs, several
  CPUs), so a direction ends at its FIN once every byte before it came.

An acknowledgment beyond the bytes seen (a hole) does not declare it
either: the segment may still come, a few packets later (Wireshark and
Zeek keep reassembling late segments too).  It is counted (`acked_unseen`,
once per hole), with the
out-of-order, retransmitted and held segments: `TcpCounts`, on each
direction's `StreamEnd`.

A hole with nothing seen after it (no data, no FIN) has no known size and
is not declared.

A connection begins with its first SYN, SYN+ACK or data segment (a lone
ACK, FIN or RST of an unknown connection is ignored); both of its streams
start then (`syn_seen`: it began with a handshake), and each ends on its
own.  One that begins with data waits (`REORDER_PACKETS` of its packets, or
the end) for its handshake, which reordering may put later: then the SYN
says who is the client and where each stream starts; without one, each
stream starts at the lowest sequence number seen.  A SYN+ACK before its
SYN, and a SYN again with the same ISN, are the same connection.  After
both ends, or a RST, a new SYN (another ISN) on the same addresses and
ports is a new connection, while other packets within two minutes are the
old one's stragglers.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import OrderedDict

from ripple_cli.capture.events import (
    CaptureEvent,
    CaptureNote,
    Endpoint,
    StreamData,
    StreamEnd,
    StreamGap,
    StreamId,
    StreamStart,
    TcpCounts,
)
from ripple_cli.capture.packets import ACK, FIN, RST, SYN, Segment, address_text

MASK = 0xFFFFFFFF
HALF = 0x80000000
EPHEMERAL_PORTS = 32768
# A packet without SYN for a connection closed less than this long ago is
# one of its stragglers (a last ACK, a late retransmission), not a new
# connection: twice Linux's TIME_WAIT.
CLOSED_LINGER_NS = 120 * 1_000_000_000
# A connection first seen without its handshake waits this many of its
# packets for the SYN that reordering put later (more than the widest
# reordering seen on capture hosts: a few packets across directions).
REORDER_PACKETS = 16
EVICTED_KEPT = 4096  # at least this many evicted directions' next sequence numbers are kept

FlowKey = tuple[bytes, int, bytes, int]  # (src address, src port, dst address, dst port)


# Out-of-order pieces a direction holds at most (see _too_many_pieces): far
# more than full-size segments fill the window with.
MAX_HELD_PIECES = 8192


def _entry_end(entry: tuple[int, bytes]) -> int:
    return entry[0] + len(entry[1])


class _Direction:
    __slots__ = (
        "based",
        "buffered",
        "counts",
        "delivered",
        "ended",
        "fin",
        "hist",
        "hist_lo",
        "hist_size",
        "hole_acked",
        "nxt",
        "segs",
        "starts",
        "stream",
        "window_hit",
    )

    def __init__(self, stream: StreamId) -> None:
        self.stream = stream
        self.based = False  # whether `nxt` is known yet (from a SYN or the first data)
        self.nxt = 0  # sequence number of the next byte to deliver
        self.delivered = 0  # stream offset of the next byte to deliver (bytes delivered + gaps)
        self.starts: list[int] = []  # stream offsets of the out-of-order segments, sorted, not overlapping
        self.segs: list[tuple[bytes, int]] = []  # their (bytes, capture time), parallel to `starts`
        self.buffered = 0
        # Recently delivered (offset, bytes), from hist[hist_lo] on, to compare
        # retransmissions: a list, so that the entries an old retransmission
        # overlaps are found by bisection, not by walking the whole history.
        self.hist: list[tuple[int, bytes]] = []
        self.hist_lo = 0
        self.hist_size = 0
        self.fin: int | None = None  # stream offset of the FIN, once seen
        self.ended = False
        self.counts = TcpCounts()
        self.hole_acked = -1  # stream offset of the hole last counted as acked unseen
        self.window_hit = False  # whether --reassembly-window declared a hole (noted once)

    def base(self, seq: int) -> None:
        self.based = True
        self.nxt = seq & MASK

    def offset(self, seq: int) -> int:
        """The stream offset of sequence number `seq`: the nearest one
        (modulo 2**32) to the next expected byte."""
        return self.delivered + ((seq - self.nxt + HALF) & MASK) - HALF


class _Connection:
    __slots__ = ("c2s", "isns", "keys", "last_ns", "number", "s2c")

    def __init__(self, number: int, c2s: _Direction, s2c: _Direction, keys: tuple[FlowKey, FlowKey]) -> None:
        self.number = number
        self.c2s = c2s
        self.s2c = s2c
        self.keys = keys
        # Each side's SYN sequence number, by its sending key: to tell a SYN
        # seen again (retransmitted, duplicated, reordered) from a new connection.
        self.isns: dict[FlowKey, int] = {}
        self.last_ns = 0


class _Waiting:
    """A connection first seen without its handshake: its packets so far."""

    __slots__ = ("number", "packets")

    def __init__(self, number: int) -> None:
        self.number = number
        self.packets: list[tuple[int, Segment]] = []


Entry = tuple[_Connection, _Direction, _Direction]


class Reassembler:
    """Feed it every TCP segment of a capture in order (`feed`), then
    `finish`; each call returns the events it produced.

    Memory: at most `window` buffered bytes and `history` delivered bytes
    per open direction, at most `max_flows` connections open or waiting,
    and `REORDER_PACKETS` packets per connection waiting for its handshake.
    """

    def __init__(
        self,
        max_flows: int = 10000,
        window: int = 8 << 20,
        history: int = 256 << 10,
        server_ports: frozenset[int] = frozenset(),
    ) -> None:
        if max_flows < 1:
            raise ValueError("max_flows must be at least 1")
        self.max_flows = max_flows
        self.window = window
        self.history = min(history, window)
        self.server_ports = server_ports
        # Both keys of each open connection: (conn, sender's direction, receiver's direction).
        self._flows: dict[FlowKey, Entry] = {}
        self._open: OrderedDict[int, _Connection] = OrderedDict()  # least recently active first
        # Recently closed connections' keys: (close time, that side's ISN if seen).
        self._closed: OrderedDict[FlowKey, tuple[int, int | None]] = OrderedDict()
        self._waiting: dict[FlowKey, _Waiting] = {}  # both keys of each connection waiting for its handshake
        # Evicted connections' keys: the sequence number each sender's next
        # byte had.  When one comes back mid-stream, a retransmission of
        # bytes already delivered before the eviction is one, not where the
        # resumed stream starts (it would deliver them twice).
        self._evicted: OrderedDict[FlowKey, int] = OrderedDict()
        self._count = 0
        self._out: list[CaptureEvent] = []
        self.last_ns = 0

    # -- per packet ---------------------------------------------------------

    def feed(self, time_ns: int, seg: Segment) -> list[CaptureEvent]:
        out = self._out = []
        self.last_ns = time_ns
        self._packet(time_ns, seg)
        return out

    def _packet(self, time_ns: int, seg: Segment) -> None:
        src, dst, sport, dport, seq, ack, flags, payload = seg
        key = (src, sport, dst, dport)
        entry = self._flows.get(key)
        if entry is None:
            waiting = self._waiting.get(key)
            if waiting is not None:
                waiting.packets.append((time_ns, seg))
                if flags & SYN or len(waiting.packets) >= REORDER_PACKETS:
                    self._settle(waiting)
                return
            entry = self._admit(time_ns, key, seq, ack, flags, payload, seg)
            if entry is None:
                return
        elif flags & (SYN | ACK) == SYN and not self._same_syn(entry, key, seq):
            self._superseded(entry[0], time_ns)
            entry = self._admit(time_ns, key, seq, ack, flags, payload, seg)
            if entry is None:
                return
        self._apply(time_ns, entry, key, seq, ack, flags, payload)

    def _apply(self, time_ns: int, entry: Entry, key: FlowKey, seq: int, ack: int, flags: int, payload: bytes) -> None:
        conn, snd, rcv = entry
        conn.last_ns = time_ns
        self._open.move_to_end(conn.number)
        if flags & RST:
            for d in (conn.c2s, conn.s2c):
                self._flush(d, time_ns)
                self._end(d, time_ns, "rst")
            self._close(conn, time_ns)
            return
        if flags & SYN:
            conn.isns.setdefault(key, seq)
            if flags & ACK:
                conn.isns.setdefault(conn.keys[1] if key == conn.keys[0] else conn.keys[0], (ack - 1) & MASK)
            if not snd.based:
                snd.base(seq + 1)
            if flags & ACK and not rcv.based:
                rcv.base(ack)  # the SYN+ACK acknowledges the client's SYN: its data starts there
            seq = (seq + 1) & MASK  # data on a SYN (TCP Fast Open) follows it
        if not snd.ended:
            if payload:
                if not snd.based:
                    snd.base(seq)
                if seq == snd.nxt and not snd.starts:
                    self._deliver(snd, payload, time_ns)  # in order, nothing waiting: the usual case
                else:
                    self._segment(snd, snd.offset(seq), payload, time_ns)
            if flags & FIN:
                if not snd.based:
                    snd.base(seq)
                if snd.fin is None:
                    snd.fin = snd.offset(seq) + len(payload)
            if snd.fin is not None and snd.delivered >= snd.fin:
                self._end(snd, time_ns, "fin")
        if flags & ACK and ack != rcv.nxt and rcv.based and not rcv.ended:
            self._acked(rcv, rcv.offset(ack))
        if snd.ended and rcv.ended:
            self._close(conn, time_ns)

    def finish(self, time_ns: int | None = None) -> list[CaptureEvent]:
        """The capture is over: every stream still open ends ("end of capture")."""
        out = self._out = []
        t = self.last_ns if time_ns is None else time_ns
        while self._waiting:
            self._settle(next(iter(self._waiting.values())))
        for conn in sorted(self._open.values(), key=lambda c: c.number):
            for d in (conn.c2s, conn.s2c):
                self._flush(d, t)
                # A FIN with a hole before it never filled: it ended all the same.
                self._end(d, t, "fin" if d.fin is not None else "end of capture")
        self._open.clear()
        self._flows.clear()
        return out

    @property
    def open_connections(self) -> int:
        return len(self._open)

    # -- connections --------------------------------------------------------

    def _same_syn(self, entry: Entry, key: FlowKey, seq: int) -> bool:
        """Whether a SYN on a known connection is its own SYN again, or
        one that reordering put after its first data."""
        conn, snd, _rcv = entry
        isn = conn.isns.get(key)
        if isn is not None:
            return isn == seq
        # No SYN from this side yet: the same connection if its data starts just after.
        return not snd.based or 0 <= snd.delivered - snd.offset(seq + 1) <= self.window

    def _admit(
        self, time_ns: int, key: FlowKey, seq: int, ack: int, flags: int, payload: bytes, seg: Segment
    ) -> Entry | None:
        """The first packet of a connection not open: None if it starts
        nothing now (a straggler, a lone ACK, or data waiting for its SYN)."""
        rkey = (key[2], key[3], key[0], key[1])
        syn = flags & SYN
        if flags & RST or not (syn or payload):
            return None  # nothing to reassemble: a lone ACK, FIN or RST of a connection not seen
        closed = self._closed.pop(key, None)
        if closed is not None:
            closed_r = self._closed.pop(rkey, None)
            closed_ns, isn = closed
            if time_ns - closed_ns < CLOSED_LINGER_NS and (not syn or isn == seq):
                self._closed[key] = closed
                if closed_r is not None:
                    self._closed[rkey] = closed_r
                return None  # a straggler of the connection that just closed (its SYN again, too)
        self._make_room(time_ns)
        self._count += 1
        if syn:  # a new connection on these ports: nothing of an evicted one goes on
            self._evicted.pop(key, None)
            self._evicted.pop(rkey, None)
        if not syn:
            waiting = _Waiting(self._count)
            waiting.packets.append((time_ns, seg))
            self._waiting[key] = self._waiting[rkey] = waiting
            return None
        return self._new(self._count, time_ns, key, from_client=not flags & ACK, syn=True)

    def _make_room(self, time_ns: int) -> None:
        """Below `max_flows` connections, open or waiting, for one more."""
        while len(self._open) + len(self._waiting) // 2 >= self.max_flows:
            if self._open:
                self._evict(next(iter(self._open.values())), time_ns)
            else:
                # The longest waiting: the first in the dict, which is in the
                # order of their numbers (a scan here made a capture joined
                # mid-way on many connections quadratic).
                self._settle(next(iter(self._waiting.values())))

    def _settle(self, waiting: _Waiting) -> None:
        """A waiting connection starts: with the SYN among its packets if
        any, else at each side's lowest sequence number; then its packets,
        in capture order."""
        packets = waiting.packets
        first_key = _key(packets[0][1])
        for k in (first_key, _reverse(first_key)):
            self._waiting.pop(k, None)
        syns = [p for p in packets if p[1][6] & SYN]
        syns.sort(key=lambda p: bool(p[1][6] & ACK))  # the client's SYN before the SYN+ACK
        opener = syns[0] if syns else next(p for p in packets if p[1][7] or p[1][6] & FIN)
        okey = _key(opener[1])
        if syns:
            from_client = not opener[1][6] & ACK
        else:
            from_client = self._client_side(okey)
        entry = self._new(waiting.number, packets[0][0], okey, from_client, syn=bool(syns))
        if not syns:
            for k, d in ((okey, entry[1]), (_reverse(okey), entry[2])):
                seqs = [s[4] for _t, s in packets if _key(s) == k and (s[7] or s[6] & FIN)]
                lowest = min(seqs, key=lambda q: (q - seqs[0] + HALF) & MASK) if seqs else None
                nxt = self._evicted.pop(k, None)
                # Back from eviction: its stream goes on from where it had
                # got to.  Bytes before were delivered then (a retransmission
                # of them is one); bytes after, not yet seen, are a hole.
                if nxt is not None and (lowest is None or abs(((lowest - nxt + HALF) & MASK) - HALF) <= self.window):
                    d.base(nxt)
                elif lowest is not None:
                    d.base(lowest)
        else:
            t, s = opener
            self._apply(t, entry, okey, s[4], s[5], s[6], s[7])
            packets = [p for p in packets if p is not opener]
        for t, s in packets:
            self._packet(t, s)

    def _client_side(self, key: FlowKey) -> bool:
        """Whether the sender on `key` is the client, with no handshake seen."""
        sport, dport = key[1], key[3]
        if self.server_ports and (sport in self.server_ports) != (dport in self.server_ports):
            return dport in self.server_ports
        if (sport >= EPHEMERAL_PORTS) != (dport >= EPHEMERAL_PORTS):
            return sport >= EPHEMERAL_PORTS
        return True

    def _new(self, number: int, time_ns: int, key: FlowKey, from_client: bool, syn: bool) -> Entry:
        src, sport, dst, dport = key
        rkey = (dst, dport, src, sport)
        while len(self._open) >= self.max_flows:
            self._evict(next(iter(self._open.values())), time_ns)
        me, peer = Endpoint(address_text(src), sport), Endpoint(address_text(dst), dport)
        client, server = (me, peer) if from_client else (peer, me)
        c2s = _Direction(StreamId(number, client, server, True))
        s2c = _Direction(StreamId(number, client, server, False))
        conn = _Connection(number, c2s, s2c, (key, rkey))
        snd, rcv = (c2s, s2c) if from_client else (s2c, c2s)
        self._flows[key] = (conn, snd, rcv)
        self._flows[rkey] = (conn, rcv, snd)
        self._open[number] = conn
        for d in (c2s, s2c):
            self._out.append(StreamStart(d.stream, time_ns, syn))
        return conn, snd, rcv

    def _forget(self, conn: _Connection) -> None:
        for key in conn.keys:
            self._flows.pop(key, None)
        self._open.pop(conn.number, None)

    def _close(self, conn: _Connection, time_ns: int) -> None:
        self._forget(conn)
        for key in conn.keys:
            self._closed[key] = (time_ns, conn.isns.get(key))
        while len(self._closed) > 2 * self.max_flows:
            self._closed.popitem(last=False)

    def _evict(self, conn: _Connection, time_ns: int) -> None:
        self._out.append(
            CaptureNote(
                conn.c2s.stream,
                time_ns,
                "evicted",
                f"connection {conn.number} ({conn.c2s.stream.client} - {conn.c2s.stream.server}) evicted: "
                f"more than {self.max_flows} connections open, it was the least recently active",
            )
        )
        for d in (conn.c2s, conn.s2c):
            self._flush(d, time_ns)
            self._end(d, time_ns, "evicted")
        for key in conn.keys:
            snd = self._flows[key][1]
            if snd.based:
                self._evicted[key] = snd.nxt
        # Bounded, but not as tightly as the open connections: with room
        # for few, each comes back evicted again and again.
        while len(self._evicted) > max(2 * self.max_flows, EVICTED_KEPT):
            self._evicted.popitem(last=False)
        self._forget(conn)

    def _superseded(self, conn: _Connection, time_ns: int) -> None:
        """A new SYN on the addresses and ports of a connection whose end
        the capture did not show: that one is over."""
        self._out.append(
            CaptureNote(
                conn.c2s.stream,
                time_ns,
                "port_reused",
                f"connection {conn.number}: a new SYN on its addresses and ports starts a new connection "
                "before its end was seen",
            )
        )
        for d in (conn.c2s, conn.s2c):
            self._flush(d, time_ns)
            self._end(d, time_ns, "evicted")
        self._forget(conn)

    # -- one direction ------------------------------------------------------

    def _deliver(self, d: _Direction, data: bytes, time_ns: int) -> None:
        self._out.append(StreamData(d.stream, data, time_ns))
        n = len(data)
        off = d.delivered
        d.delivered = off + n
        d.nxt = (d.nxt + n) & MASK
        if self.history:
            hist = d.hist
            hist.append((off, data))
            size = d.hist_size + n
            limit = self.history
            lo = d.hist_lo
            while size - len(hist[lo][1]) >= limit:
                size -= len(hist[lo][1])
                lo += 1
            if lo > 1024 and 2 * lo > len(hist):  # drop the expired entries, a constant per entry
                del hist[:lo]
                lo = 0
            d.hist_lo = lo
            d.hist_size = size

    def _segment(self, d: _Direction, off: int, data: bytes, time_ns: int) -> None:
        """Bytes `data` at stream offset `off`, anywhere relative to what was delivered."""
        end = off + len(data)
        counts = d.counts
        if end <= d.delivered:
            if not (len(data) == 1 and end == d.delivered):  # a keep-alive probe repeats the last byte, any value
                counts.retransmitted += 1
                self._compare_delivered(d, off, data, time_ns)
            return
        seen = off < d.delivered  # whether some of its bytes came before
        if seen:
            cut = d.delivered - off
            self._compare_delivered(d, off, data[:cut], time_ns)
            data, off = data[cut:], d.delivered
        starts, segs = d.starts, d.segs
        pieces: list[tuple[int, bytes]] = []
        cur = off
        j = bisect_right(starts, off) - 1
        if j < 0 or starts[j] + len(segs[j][0]) <= off:
            j += 1
        if off == d.delivered and j < len(starts) and starts[j] < end:
            # In order, over bytes held ahead of a hole: the in-order copy is
            # what the receiver's application reads (Linux trims what it
            # held out of order to what came in order), so it is kept.
            seen = True
            k = j
            tail: tuple[bytes, int] | None = None
            while k < len(starts) and starts[k] < end:
                s, (old, t) = starts[k], segs[k]
                b = min(s + len(old), end)
                if data[s - off : b - off] != old[: b - s]:
                    self._conflict(d, s, b, time_ns, kept="the in-order copy")
                if s + len(old) > end:
                    tail = (old[end - s :], t)
                d.buffered -= len(old)
                k += 1
            del starts[j:k], segs[j:k]
            if tail is not None:
                starts.insert(j, end)
                segs.insert(j, tail)
                d.buffered += len(tail[0])
        while j < len(starts) and starts[j] < end:
            s = starts[j]
            old = segs[j][0]
            if s > cur:
                pieces.append((cur, data[cur - off : s - off]))
            a, b = max(s, cur), min(s + len(old), end)
            seen = True
            if data[a - off : b - off] != old[a - s : b - s]:
                self._conflict(d, a, b, time_ns)
            cur = b
            j += 1
        if cur < end:
            pieces.append((cur, data[cur - off :] if cur > off else data))
        if seen:
            counts.retransmitted += 1
        for p_off, p_data in pieces:
            k = bisect_left(starts, p_off)
            starts.insert(k, p_off)
            segs.insert(k, (p_data, time_ns))
            d.buffered += len(p_data)
        if pieces and pieces[0][0] > d.delivered:
            counts.out_of_order += 1
            if len(starts) > counts.held:
                counts.held = len(starts)
        self._drain(d)
        if d.buffered > self.window and not d.window_hit:
            d.window_hit = True
            self._out.append(
                CaptureNote(
                    d.stream,
                    time_ns,
                    "reassembly_window",
                    f"more than {self.window} bytes (--reassembly-window) held after a hole "
                    f"at stream offset {d.delivered}: the hole is declared missing",
                )
            )
        while d.buffered > self.window:
            self._gap(d, d.starts[0] - d.delivered, time_ns)
            self._drain(d)
        if len(starts) > MAX_HELD_PIECES:
            self._too_many_pieces(d, time_ns)

    def _too_many_pieces(self, d: _Direction, time_ns: int) -> None:
        """Held pieces are kept in sorted lists, where an insertion costs up
        to their number: tiny segments out of order (1-byte ones, in reverse)
        would make that quadratic.  Past MAX_HELD_PIECES, holes are declared
        as when the window is full, so an insertion stays bounded."""
        while len(d.starts) > MAX_HELD_PIECES // 2:
            self._gap(d, d.starts[0] - d.delivered, time_ns)
            self._drain(d)

    def _drain(self, d: _Direction) -> None:
        """Deliver the buffered segments that now follow on."""
        starts, segs = d.starts, d.segs
        k = 0
        while k < len(starts) and starts[k] == d.delivered:
            data, t = segs[k]
            d.buffered -= len(data)
            self._deliver(d, data, t)
            k += 1
        if k:
            del starts[:k], segs[:k]

    def _gap(self, d: _Direction, size: int, time_ns: int) -> None:
        self._out.append(StreamGap(d.stream, size, time_ns))
        d.delivered += size
        d.nxt = (d.nxt + size) & MASK

    def _acked(self, d: _Direction, acked: int) -> None:
        """The receiver acknowledged `d`'s bytes up to stream offset
        `acked`: beyond the bytes seen, that is a hole (its segment not seen
        yet), counted once; it stays open, its segment may still come (a
        capture point reorders)."""
        hole = d.delivered
        if acked > hole and d.hole_acked != hole:
            d.hole_acked = hole
            d.counts.acked_unseen += 1

    def _flush(self, d: _Direction, time_ns: int) -> None:
        """Declare every hole and deliver everything buffered: no more
        bytes will come for `d`."""
        if d.ended:
            return
        while d.starts:
            self._gap(d, d.starts[0] - d.delivered, time_ns)
            self._drain(d)
        if d.fin is not None and d.delivered < d.fin:
            self._gap(d, d.fin - d.delivered, time_ns)

    def _end(self, d: _Direction, time_ns: int, reason: str) -> None:
        if not d.ended:
            d.ended = True
            d.hist.clear()
            d.hist_lo = d.hist_size = 0
            d.starts.clear()  # only bytes past a FIN can be left: nothing a stream carries
            d.segs.clear()
            d.buffered = 0
            self._out.append(StreamEnd(d.stream, time_ns, reason, d.counts))

    def _compare_delivered(self, d: _Direction, off: int, data: bytes, time_ns: int) -> None:
        """A retransmission of bytes already delivered: identical is fine,
        different is reported (as far as the history still holds them)."""
        end = off + len(data)
        lo = hi = -1  # the span of the differing parts
        hist = d.hist
        # The first entry ending past `off`: what follows it up to `end` is
        # all a retransmission can overlap (entries end in increasing order).
        i = bisect_right(hist, off, lo=d.hist_lo, key=_entry_end)
        while i < len(hist) and hist[i][0] < end:
            h_off, h = hist[i]
            a, b = max(off, h_off), min(end, h_off + len(h))
            if a < b and data[a - off : b - off] != h[a - h_off : b - h_off]:
                lo = a if lo < 0 else lo
                hi = max(hi, b)
            i += 1
        if lo >= 0:
            self._conflict(d, lo, hi, time_ns)

    def _conflict(self, d: _Direction, a: int, b: int, time_ns: int, kept: str = "the first copy") -> None:
        self._out.append(
            CaptureNote(
                d.stream,
                time_ns,
                "conflicting_overlap",
                f"a retransmission differs from the first copy within stream offsets {a}..{b}; {kept} is kept",
                error=True,
            )
        )


def _key(seg: Segment) -> FlowKey:
    return (seg[0], seg[2], seg[1], seg[3])


def _reverse(key: FlowKey) -> FlowKey:
    return (key[2], key[3], key[0], key[1])
