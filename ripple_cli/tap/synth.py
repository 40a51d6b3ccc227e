"""Ethernet/IPv4 (or IPv6)/TCP frames for what the proxy forwarded, so that
`-w` in proxy mode writes a capture that reads like one taken on the wire
between the client and the upstream: a three-way handshake, the bytes of
each direction with its own sequence numbers (acknowledging what the other
direction has sent), segments of at most 65,000 bytes, FIN or RST at the end.

A gap (copies the tap dropped) advances the sequence number without a
segment: a reader sees the hole exactly where the bytes are missing, as it
would in a real capture that missed packets.

Checksums are real (Wireshark checks them when asked to).
"""

from __future__ import annotations

import random
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from ripple_cli.capture.events import CaptureEvent, Endpoint, StreamData, StreamEnd, StreamGap, StreamStart

MAX_SEGMENT = 65000
MASK = 0xFFFFFFFF

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10

# Locally administered addresses: they belong to no vendor.
MAC_CLIENT = bytes.fromhex("020000000001")
MAC_SERVER = bytes.fromhex("020000000002")
_ETHERTYPE_IPV4 = b"\x08\x00"
_ETHERTYPE_IPV6 = b"\x86\xdd"
_IPV4 = struct.Struct("!BBHHHBBH4s4s")
_IPV6 = struct.Struct("!IHBB16s16s")
_TCP = struct.Struct("!HHIIBBHHH")
_TCP_PROTO = 6
_WINDOW = 65535

TimedFrame = tuple[int, bytes]  # (time ns, Ethernet frame)


def checksum(*parts: bytes) -> int:
    """The Internet checksum (RFC 1071) of the concatenated parts; every
    part but the last must have an even length.

    The ones'-complement sum of 16-bit big-endian words is the number the
    bytes spell, modulo 0xFFFF (2**16 is 1 modulo 0xFFFF): one big-integer
    operation in C instead of a Python loop over 32,500 words.
    """
    total = 0
    for p in parts:
        n = int.from_bytes(p, "big")
        total += n << 8 if len(p) % 2 else n  # an odd last part is padded with a zero byte
    s = total % 0xFFFF
    if s == 0 and total:
        s = 0xFFFF  # a non-zero sum is never 0 in ones' complement
    return ~s & 0xFFFF


def _address(host: str, v6: bool) -> bytes:
    if not v6:
        return socket.inet_pton(socket.AF_INET, host)
    try:
        return socket.inet_pton(socket.AF_INET6, host)
    except OSError:
        return socket.inet_pton(socket.AF_INET6, "::ffff:" + host)  # IPv4 next to IPv6: mapped


@dataclass
class _Flow:
    v6: bool
    addr: tuple[bytes, bytes]  # (client, server)
    port: tuple[int, int]
    nxt: list[int]  # next sequence number: [client's, server's]
    fin: list[bool] = field(default_factory=lambda: [False, False])
    first_fin: int | None = None
    ip_id: int = 0


class TcpSynthesizer:
    """Stream events of proxied connections in, Ethernet frames out."""

    def __init__(self, isn: Callable[[], int] | None = None) -> None:
        rng = random.Random()
        self._isn = isn or (lambda: rng.getrandbits(32))
        self._flows: dict[int, _Flow] = {}

    def frames(self, ev: CaptureEvent) -> list[TimedFrame]:
        stream = ev.stream
        if stream is None:
            return []
        conn = stream.connection
        side = 0 if stream.from_client else 1
        if isinstance(ev, StreamStart):
            if conn in self._flows or ev.time_ns is None:
                return []  # the second direction's start: the handshake is done
            return self._open(conn, stream.client, stream.server, ev.time_ns)
        flow = self._flows.get(conn)
        if flow is None or ev.time_ns is None:
            return []
        t = ev.time_ns
        if isinstance(ev, StreamData):
            out = []
            data = ev.data
            for i in range(0, len(data), MAX_SEGMENT):
                seg = data[i : i + MAX_SEGMENT]
                out.append(self._packet(flow, t, side, PSH | ACK, seg))
                flow.nxt[side] = (flow.nxt[side] + len(seg)) & MASK
            return out
        if isinstance(ev, StreamGap):
            flow.nxt[side] = (flow.nxt[side] + ev.size) & MASK
            return []
        if isinstance(ev, StreamEnd):
            if ev.reason.startswith("rst"):
                # The side that reset ends first; the relay reset the other one.
                del self._flows[conn]
                return [self._packet(flow, t, side, RST | ACK, b"")]
            if flow.fin[side]:
                return []
            out = [self._packet(flow, t, side, FIN | ACK, b"")]
            flow.fin[side] = True
            flow.nxt[side] = (flow.nxt[side] + 1) & MASK
            if flow.first_fin is None:
                flow.first_fin = side
            elif all(flow.fin):
                out.append(self._packet(flow, t, flow.first_fin, ACK, b""))  # the last ACK
                del self._flows[conn]
            return out
        return []

    def _open(self, conn: int, client: Endpoint, server: Endpoint, t: int) -> list[TimedFrame]:
        v6 = ":" in client.host or ":" in server.host
        isn_c, isn_s = self._isn() & MASK, self._isn() & MASK
        flow = _Flow(v6, (_address(client.host, v6), _address(server.host, v6)), (client.port, server.port), [0, 0])
        self._flows[conn] = flow
        flow.nxt = [isn_c, (isn_s + 1) & MASK]
        out = [self._packet(flow, t, 0, SYN, b"", ack=0)]
        flow.nxt[0] = (isn_c + 1) & MASK
        flow.nxt[1] = isn_s
        out.append(self._packet(flow, t, 1, SYN | ACK, b""))
        flow.nxt[1] = (isn_s + 1) & MASK
        out.append(self._packet(flow, t, 0, ACK, b""))
        return out

    def _packet(self, flow: _Flow, t: int, side: int, flags: int, payload: bytes, ack: int | None = None) -> TimedFrame:
        src, dst = flow.addr[side], flow.addr[1 - side]
        sport, dport = flow.port[side], flow.port[1 - side]
        seq = flow.nxt[side]
        if ack is None:
            ack = flow.nxt[1 - side]
        tcp_len = _TCP.size + len(payload)
        if flow.v6:
            pseudo = src + dst + struct.pack("!IxxxB", tcp_len, _TCP_PROTO)
        else:
            pseudo = src + dst + struct.pack("!xBH", _TCP_PROTO, tcp_len)
        head = _TCP.pack(sport, dport, seq, ack, 5 << 4, flags, _WINDOW, 0, 0)
        tcp = _TCP.pack(sport, dport, seq, ack, 5 << 4, flags, _WINDOW, checksum(pseudo, head, payload), 0)
        flow.ip_id = (flow.ip_id + 1) & 0xFFFF
        if flow.v6:
            ip = _IPV6.pack(6 << 28, tcp_len, _TCP_PROTO, 64, src, dst)
            ether = _ETHERTYPE_IPV6
        else:
            total = 20 + tcp_len
            ip0 = _IPV4.pack(0x45, 0, total, flow.ip_id, 0x4000, 64, _TCP_PROTO, 0, src, dst)
            ip = _IPV4.pack(0x45, 0, total, flow.ip_id, 0x4000, 64, _TCP_PROTO, checksum(ip0), src, dst)
            ether = _ETHERTYPE_IPV4
        macs = MAC_SERVER + MAC_CLIENT if side == 0 else MAC_CLIENT + MAC_SERVER  # destination first
        return t, b"".join((macs, ether, ip, tcp, payload))
