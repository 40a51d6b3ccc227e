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
import subprocess
from pathlib import Path

import pytest
from livecap import assert_exchanges, read_capture
from mutate import pcap_bytes

from tests.capture.capkit import payloads
from tests.capture.test_packets import _to_ipv6
from tests.capture.tunnelkit import Tunnelled, frames, kernel_captures, scapy, wrappers
from tests.conftest import run_cli

_CLOCK = re.compile(r"\b\d\d:\d\d:\d\d\.\d{6}\b")
TSHARK_FIELDS = ["-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "tcp.seq_raw", "-e", "tcp.len", "-e", "tcp.flags"]


@pytest.fixture(scope="session")
def kernel_tunnels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Tunnelled]:
    return kernel_captures(tmp_path_factory.mktemp("tunnels"), lambda seed: payloads(2, seed))


def _decode(path: Path, *args: str) -> tuple[int, str]:
    res = run_cli(["decode", *args, str(path)])
    text = _CLOCK.sub("T", (res.text + res.stderr).replace(str(path), "CAPTURE"))
    return res.code, _PROBLEM_CONNECTION.sub("CAPTURE: N ", text)


# A problem line names its connection by number ("CAPTURE: 2 a -> b: ..."),
# given in the order a capture point saw the connections (see _same_decode).
_PROBLEM_CONNECTION = re.compile(r"CAPTURE: \d+ ")


def _same_decode(tunnelled: Path, plain: Path) -> None:
    """The same messages, problems and listing; only the capture times may
    differ (the device and the veth stamp each packet a few microseconds
    apart)."""
    # Two capture points may see two connections' first packets, and their
    # messages, interleaved differently (never one connection's): connections
    # are numbered in the order each capture saw them, so they are compared
    # by their addresses, and each one's messages in order.
    listed = [_by_address(*_decode(path, "--list-streams")) for path in (tunnelled, plain)]
    assert listed[0] == listed[1]
    shown = [_by_connection(*_decode(path, "--show-connection")) for path in (tunnelled, plain)]
    assert shown[0] == shown[1]
    lines = [(code, sorted(text.splitlines())) for code, text in (_decode(tunnelled), _decode(plain))]
    assert lines[0] == lines[1]


_CONNECTION_NUMBER = re.compile(r"^\d+(?=:(?:c2s|s2c)\b)")


def _by_address(code: int, text: str) -> tuple[int, list[list[str]]]:
    """--list-streams' header, then its rows without the connection number,
    sorted (each row names both addresses and its direction), and without
    the reassembly counts (ooo, retx, unseen, held): they follow the order
    in which a capture point recorded the two directions' packets, which
    may differ between the two points (see _per_direction); the messages
    may not."""
    head, *rows = text.splitlines()
    assert head.split()[-4:] == ["ooo", "retx", "unseen", "held"], head
    return code, [head.split()[:-4], *sorted(_CONNECTION_NUMBER.sub("N", row).split()[:-4] for row in rows)]


def _by_connection(code: int, text: str) -> tuple[int, dict[str, list[str]]]:
    """--show-connection's lines by the connection each ends with (its
    addresses, without its number), in order."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        body, _, label = line.rpartition(" ; ")
        out.setdefault(label.partition(" ")[2] if body else "", []).append(body or line)
    out[""] = sorted(out.get("", []))  # problem lines: each names its connection by address
    return code, out


def _tshark_tcp(path: Path, *decode_as: str) -> list[str]:
    res = subprocess.run(
        ["tshark", "-n", "-r", str(path), *decode_as, "-Y", "tcp", "-T", "fields", *TSHARK_FIELDS],
        capture_output=True,
        text=True,
        check=True,
    )
    return res.stdout.splitlines()


def _per_direction(lines: list[str]) -> dict[str, list[str]]:
    """tshark's TCP packets, direction by direction, in order: the two
    capture points (the veth and the VXLAN device) may interleave the two
    directions differently on a busy machine, never one direction's."""
    out: dict[str, list[str]] = {}
    for line in lines:
        sport, dport, rest = line.split("\t", 2)
        out.setdefault(f"{sport}>{dport}", []).append(rest)
    return out


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
        assert _per_direction(seen) == _per_direction(plain)
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


BUILT = [
    "geneve",
    "geneve-ipv4",
    "gre-ethernet",
    "gre-ipv4",
    "gre-over-ipv6",
    "erspan-i",
    "erspan-ii",
    "erspan-iii",
    "vxlan-qinq",
]


@pytest.mark.parametrize("name", BUILT)
def test_built_tunnels_decode_as_the_plain_capture(
    kernel_tunnels: dict[str, Tunnelled], tmp_path: Path, name: str
) -> None:
    """Built by scapy around the kernel's plain frames (this kernel cannot
    make these tunnels: see the module's docstring), checked with tshark."""
    wrap = wrappers()[name]
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
    sc = scapy()
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
    assert sorted(wrappers()) == sorted(BUILT)


DATA = Path(__file__).resolve().parent / "data" / "tunnels"
KERNEL = ["vxlan", "vxlan-fragmented", "vxlan-ipv6-fragmented"]


@pytest.mark.parametrize("name", KERNEL + BUILT)
def test_committed_captures(name: str) -> None:
    """The small captures `python tests/capture/tunnelkit.py
    tests/capture/data/tunnels` made here (the kernel's, and scapy's around
    the kernel's plain frames): they need neither root nor scapy."""
    path = DATA / f"{name}.pcap"
    plain = DATA / (f"{name}-plain.pcap" if name in KERNEL else "vxlan-plain.pcap")
    decode_as = ["-d", "udp.port==8472,vxlan"] if name == "vxlan-fragmented" else []
    seen, expected = _tshark_tcp(path, *decode_as), _tshark_tcp(plain)
    if name == "vxlan-fragmented":
        assert _tcp_coverage(seen) == _tcp_coverage(expected)
    else:
        assert seen == expected
    assert (_fragments_in(path) > 0) == name.endswith("fragmented")
    assert read_capture(path).notes == []
    _same_decode(path, plain)
    code, listing = _decode(path, "--list-streams")
    c2s = listing.splitlines()[1].split()
    assert (code, c2s[0], c2s[2][:9], c2s[5:7]) == (1, "1:c2s", "192.168.7", ["40", "3720"])  # the inner address
