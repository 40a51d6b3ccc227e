"""Tunnelled captures for the tunnel tests: made by the kernel (VXLAN in a
pair of network namespaces, fragmented or not, and over IPv6) or, for the
tunnels this kernel cannot make, built by scapy around the kernel's plain
frames.  See test_tunnels.py's docstring for why.

    python tests/capture/tunnelkit.py DIR   # the small captures of tests/capture/data
"""

from __future__ import annotations

import socket
import struct
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

if __name__ == "__main__":  # run as a script: the imports below as the tests see them
    sys.path[:0] = [str(Path(__file__).resolve().parents[2]), str(Path(__file__).resolve().parent)]

from livecap import Exchange, closed, converse, listener, tcpdump

from ripple_cli.capture.pcapfile import read_pcap
from tests.capture import netns


@dataclass
class Tunnelled:
    outer: Path  # the tunnel's packets, as captured on the veth
    inner: Path  # the plain packets, as captured on the tunnel's device
    exchanges: list[Exchange]
    subnet: str


def frames(path: Path) -> list[tuple[int, bytes]]:
    with path.open("rb") as f:
        return [(r[0], r[2]) for r in read_pcap(f) if isinstance(r, tuple)]


def _starts(frame: bytes) -> int:
    """1 if an Ethernet frame starts an IP datagram (not a later fragment)
    that is UDP or an IPv6 fragment chain starting with UDP."""
    etype = struct.unpack_from("!H", frame, 12)[0]
    if etype == 0x0800:
        return int(frame[23] == 17 and struct.unpack_from("!H", frame, 20)[0] & 0x1FFF == 0)
    if etype == 0x86DD:
        nh = frame[20]
        return int(nh == 17 or (nh == 44 and frame[54] == 17 and struct.unpack_from("!H", frame, 56)[0] & 0xFFF8 == 0))
    return 0


def _until_outer(inner: Path) -> Callable[[Path], bool]:
    # The tunnel's device sees each packet before the veth does: the outer
    # capture (stopped after the inner one) is whole once it started at
    # least as many datagrams as the inner one has packets.
    return lambda outer: sum(_starts(f) for _t, f in frames(outer)) >= len(frames(inner))


def converse_through(
    p: netns.Pair, dev: str, subnet: str, talks: list[tuple[bytes, bytes]], seed: int, where: Path
) -> Tunnelled:
    with netns.inside(p.b):
        srv = listener(f"{subnet}.2")
    port = srv.getsockname()[1]
    exchanges: list[Exchange] = []
    outer, inner = where / f"{dev}.pcap", where / f"{dev}-inner.pcap"
    with (
        netns.inside(p.a),
        tcpdump(outer, "udp", iface=p.veth, until=_until_outer(inner)),
        tcpdump(inner, f"tcp port {port}", iface=dev, until=closed(lambda: [e.client_port for e in exchanges])),
    ):
        exchanges += converse(srv, talks, seed=seed)
    srv.close()
    return Tunnelled(outer, inner, exchanges, subnet)


def vxlan_over_ipv6(p: netns.Pair, plain: Tunnelled, where: Path) -> Tunnelled:
    """The plain frames of the VXLAN conversation sent again as VXLAN
    datagrams over IPv6 by a UDP socket: the kernel fragments those larger
    than the veth's MTU."""
    outer = where / "vxlan6.pcap"
    sent = [f for _t, f in frames(plain.inner)]
    until = _until_outer(plain.inner)
    with (
        netns.inside(p.a),  # first: the socket is made in the namespace
        tcpdump(outer, "ip6 and not icmp6", iface=p.veth, until=until),
        socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as s,
    ):
        for frame in sent:
            s.sendto(bytes([8, 0, 0, 0, 0, 0, 44, 0]) + frame, ("fd77::2", 4789))
    return Tunnelled(outer, plain.inner, plain.exchanges, plain.subnet)


def scapy() -> ModuleType:
    return pytest.importorskip(
        "scapy.all", reason="scapy builds the Geneve/GRE/ERSPAN captures: pip install -e .[test]"
    )


def wrappers() -> dict[str, Callable[[bytes], bytes]]:
    """Each encapsulation as scapy builds it, around one plain Ethernet frame."""
    sc = scapy()
    from scapy.contrib.erspan import ERSPAN_II, ERSPAN_III, ERSPAN_PlatformSpecific
    from scapy.contrib.geneve import GENEVE, GeneveOptions
    from scapy.layers.vxlan import VXLAN

    eth4 = sc.Ether(src="02:00:00:00:66:01", dst="02:00:00:00:66:02") / sc.IP(src="10.66.0.1", dst="10.66.0.2")
    eth6 = sc.Ether(src="02:00:00:00:66:01", dst="02:00:00:00:66:02") / sc.IPv6(src="fd66::1", dst="fd66::2")
    option = GeneveOptions(classid=0x0102, type=0x80, data=b"mirr")  # GCP sends no options; they must be skipped
    qinq = b"\x88\xa8\x00\x07\x81\x00\x00\x05"  # 802.1ad then 802.1Q, inside the tunnel
    return {
        "geneve": lambda f: bytes(
            eth4 / sc.UDP(sport=50001, dport=6081) / GENEVE(vni=7, proto=0x6558, options=[option]) / f
        ),
        "geneve-ipv4": lambda f: bytes(eth4 / sc.UDP(sport=50001, dport=6081) / GENEVE(vni=7, proto=0x0800) / f[14:]),
        "gre-ethernet": lambda f: bytes(eth4 / sc.GRE(proto=0x6558, key_present=1, key=9) / f),
        "gre-ipv4": lambda f: bytes(eth4 / sc.GRE(proto=0x0800, chksum_present=1) / f[14:]),
        "gre-over-ipv6": lambda f: bytes(eth6 / sc.GRE(proto=0x0800) / f[14:]),
        "erspan-i": lambda f: bytes(eth4 / sc.GRE(proto=0x88BE) / f),  # type I: no ERSPAN header, no sequence
        "erspan-ii": lambda f: bytes(eth4 / sc.GRE(proto=0x88BE, seqnum_present=1) / ERSPAN_II(session_id=5) / f),
        "erspan-iii": lambda f: bytes(
            eth4 / sc.GRE(proto=0x22EB) / ERSPAN_III(session_id=6, o=1) / ERSPAN_PlatformSpecific(platf_id=3) / f
        ),
        "vxlan-qinq": lambda f: bytes(
            eth4 / sc.UDP(sport=50002, dport=4789) / VXLAN(vni=42) / (f[:12] + qinq + f[12:])
        ),
    }


def kernel_captures(where: Path, talks: Callable[[int], list[tuple[bytes, bytes]]]) -> dict[str, Tunnelled]:
    """The kernel's captures: `vxlan` (port 4789, whole packets),
    `vxlan-fragmented` (port 8472, outer IPv4 packets fragmented) and
    `vxlan-ipv6-fragmented`; `talks(seed)` gives each conversation's bytes."""
    out: dict[str, Tunnelled] = {}
    with netns.pair() as p:
        netns.vxlan(p, "vx42", 42, 4789, "192.168.77", 1450)  # fits the veth's 1500: whole packets
        netns.vxlan(p, "vx43", 43, 8472, "192.168.78", 1500)  # does not: fragmented outer packets
        out["vxlan"] = converse_through(p, "vx42", "192.168.77", talks(3), 3, where)
        out["vxlan-fragmented"] = converse_through(p, "vx43", "192.168.78", talks(4), 4, where)
        out["vxlan-ipv6-fragmented"] = vxlan_over_ipv6(p, out["vxlan"], where)
    return out


def main(out: Path) -> None:
    """The small committed captures: each kernel capture with its plain
    one (NAME.pcap, NAME-plain.pcap), and each scapy-built one around the
    plain frames of `vxlan` (their plain capture: vxlan-plain.pcap)."""
    from mutate import pcap_bytes

    session = (Path(__file__).resolve().parents[2] / "examples" / "session.ripple").read_bytes()
    talks = [(session * 8, b"ok\n" * 500)]
    with tempfile.TemporaryDirectory() as tmp:
        made = kernel_captures(Path(tmp), lambda seed: talks)
        out.mkdir(parents=True, exist_ok=True)
        for name, t in made.items():
            (out / f"{name}.pcap").write_bytes(t.outer.read_bytes())
            (out / f"{name}-plain.pcap").write_bytes(t.inner.read_bytes())
        plain = frames(made["vxlan"].inner)
    for name, wrap in wrappers().items():
        (out / f"{name}.pcap").write_bytes(pcap_bytes((t, wrap(f)) for t, f in plain))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
