"""Frames of every supported link type, built around the IP packets of a
real loopback capture: each must reassemble to exactly what was sent."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from livecap import assert_exchanges, read_capture
from mutate import pcap_bytes

from ripple_cli.capture.formats import sniff_format
from ripple_cli.capture.fragments import Defragmenter, Fragment
from ripple_cli.capture.packets import decode_frame
from ripple_cli.capture.pcapfile import read_pcap
from ripple_cli.capture.reader import CaptureOptions, capture_events
from tests.capture.capkit import Capture

MACS = bytes.fromhex("020000000001020000000002")


def _ip_packets(path: Path) -> list[tuple[int, bytes]]:
    """(time, IP packet) of an Ethernet capture."""
    with path.open("rb") as f:
        out = []
        for rec in read_pcap(f):
            assert isinstance(rec, tuple) and rec[1] == 1
            out.append((rec[0], rec[2][14:]))
    return out


def _to_ipv6(ip4: bytes, ext: bytes = b"", first_nh: int = 6) -> bytes:
    """The same TCP segment in IPv6 (::ffff-free ::1-like addresses made from
    the IPv4 ones), after extension headers `ext` whose chain starts with
    `first_nh` and ends pointing at TCP."""
    ihl = (ip4[0] & 15) * 4
    total = (ip4[2] << 8) | ip4[3]
    tcp = ip4[ihl:total]
    src = b"\xfd" + b"\x00" * 11 + ip4[12:16]
    dst = b"\xfd" + b"\x00" * 11 + ip4[16:20]
    return struct.pack("!IHBB", 6 << 28, len(ext) + len(tcp), first_nh, 64) + src + dst + ext + tcp


def _with_options(ip4: bytes) -> bytes:
    """An IPv4 header with 8 bytes of options (NOPs and an end of list)."""
    ihl = (ip4[0] & 15) * 4
    total = (ip4[2] << 8) | ip4[3]
    head = bytearray(ip4[:ihl] + b"\x01" * 7 + b"\x00")
    head[0] = 0x40 | (len(head) // 4)
    head[2:4] = struct.pack("!H", total + 8)
    return bytes(head) + ip4[ihl:]


# Extension headers: hop-by-hop (PadN to 8 bytes) -> destination options ->
# routing (type 0, segments left 0) -> an atomic fragment header -> TCP.
_EXT = (
    bytes([60, 0, 1, 4, 0, 0, 0, 0])
    + bytes([43, 0, 1, 4, 0, 0, 0, 0])
    + bytes([44, 0, 0, 0, 0, 0, 0, 0])
    + bytes([6, 0, 0, 0, 0, 0, 0, 1])
)

WRAPS: dict[str, tuple[int, Callable[[bytes], bytes]]] = {
    "ethernet+padding": (1, lambda ip: MACS + b"\x08\x00" + ip + b"\x00" * 6 + b"FCS!"),
    "ethernet 802.1Q": (1, lambda ip: MACS + b"\x81\x00\x00\x05\x08\x00" + ip),
    "ethernet QinQ": (1, lambda ip: MACS + b"\x88\xa8\x00\x07\x81\x00\x00\x05\x08\x00" + ip),
    "ethernet IPv6 in 802.1Q": (1, lambda ip: MACS + b"\x81\x00\x00\x05\x86\xdd" + _to_ipv6(ip)),
    "ethernet IPv4 options": (1, lambda ip: MACS + b"\x08\x00" + _with_options(ip)),
    "ethernet IPv6 extension headers": (1, lambda ip: MACS + b"\x86\xdd" + _to_ipv6(ip, _EXT, first_nh=0)),
    "linux cooked v1": (113, lambda ip: struct.pack("!HHH8sH", 0, 772, 6, b"\x00" * 8, 0x0800) + ip),
    "linux cooked v1 IPv6": (113, lambda ip: struct.pack("!HHH8sH", 4, 772, 6, b"\x00" * 8, 0x86DD) + _to_ipv6(ip)),
    "linux cooked v2": (276, lambda ip: struct.pack("!HHIHBB8s", 0x0800, 0, 1, 772, 0, 6, b"\x00" * 8) + ip),
    "raw 101": (101, lambda ip: ip),
    "raw 12": (12, lambda ip: _to_ipv6(ip)),
    "raw 14": (14, lambda ip: ip),
    "null host order (little)": (0, lambda ip: struct.pack("<I", 2) + ip),
    "null host order (big)": (0, lambda ip: struct.pack(">I", 2) + ip),
    "null IPv6 24": (0, lambda ip: struct.pack("<I", 24) + _to_ipv6(ip)),
    "null IPv6 28": (0, lambda ip: struct.pack(">I", 28) + _to_ipv6(ip)),
    "null IPv6 30": (0, lambda ip: struct.pack("<I", 30) + _to_ipv6(ip)),
    "openbsd loop": (108, lambda ip: struct.pack(">I", 2) + ip),
    "openbsd loop IPv6": (108, lambda ip: struct.pack(">I", 24) + _to_ipv6(ip)),
}


@pytest.mark.parametrize("name", sorted(WRAPS))
def test_link_types(tmp_path: Path, lo_capture: Capture, name: str) -> None:
    linktype, wrap = WRAPS[name]
    records = [(t, wrap(ip)) for t, ip in _ip_packets(lo_capture.path)]
    path = tmp_path / "x.pcap"
    path.write_bytes(pcap_bytes(records, linktype))
    res = read_capture(path)
    assert_exchanges(res, lo_capture.exchanges)
    host = next(iter(res.connections.values())).c2s.start.stream.client.host  # type: ignore[union-attr]
    assert host == ("fd00::7f00:1" if "IPv6" in name or name.startswith("raw 12") else "127.0.0.1")


def _fragments(ip4: bytes, cut: int) -> tuple[bytes, bytes]:
    """An IPv4 packet as two fragments, the first carrying `cut` bytes (a
    multiple of 8) of its payload."""
    ihl = (ip4[0] & 15) * 4
    total = (ip4[2] << 8) | ip4[3]
    body = ip4[ihl:total]
    first = bytearray(ip4[:ihl] + body[:cut])
    first[2:4] = struct.pack("!H", ihl + cut)
    first[6:8] = struct.pack("!H", 0x2000)  # more fragments, offset 0
    second = bytearray(ip4[:ihl] + body[cut:])
    second[2:4] = struct.pack("!H", ihl + len(body) - cut)
    second[6:8] = struct.pack("!H", cut // 8)
    return bytes(first), bytes(second)


@pytest.mark.parametrize("order", ["in order", "last first", "first lost"])
def test_ipv4_fragments(tmp_path: Path, lo_capture: Capture, order: str) -> None:
    """A segment sent as two IP fragments is reassembled, in either order;
    without its first fragment, the datagram is noted as incomplete (naming
    its frame) and its TCP bytes are a gap of exactly the segment's size."""
    packets = _ip_packets(lo_capture.path)
    ex = max(lo_capture.exchanges, key=lambda e: len(e.sent))
    big = [
        k
        for k, (_t, ip) in enumerate(packets)
        if struct.unpack("!H", ip[20:22])[0] == ex.client_port and len(ip) > 20 + 32 + 200
    ]
    k = big[2]
    t, ip = packets[k]
    first, second = _fragments(ip, 104)  # 32 bytes of TCP header (with timestamps), 72 of data
    assert (ip[32] >> 4) * 4 == 32
    frags = {"in order": [first, second], "last first": [second, first], "first lost": [second]}[order]
    records = [(tt, MACS + b"\x08\x00" + p) for tt, p in packets[:k]]
    records += [(t, MACS + b"\x08\x00" + f) for f in frags]
    records += [(tt, MACS + b"\x08\x00" + p) for tt, p in packets[k + 1 :]]
    path = tmp_path / "frag.pcap"
    path.write_bytes(pcap_bytes(records))
    res = read_capture(path)
    conn = res.by_client_port(ex.client_port)
    if order != "first lost":
        assert res.notes == []
        assert bytes(conn.c2s.data) == ex.sent
        return
    assert [(n.kind, n.error) for n in res.notes] == [("ip_fragment", False)]
    assert f"id {struct.unpack('!H', ip[4:6])[0]} (frames {k + 1}-{k + 1}) incomplete at the end of the capture: " in (
        res.notes[0].detail
    )
    gaps = [p for p in conn.c2s.pieces if isinstance(p, int)]
    assert gaps == [len(ip) - 52]
    assert bytes(conn.c2s.data) == ex.sent.replace(ip[52:], b"", 1)


def test_ipv6_fragments_are_reassembled() -> None:
    tcp = struct.pack("!HHIIBBHHH", 40000, 9000, 1, 0, 5 << 4, 0x18, 1000, 0, 0) + b"payload!" * 3
    ip6 = struct.pack("!IHBB", 6 << 28, 8 + 16, 44, 64) + b"\x00" * 15 + b"\x01" + b"\x00" * 15 + b"\x01"
    first = bytes([6, 0]) + struct.pack("!HI", 1, 7)  # offset 0, more fragments
    last = bytes([6, 0]) + struct.pack("!HI", 16, 7)  # offset 16, the last
    tail = ip6[:4] + struct.pack("!H", 8 + len(tcp) - 16) + ip6[6:] + last + tcp[16:]
    got = [decode_frame(101, ip6 + first + tcp[:16]), decode_frame(101, tail)]
    assert all(isinstance(g, Fragment) for g in got)
    defrag = Defragmenter()
    assert defrag.add(got[1], 0, 1) == (None, [])  # type: ignore[arg-type]
    whole, notes = defrag.add(got[0], 0, 2)  # type: ignore[arg-type]
    assert notes == [] and whole is not None
    seg = decode_frame(101, whole)
    assert isinstance(seg, tuple) and seg[7] == b"payload!" * 3 and seg[2:4] == (40000, 9000)
    atomic = bytes([6, 0]) + struct.pack("!HI", 0, 7)  # offset 0, no more: an atomic fragment (RFC 6946)
    seg = decode_frame(101, ip6[:4] + struct.pack("!H", 8 + len(tcp)) + ip6[6:] + atomic + tcp)
    assert isinstance(seg, tuple) and seg[7] == b"payload!" * 3


def test_not_tcp() -> None:
    ip_udp = bytes.fromhex("4500001c000100004011") + b"\x00\x00" + b"\x7f\x00\x00\x01" * 2 + b"\x00" * 8
    assert decode_frame(1, MACS + b"\x08\x00" + ip_udp) is None
    assert decode_frame(1, MACS + b"\x08\x06" + b"\x00" * 28) is None  # ARP
    assert decode_frame(1, MACS + b"\x08\x00" + b"\x45\x00") is None  # cut short
    assert decode_frame(1, MACS[:10]) is None
    assert decode_frame(0, struct.pack("<I", 7) + b"\x45" + b"\x00" * 40) is None  # an unknown family
    assert decode_frame(101, b"\x20" + b"\x00" * 40) is None  # IP version 2
    assert decode_frame(147, MACS + b"\x08\x00" + b"\x00" * 40) is None  # not a supported link type


def test_sniff_format() -> None:
    assert sniff_format(bytes.fromhex("a1b2c3d4")) == "pcap"
    assert sniff_format(bytes.fromhex("d4c3b2a1") + b"rest") == "pcap"
    assert sniff_format(bytes.fromhex("a1b23c4d")) == "pcap"
    assert sniff_format(bytes.fromhex("4d3cb2a1")) == "pcap"
    assert sniff_format(bytes.fromhex("0a0d0d0a")) == "pcapng"
    assert sniff_format(b"RIPP\x01") == "raw"
    assert sniff_format(b"\xa1\xb2") == "raw"
    assert sniff_format(b"") == "raw"


def test_events_carry_capture_times(lo_capture: Capture) -> None:
    with lo_capture.path.open("rb") as f:
        times = [r[0] for r in read_pcap(f) if isinstance(r, tuple)]
    with lo_capture.path.open("rb") as f:
        events = list(capture_events(f, "lo.pcap", CaptureOptions()))
    # In capture order (which several CPUs may stamp slightly out of order):
    # each event has the time of the same packet as the one before or a later one.
    at = 0
    for ev in events:
        while times[at] != ev.time_ns:
            at += 1
