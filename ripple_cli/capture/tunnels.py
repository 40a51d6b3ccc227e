"""Where the packet inside a tunnel starts: the encapsulations that traffic
mirrors arrive in.

- VXLAN (RFC 7348) on UDP port 4789 (AWS VPC Traffic Mirroring) or 8472
  (the Linux kernel's default);
- Geneve (RFC 8926) on UDP port 6081 (GCP Packet Mirroring), options skipped;
- GRE (RFC 2784/2890) carrying IPv4, IPv6 or Ethernet (transparent Ethernet
  bridging, 0x6558), and ERSPAN (switch mirrors) type I/II (0x88be) and
  type III (0x22eb) over GRE.

These functions only strip the tunnel's own headers: they say what the
inner packet is (`ETHERNET`, `IPV4`, `IPV6`) and where it starts, and
`capture.packets` decodes it as it would an outer one.  They are called only
for UDP and GRE packets, never on the plain TCP path.
"""

from __future__ import annotations

ETHERNET = 0
IPV4 = 4
IPV6 = 6
Inner = tuple[int, int]  # (ETHERNET | IPV4 | IPV6, offset of the inner packet)

VXLAN_PORTS = frozenset({4789, 8472})
GENEVE_PORT = 6081

_ETHERTYPE_INNER = {0x6558: ETHERNET, 0x0800: IPV4, 0x86DD: IPV6}
_ERSPAN_II = 0x88BE  # type II; type I (no ERSPAN header) when GRE has no sequence number
_ERSPAN_III = 0x22EB


def udp(frame: bytes, off: int, end: int) -> Inner | None:
    """The packet a UDP datagram at `off` tunnels (VXLAN or Geneve, by the
    destination port), or None."""
    if end - off < 16:  # UDP header and the 8-byte VXLAN or Geneve base header
        return None
    dport = (frame[off + 2] << 8) | frame[off + 3]
    p = off + 8
    if dport in VXLAN_PORTS:
        # Flags, 3 reserved bytes, VNI, 1 reserved byte; the I flag says the VNI is valid.
        return (ETHERNET, p + 8) if frame[p] & 0x08 else None
    if dport == GENEVE_PORT:
        # Version (2 bits), options length (6 bits, 4-byte words), flags, protocol type, VNI.
        if frame[p] >> 6:
            return None  # only version 0 exists
        kind = _ETHERTYPE_INNER.get((frame[p + 2] << 8) | frame[p + 3])
        inner = p + 8 + (frame[p] & 0x3F) * 4
        return (kind, inner) if kind is not None and inner <= end else None
    return None


def gre(frame: bytes, off: int, end: int) -> Inner | None:
    """The packet a GRE packet at `off` carries (IP, Ethernet, an ERSPAN
    mirror), or None."""
    if end - off < 4:
        return None
    flags = frame[off]
    if frame[off + 1] & 0x07 or flags & 0x40:
        return None  # version 1 is PPTP's enhanced GRE; routing (RFC 1701) is obsolete
    proto = (frame[off + 2] << 8) | frame[off + 3]
    # Checksum (C, with a reserved half), key (K), sequence number (S): 4 bytes each.
    p = off + 4 + 4 * ((flags >> 7) + ((flags >> 5) & 1) + ((flags >> 4) & 1))
    kind = _ETHERTYPE_INNER.get(proto)
    if kind is not None:
        return (kind, p) if p <= end else None
    if proto == _ERSPAN_II:
        # Type II's 8-byte header (version 1) comes with a GRE sequence number;
        # type I has neither and the mirrored frame follows GRE at once.
        if flags & 0x10:
            if p + 8 > end or frame[p] >> 4 != 1:
                return None
            p += 8
        return (ETHERNET, p) if p <= end else None
    if proto == _ERSPAN_III:
        # 12 bytes, version 2; the O flag (last bit) adds an 8-byte platform subheader.
        if p + 12 > end or frame[p] >> 4 != 2:
            return None
        p += 20 if frame[p + 11] & 0x01 else 12
        return (ETHERNET, p) if p <= end else None
    return None
