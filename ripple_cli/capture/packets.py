"""One captured frame to its TCP segment, by link type.

This is the per-packet hot path, so it slices the frame with `struct` and
indexing instead of building dpkt objects (dpkt parses every layer into an
object: several times slower for the two fields per layer needed here).

A decoder returns a `Segment`, None for anything that is not a TCP segment
(ARP, UDP, a malformed header), or a `Fragment` of an IP datagram, for the
reader's `capture.fragments.Defragmenter` to rebuild and decode again.
Tunnels (VXLAN, Geneve, GRE, ERSPAN: `capture.tunnels`) are decoded through:
the segment is the inner packet's, so the mirrored connection is the one
seen.  Only non-TCP packets pay for that.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable

from ripple_cli.capture import tunnels
from ripple_cli.capture.fragments import Fragment

# (src address, dst address, src port, dst port, seq, ack, TCP flags, payload).
# Addresses stay packed (4 bytes IPv4, 16 bytes IPv6): text is only needed
# once per connection (`address_text`), not per packet.
Segment = tuple[bytes, bytes, int, int, int, int, int, bytes]
PacketDecode = Segment | Fragment | None
Decoder = Callable[[bytes], PacketDecode]

FIN = 0x01
SYN = 0x02
RST = 0x04
ACK = 0x10

# Link types (LINKTYPE_* of the pcap and pcapng specifications).
LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW_BSD12 = 12  # DLT_RAW as most BSDs number it
LINKTYPE_RAW_BSD14 = 14  # DLT_RAW as OpenBSD numbers it
LINKTYPE_RAW = 101
LINKTYPE_LOOP = 108
LINKTYPE_LINUX_SLL = 113
LINKTYPE_LINUX_SLL2 = 276

_ETH_IPV4 = 0x0800
_ETH_IPV6 = 0x86DD
_VLAN_TAGS = frozenset({0x8100, 0x88A8, 0x9100})  # 802.1Q, 802.1ad (QinQ), the pre-standard QinQ tag
_AF_INET = 2
_AF_INET6 = frozenset({24, 28, 30})  # NetBSD/OpenBSD, FreeBSD, macOS
_IPPROTO_TCP = 6
_IPPROTO_UDP = 17
_IPPROTO_GRE = 47
_CARRIERS = frozenset({_IPPROTO_UDP, _IPPROTO_GRE})  # what may carry a tunnel
_MAX_NESTING = 8  # tunnels in tunnels: deeper is ignored (and the recursion bounded)
_IPV6_SKIPPED = frozenset({0, 43, 60})  # hop-by-hop, routing, destination options: (len + 1) * 8 bytes
_IPV6_FRAGMENT = 44
_IPV6_AH = 51  # authentication header: (len + 2) * 4 bytes

_TCP = struct.Struct("!HHIIBB")  # ports, seq, ack, data offset, flags
_IPV4 = struct.Struct("!BxHxxHxB2x4s4s")  # version/IHL, total length, flags/fragment offset, protocol, addresses


def address_text(addr: bytes) -> str:
    return socket.inet_ntop(socket.AF_INET if len(addr) == 4 else socket.AF_INET6, addr)


def _tcp(frame: bytes, off: int, end: int, src: bytes, dst: bytes) -> PacketDecode:
    if end - off < 20:
        return None
    sport, dport, seq, ack, doff, flags = _TCP.unpack_from(frame, off)
    doff = (doff >> 4) * 4
    if doff < 20:
        return None
    return (src, dst, sport, dport, seq, ack, flags, frame[off + doff : end])


def ipv4(frame: bytes, off: int, depth: int = 0) -> PacketDecode:
    n = len(frame)
    if n - off < 20:
        return None
    vihl, total, frag, proto, src, dst = _IPV4.unpack_from(frame, off)
    ihl = (vihl & 0x0F) * 4
    if vihl >> 4 != 4 or ihl < 20 or (proto != _IPPROTO_TCP and proto not in _CARRIERS):
        return None
    if total == 0:
        end = n  # a segmentation-offload frame captured before the NIC split it
    elif total < ihl:
        return None
    else:
        end = off + total
        if end > n:
            end = n  # cut by the snap length
    # (else Ethernet padding after the IP packet is ignored)
    if frag & 0x3FFF:  # more fragments, or an offset
        offset = (frag & 0x1FFF) * 8
        key = (src, dst, proto, (frame[off + 4] << 8) | frame[off + 5])
        head = None if offset else frame[off : off + ihl]
        return Fragment(key, offset, bool(frag & 0x2000), head, frame[off + ihl : end])
    if proto == _IPPROTO_TCP:
        return _tcp(frame, off + ihl, end, src, dst)
    return _carried(proto, frame, off + ihl, end, depth)


def ipv6(frame: bytes, off: int, depth: int = 0) -> PacketDecode:
    n = len(frame)
    if n - off < 40 or frame[off] >> 4 != 6:
        return None
    plen = (frame[off + 4] << 8) | frame[off + 5]
    end = min(off + 40 + plen, n) if plen else n  # 0: a jumbogram or an offload frame
    nh = frame[off + 6]
    src = frame[off + 8 : off + 24]
    dst = frame[off + 24 : off + 40]
    p = off + 40
    while nh != _IPPROTO_TCP:
        if p + 8 > end:
            return None
        if nh in _IPV6_SKIPPED:
            nh, p = frame[p], p + (frame[p + 1] + 1) * 8
        elif nh == _IPV6_FRAGMENT:
            field = (frame[p + 2] << 8) | frame[p + 3]
            if field & 0xFFF9:  # an offset or more fragments (else an atomic fragment, RFC 6946)
                offset = field & 0xFFF8
                key = (src, dst, 0, int.from_bytes(frame[p + 4 : p + 8], "big"))
                head = None if offset else frame[off : off + 6] + frame[p : p + 1] + frame[off + 7 : off + 40]
                return Fragment(key, offset, bool(field & 1), head, frame[p + 8 : end])
            nh, p = frame[p], p + 8
        elif nh == _IPV6_AH:
            nh, p = frame[p], p + (frame[p + 1] + 2) * 4
        elif nh in _CARRIERS:
            return _carried(nh, frame, p, end, depth)
        else:
            return None
    return _tcp(frame, p, end, src, dst)


def _carried(proto: int, frame: bytes, off: int, end: int, depth: int) -> PacketDecode:
    """The TCP segment inside a tunnel (a UDP or GRE packet at `off`)."""
    inner = tunnels.udp(frame, off, end) if proto == _IPPROTO_UDP else tunnels.gre(frame, off, end)
    if inner is None or depth >= _MAX_NESTING:
        return None
    kind, p = inner
    if kind == tunnels.ETHERNET:
        if end - p < 14:
            return None
        return _by_ethertype(frame, p + 14, (frame[p + 12] << 8) | frame[p + 13], depth + 1)
    if kind == tunnels.IPV4:
        return ipv4(frame, p, depth + 1)
    return ipv6(frame, p, depth + 1)


def _ip_by_version(frame: bytes, off: int) -> PacketDecode:
    if len(frame) <= off:
        return None
    version = frame[off] >> 4
    if version == 4:
        return ipv4(frame, off)
    if version == 6:
        return ipv6(frame, off)
    return None


def _by_ethertype(frame: bytes, off: int, etype: int, depth: int = 0) -> PacketDecode:
    while etype in _VLAN_TAGS:
        if len(frame) < off + 4:
            return None
        etype = (frame[off + 2] << 8) | frame[off + 3]
        off += 4
    if etype == _ETH_IPV4:
        return ipv4(frame, off, depth)
    if etype == _ETH_IPV6:
        return ipv6(frame, off, depth)
    return None


def ethernet(frame: bytes) -> PacketDecode:
    if len(frame) < 14:
        return None
    if frame[12] == 0x08 and frame[13] == 0x00:  # IPv4 untagged: the usual case, one call less
        return ipv4(frame, 14)
    return _by_ethertype(frame, 14, (frame[12] << 8) | frame[13])


def linux_sll(frame: bytes) -> PacketDecode:
    # 16 bytes: packet type, ARPHRD type, address length, 8 address bytes, protocol.
    if len(frame) < 16:
        return None
    return _by_ethertype(frame, 16, (frame[14] << 8) | frame[15])


def linux_sll2(frame: bytes) -> PacketDecode:
    # 20 bytes: protocol, reserved, interface index, ARPHRD type, packet type, address length, 8 address bytes.
    if len(frame) < 20:
        return None
    return _by_ethertype(frame, 20, (frame[0] << 8) | frame[1])


def raw_ip(frame: bytes) -> PacketDecode:
    return _ip_by_version(frame, 0)


def bsd_null(frame: bytes) -> PacketDecode:
    # The address family is in the byte order of the machine that captured
    # (LINKTYPE_NULL) or network order (LINKTYPE_LOOP); either is accepted,
    # since no family value reads as another one byte-swapped.
    if len(frame) < 4:
        return None
    family = int.from_bytes(frame[:4], "little")
    if family != _AF_INET and family not in _AF_INET6:
        family = int.from_bytes(frame[:4], "big")
    if family == _AF_INET:
        return ipv4(frame, 4)
    if family in _AF_INET6:
        return ipv6(frame, 4)
    return None


DECODERS: dict[int, Decoder] = {
    LINKTYPE_NULL: bsd_null,
    LINKTYPE_ETHERNET: ethernet,
    LINKTYPE_RAW_BSD12: raw_ip,
    LINKTYPE_RAW_BSD14: raw_ip,
    LINKTYPE_RAW: raw_ip,
    LINKTYPE_LOOP: bsd_null,
    LINKTYPE_LINUX_SLL: linux_sll,
    LINKTYPE_LINUX_SLL2: linux_sll2,
}

LINKTYPE_NAMES = {
    LINKTYPE_NULL: "BSD loopback",
    LINKTYPE_ETHERNET: "Ethernet",
    LINKTYPE_RAW_BSD12: "raw IP",
    LINKTYPE_RAW_BSD14: "raw IP",
    LINKTYPE_RAW: "raw IP",
    LINKTYPE_LOOP: "OpenBSD loopback",
    LINKTYPE_LINUX_SLL: "Linux cooked v1",
    LINKTYPE_LINUX_SLL2: "Linux cooked v2",
}


def decode_frame(linktype: int, frame: bytes) -> PacketDecode:
    """The TCP segment in `frame`; None if it holds none; a `Fragment` of
    an IP datagram (see the module's docstring).  An unsupported
    link type gives None: see `DECODERS` for the supported ones."""
    decoder = DECODERS.get(linktype)
    return decoder(frame) if decoder is not None else None
