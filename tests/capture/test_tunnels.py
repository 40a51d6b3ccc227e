"""Mirrored traffic inside tunnels, decoded as the plain traffic it carries.

The VXLAN captures are the kernel's own: two network namespaces, a real
`ip link add ... type vxlan` between them, a real conversation over it,
and tcpdump on both the veth (the tunnel's packets) and the VXLAN device
(the plain packets inside).  With the tunnel's MTU above the veth's, the
kernel fragments the outer IPv4 packets.  IPv6 fragments come from the
kernel too: VXLAN datagrams larger than the MTU sent over IPv6 from a UDP
socket, which the kernel fragments at the source.

Geneve, GRE (IPv4, IPv6, Ethernet) and ERSPAN II/III captures cannot be
made by this machine's kernel (it has no geneve, ip_gre or ip6_gre modules:
`ip link add ... type geneve|gretap` answers "Unknown device type"), so
they are built with scapy around the frames of the real VXLAN conversation,
and each is checked against the real tshark: it must dissect the same
inner TCP packets (ports, raw sequence numbers, lengths) as the plain
capture.  Then decoding each tunnelled capture must give exactly what
decoding the plain capture gives.
"""

from __future__ import annotations

import re
import socket
import struct
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from livecap import Exchange, assert_exchanges, closed, converse, listener, read_capture, tcpdump
from mutate import pcap_bytes

from ripple_cli.capture.pcapfile import read_pcap
from tests.capture import netns
from tests.capture.capkit import payloads
from tests.capture.test_packets import _to_ipv6
from tests.conftest import run_cli

_CLOCK = re.compile(r"\b\d\d:\d\d:\d\d\.\d{6}\b")
TSHARK_FIELDS = ["-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "tcp.seq_raw", "-e", "tcp.len", "-e", "tcp.flags"]


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


def _converse_through(p: netns.Pair, dev: str, subnet: str, seed: int, where: Path) -> Tunnelled:
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
        exchanges += converse(srv, payloads(2, seed), seed=seed)
    srv.close()
    return Tunnelled(outer, inner, exchanges, subnet)


@pytest.fixture(scope="session")
def kernel_tunnels(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Tunnelled]]:
    where = tmp_path_factory.mktemp("tunnels")
    out: dict[str, Tunnelled] = {}
    with netns.pair() as p:
        netns.vxlan(p, "vx42", 42, 4789, "192.168.77", 1450)  # fits the veth's 1500: whole packets
        netns.vxlan(p, "vx43", 43, 8472, "192.168.78", 1500)  # does not: fragmented outer packets
        out["vxlan"] = _converse_through(p, "vx42", "192.168.77", 3, where)
        out["vxlan-fragmented"] = _converse_through(p, "vx43", "192.168.78", 4, where)
        out["vxlan-ipv6-fragmented"] = _vxlan_over_ipv6(p, out["vxlan"], where)
        yield out


def _vxlan_over_ipv6(p: netns.Pair, plain: Tunnelled, where: Path) -> Tunnelled:
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


def _decode(path: Path, *args: str) -> tuple[int, str]:
    res = run_cli(["decode", *args, str(path)])
    return res.code, _CLOCK.sub("T", (res.text + res.stderr).replace(str(path), "CAPTURE"))


def _same_decode(tunnelled: Path, plain: Path) -> None:
    """The same messages, problems and listing; only the capture times may
    differ (the device and the veth stamp each packet a few microseconds
    apart)."""
    for args in ((), ("--list-streams",), ("--show-connection",)):
        assert _decode(tunnelled, *args) == _decode(plain, *args)


def _tshark_tcp(path: Path, *decode_as: str) -> list[str]:
    res = subprocess.run(
        ["tshark", "-n", "-r", str(path), *decode_as, "-Y", "tcp", "-T", "fields", *TSHARK_FIELDS],
        capture_output=True,
        text=True,
        check=True,
    )
    return res.stdout.splitlines()


def _tcp_coverage(lines: list[str]) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """tshark's TCP packets as the byte ranges each direction covered (the
    kernel segments a large packet in software before fragmenting its outer
    packet, so the two captures cut the same bytes differently)."""
    spans: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for line in lines:
        sport, dport, seq, size, _flags = line.split("\t")
        spans.setdefault((sport, dport), []).append((int(seq), int(seq) + int(size)))
    merged: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for key, ranges in spans.items():
        out: list[tuple[int, int]] = []
        for a, b in sorted(ranges):
            if out and a <= out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], b))
            else:
                out.append((a, b))
        merged[key] = out
    return merged


def _fragments_in(path: Path) -> int:
    res = subprocess.run(
        [
            "tshark",
            "-n",
            "-r",
            str(path),
            "-Y",
            "ip.flags.mf == 1 or ipv6.fraghdr.more == 1",
            "-T",
            "fields",
            "-e",
            "frame.number",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return len(res.stdout.split())


@pytest.mark.parametrize("name", ["vxlan", "vxlan-fragmented", "vxlan-ipv6-fragmented"])
def test_kernel_vxlan_decodes_as_the_plain_capture(kernel_tunnels: dict[str, Tunnelled], name: str) -> None:
    t = kernel_tunnels[name]
    decode_as = ["-d", "udp.port==8472,vxlan"] if name == "vxlan-fragmented" else []
    seen, plain = _tshark_tcp(t.outer, *decode_as), _tshark_tcp(t.inner)
    if name == "vxlan-fragmented":
        assert _tcp_coverage(seen) == _tcp_coverage(plain)
    else:
        assert seen == plain
    # The fragmented ones really are: tshark finds fragments the kernel made.
    assert (_fragments_in(t.outer) > 0) == name.endswith("fragmented")
    res = read_capture(t.outer)
    assert res.notes == []
    assert_exchanges(res, t.exchanges)
    assert {c.c2s.start.stream.client.host for c in res.connections.values()} == {f"{t.subnet}.1"}  # type: ignore[union-attr]
    _same_decode(t.outer, t.inner)
    # (exit 1: the servers answer random bytes, a problem in every s2c stream)
    code, listing = _decode(t.outer, "--list-streams")
    assert code == 1 and f"{t.subnet}.1:" in listing and "10.77.0" not in listing


def _scapy() -> ModuleType:
    return pytest.importorskip(
        "scapy.all", reason="scapy builds the Geneve/GRE/ERSPAN captures: pip install -e .[test]"
    )


def _wrappers() -> dict[str, Callable[[bytes], bytes]]:
    """Each encapsulation as scapy builds it, around one plain Ethernet frame."""
    sc = _scapy()
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
        "erspan-ii": lambda f: bytes(eth4 / sc.GRE(proto=0x88BE, seqnum_present=1) / ERSPAN_II(session_id=5) / f),
        "erspan-iii": lambda f: bytes(
            eth4 / sc.GRE(proto=0x22EB) / ERSPAN_III(session_id=6, o=1) / ERSPAN_PlatformSpecific(platf_id=3) / f
        ),
        "vxlan-qinq": lambda f: bytes(
            eth4 / sc.UDP(sport=50002, dport=4789) / VXLAN(vni=42) / (f[:12] + qinq + f[12:])
        ),
    }


BUILT = ["geneve", "geneve-ipv4", "gre-ethernet", "gre-ipv4", "gre-over-ipv6", "erspan-ii", "erspan-iii", "vxlan-qinq"]


@pytest.mark.parametrize("name", BUILT)
def test_built_tunnels_decode_as_the_plain_capture(
    kernel_tunnels: dict[str, Tunnelled], tmp_path: Path, name: str
) -> None:
    """Built by scapy around the kernel's plain frames (this kernel cannot
    make these tunnels: see the module's docstring), checked with tshark."""
    wrap = _wrappers()[name]
    plain = kernel_tunnels["vxlan"]
    path = tmp_path / f"{name}.pcap"
    path.write_bytes(pcap_bytes((t, wrap(f)) for t, f in frames(plain.inner)))
    assert _tshark_tcp(path) == _tshark_tcp(plain.inner)
    res = read_capture(path)
    assert res.notes == []
    assert_exchanges(res, plain.exchanges)
    _same_decode(path, plain.inner)


def test_gre_carrying_ipv6(kernel_tunnels: dict[str, Tunnelled], tmp_path: Path) -> None:
    """GRE (0x86dd) carrying the same segments in IPv6, against a plain
    Ethernet capture of those IPv6 packets."""
    sc = _scapy()
    eth4 = sc.Ether(src="02:00:00:00:66:01", dst="02:00:00:00:66:02") / sc.IP(src="10.66.0.1", dst="10.66.0.2")
    ip6 = [(t, _to_ipv6(f[14:])) for t, f in frames(kernel_tunnels["vxlan"].inner)]
    plain = tmp_path / "plain6.pcap"
    plain.write_bytes(pcap_bytes((t, bytes(12) + b"\x86\xdd" + p) for t, p in ip6))
    path = tmp_path / "gre6.pcap"
    path.write_bytes(pcap_bytes((t, bytes(eth4 / sc.GRE(proto=0x86DD) / p)) for t, p in ip6))
    assert _tshark_tcp(path) == _tshark_tcp(plain)
    assert len(_tshark_tcp(plain)) == len(ip6)
    assert read_capture(path).notes == []
    _same_decode(path, plain)
    assert "[fd00::c0a8:4d01]:" in _decode(path, "--list-streams")[1]


def test_every_encapsulation_is_tested() -> None:
    assert sorted(_wrappers()) == sorted(BUILT)
