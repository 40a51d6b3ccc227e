"""Rewrite a real capture's TCP segments, the way networks and capture
points damage them: reorder, duplicate, overlap, split, drop, and move the
sequence numbers.  Packets are parsed and rebuilt with dpkt (checksums and
lengths recomputed); captures are written with `write_pcap`, in either byte
order and either timestamp resolution."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import dpkt  # type: ignore[import-untyped, unused-ignore]

MASK = 0xFFFFFFFF
LINKTYPE_ETHERNET = 1


@dataclass
class Packet:
    time_ns: int
    eth: dpkt.ethernet.Ethernet

    @property
    def ip(self) -> dpkt.ip.IP | dpkt.ip6.IP6:
        return self.eth.data

    @property
    def tcp(self) -> dpkt.tcp.TCP:
        return self.ip.data

    @property
    def sport(self) -> int:
        return int(self.tcp.sport)

    @property
    def dport(self) -> int:
        return int(self.tcp.dport)

    @property
    def seq(self) -> int:
        return int(self.tcp.seq)

    @property
    def payload(self) -> bytes:
        return bytes(self.tcp.data)

    @property
    def flags(self) -> int:
        return int(self.tcp.flags)

    def clone(self) -> Packet:
        return Packet(self.time_ns, dpkt.ethernet.Ethernet(bytes(self.eth)))

    def rebuilt(self) -> bytes:
        """The frame, with the lengths and checksums that its changes need."""
        tcp = self.tcp
        tcp.sum = 0
        if isinstance(self.ip, dpkt.ip6.IP6):
            self.ip.plen = len(bytes(tcp))
        else:
            self.ip.sum = 0
        return bytes(self.eth)


def read_pcap(path: Path) -> list[Packet]:
    """The TCP packets of an Ethernet pcap (what tcpdump -i lo writes)."""
    with path.open("rb") as f:
        nano = f.read(4) in (b"\xa1\xb2\x3c\x4d", b"\x4d\x3c\xb2\xa1")
        f.seek(0)
        reader = dpkt.pcap.Reader(f)
        assert reader.datalink() == LINKTYPE_ETHERNET
        out = []
        for ts, buf in reader:
            eth = dpkt.ethernet.Ethernet(buf)
            if isinstance(eth.data, dpkt.ip.IP | dpkt.ip6.IP6) and isinstance(eth.data.data, dpkt.tcp.TCP):
                out.append(Packet(int(ts * 1_000_000_000) if nano else round(ts * 1_000_000) * 1000, eth))
    return out


def pcap_bytes(
    records: Iterable[tuple[int, bytes]], linktype: int = LINKTYPE_ETHERNET, order: str = "<", nano: bool = False
) -> bytes:
    """A pcap file of (time in ns, frame) records.  dpkt's writer only
    writes the machine's byte order, hence this one."""
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    parts = [struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 262144, linktype)]
    for t, frame in records:
        sec, ns = divmod(t, 1_000_000_000)
        parts.append(struct.pack(order + "IIII", sec, ns if nano else ns // 1000, len(frame), len(frame)))
        parts.append(frame)
    return b"".join(parts)


def write_pcap(path: Path, pkts: Sequence[Packet], order: str = "<", nano: bool = False) -> Path:
    path.write_bytes(pcap_bytes(((p.time_ns, p.rebuilt()) for p in pkts), LINKTYPE_ETHERNET, order, nano))
    return path


def data_indices(pkts: Sequence[Packet], sport: int) -> list[int]:
    """Indices of the packets that carry bytes from port `sport`."""
    return [i for i, p in enumerate(pkts) if p.sport == sport and p.payload]


def isn(pkts: Sequence[Packet], sport: int) -> int:
    """The initial sequence number of the side with port `sport` (its SYN's)."""
    syn = next(p for p in pkts if p.sport == sport and p.flags & dpkt.tcp.TH_SYN)
    return syn.seq


def stream_offset(pkts: Sequence[Packet], i: int) -> int:
    """Where packet i's bytes go in its direction's stream."""
    return (pkts[i].seq - isn(pkts, pkts[i].sport) - 1) & MASK


def _acks_beyond(p: Packet, sender_port: int, seq: int) -> bool:
    return p.dport == sender_port and bool(p.flags & dpkt.tcp.TH_ACK) and ((p.tcp.ack - seq) & MASK) < 1 << 31


def reorder(pkts: Sequence[Packet], i: int, later: int) -> list[Packet]:
    """Packet i (data) comes after the next `later` data packets of its
    direction.  Acknowledgments of it from the peer move along behind it: a
    capture point cannot see a byte acknowledged before it was sent."""
    out = list(pkts)
    moved = out.pop(i)
    sport = moved.sport
    end = moved.seq + len(moved.payload)
    seen = 0
    j = i
    while seen < later:
        assert j < len(out), "not that many data packets after it"
        p = out[j]
        assert not (p.sport == sport and p.flags & dpkt.tcp.TH_FIN), "would move it past its FIN"
        if p.sport == sport and p.payload:
            seen += 1
        j += 1
    between = out[i:j]
    carried = [p for p in between if _acks_beyond(p, sport, end)]
    kept = [p for p in between if not _acks_beyond(p, sport, end)]
    return [*out[:i], *kept, moved, *carried, *out[j:]]


def duplicate(pkts: Sequence[Packet], i: int, later: int) -> list[Packet]:
    """A copy of packet i, `later` packets after it."""
    out = list(pkts)
    out.insert(i + 1 + later, pkts[i].clone())
    return out


def _segment(like: Packet, seq: int, payload: bytes) -> Packet:
    p = like.clone()
    p.tcp.seq = seq & MASK
    p.tcp.data = payload
    p.tcp.flags &= ~(dpkt.tcp.TH_FIN | dpkt.tcp.TH_SYN)
    return Packet(like.time_ns, dpkt.ethernet.Ethernet(p.rebuilt()))


def _next_of_direction(pkts: Sequence[Packet], i: int) -> int:
    return next(j for j in range(i + 1, len(pkts)) if pkts[j].sport == pkts[i].sport and pkts[j].payload)


def contiguous_next(pkts: Sequence[Packet], i: int) -> bool:
    """Whether the next data packet of i's direction starts where i ends (a
    real capture may hold a retransmission, or segments reordered or copied
    by an earlier mutation, in between)."""
    first = pkts[i]
    return (first.seq + len(first.payload)) & MASK == pkts[_next_of_direction(pkts, i)].seq


def overlap(pkts: Sequence[Packet], i: int, at: int, conflicting: bool = False) -> list[Packet]:
    """A retransmission spanning the second half of data packet i and the
    first half of the next data packet of its direction (contiguous with
    it: see contiguous_next), inserted at index `at`.  `conflicting`: with
    its bytes changed."""
    first = pkts[i]
    second = pkts[_next_of_direction(pkts, i)]
    assert contiguous_next(pkts, i), "not contiguous"
    a, b = first.payload, second.payload
    span = a[len(a) // 2 :] + b[: max(1, len(b) // 2)]
    if conflicting:
        span = bytes(x ^ 0xFF for x in span)
    seg = _segment(first, first.seq + len(a) // 2, span)
    out = list(pkts)
    out.insert(at, seg)
    return out


def split(pkts: Sequence[Packet], i: int, cut: int, swap: bool = False) -> list[Packet]:
    """Data packet i as two segments, its first `cut` bytes then the rest
    (`swap`: the rest first)."""
    p = pkts[i]
    data = p.payload
    assert 0 < cut < len(data)
    head = _segment(p, p.seq, data[:cut])
    tail = _segment(p, p.seq + cut, data[cut:])
    if p.flags & dpkt.tcp.TH_FIN:
        tail.tcp.flags |= dpkt.tcp.TH_FIN
    parts = [tail, head] if swap else [head, tail]
    return [*pkts[:i], *parts, *pkts[i + 1 :]]


def separate_fin(pkts: Sequence[Packet], i: int) -> list[Packet]:
    """Packet i's FIN, if it has one, in a segment of its own right after it."""
    p = pkts[i]
    if not p.flags & dpkt.tcp.TH_FIN:
        return list(pkts)
    data = _segment(p, p.seq, p.payload)
    fin = _segment(p, p.seq + len(p.payload), b"")
    fin.tcp.flags |= dpkt.tcp.TH_FIN
    return [*pkts[:i], data, fin, *pkts[i + 1 :]]


def drop(pkts: Sequence[Packet], indices: Iterable[int]) -> list[Packet]:
    gone = set(indices)
    return [p for j, p in enumerate(pkts) if j not in gone]


def rebase(pkts: Sequence[Packet], sport: int, new_isn: int) -> list[Packet]:
    """The side with port `sport` chose `new_isn` as its initial sequence
    number: its sequence numbers and its peer's acknowledgments move with it."""
    delta = (new_isn - isn(pkts, sport)) & MASK
    out = []
    for p in pkts:
        q = p.clone()
        if q.sport == sport:
            q.tcp.seq = (q.tcp.seq + delta) & MASK
        elif q.dport == sport and q.flags & dpkt.tcp.TH_ACK:
            q.tcp.ack = (q.tcp.ack + delta) & MASK
        out.append(Packet(q.time_ns, dpkt.ethernet.Ethernet(q.rebuilt())))
    return out


def connection(pkts: Sequence[Packet], client_port: int) -> list[Packet]:
    """The packets of one connection (by its client's port)."""
    return [p for p in pkts if client_port in (p.sport, p.dport)]


def expected_pieces(stream: bytes, holes: Iterable[tuple[int, int]]) -> list[bytes | int]:
    """`stream` with the (offset, size) holes cut out: what reassembly
    should deliver, as `livecap.Stream.pieces`."""
    out: list[bytes | int] = []
    at = 0
    for off, size in sorted(holes):
        if off > at:
            out.append(stream[at:off])
        if out and isinstance(out[-1], int):
            out[-1] += size
        else:
            out.append(size)
        at = off + size
    if at < len(stream):
        out.append(stream[at:])
    return out
