"""Hostile and random tunnels and fragments: never a traceback, bounded
memory, linear time.

Frames are built from the real headers (VLAN tags, IPv4/IPv6, UDP with the
VXLAN/Geneve ports, GRE with every flag, ERSPAN II/III), nested at random,
fragmented at random (overlapping, duplicated, missing pieces), then cut
and corrupted at random.  In-process, every event must be one the reader
documents; as a process under a 512 MiB address-space limit, `ripple
decode` must end with a documented exit code and no traceback, also on
captures made to exhaust the reassembly bounds."""

from __future__ import annotations

import resource
import struct
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from mutate import pcap_bytes

from ripple_cli.capture.events import CaptureNote, StreamData, StreamEnd, StreamGap, StreamStart
from ripple_cli.capture.reader import CaptureOptions, frame_events
from tests.conftest import ROOT

KINDS = {"ip_fragment", "fragment_overlap", "bad_fragment", "conflicting_overlap", "evicted", "port_reused"}
LIMIT = 512 << 20

A4, B4 = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
A6, B6 = b"\xfd" + bytes(14) + b"\x01", b"\xfd" + bytes(14) + b"\x02"


def ipv4(proto: int, body: bytes, ident: int = 1, frag: int = 0) -> bytes:
    return struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(body), ident, frag, 64, proto, 0, A4, B4) + body


def ipv6(nh: int, body: bytes) -> bytes:
    return struct.pack("!IHBB", 6 << 28, len(body), nh, 64) + A6 + B6 + body


def ether(etype: int, body: bytes, tags: list[int]) -> bytes:
    head = bytes(12)
    for tag in tags:
        head += struct.pack("!HH", tag, 5)
    return head + struct.pack("!H", etype) + body


# Deterministic, no shrinking (a failing example is printed as found: the
# frames are large, and shrinking them took minutes).
FUZZ = settings(
    phases=[Phase.generate], deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)

TCP = struct.pack("!HHIIBBHHH", 40000, 9000, 1, 0, 5 << 4, 0x18, 1000, 0, 0)


@st.composite
def packet(draw: st.DrawFn, depth: int = 0) -> tuple[str, bytes]:
    """("eth" | "ip4" | "ip6", bytes): a TCP segment, in tunnels `depth` deep at most 10."""
    if depth >= 10 or draw(st.integers(0, 3)) == 0:
        seg = TCP + draw(st.binary(max_size=64))
        return ("ip4", ipv4(6, seg)) if draw(st.booleans()) else ("ip6", ipv6(6, seg))
    kind, inner = draw(packet(depth + 1))
    etypes = {"eth": 0x6558, "ip4": 0x0800, "ip6": 0x86DD}
    how = draw(st.sampled_from(["vxlan", "geneve", "gre", "erspan2", "erspan3", "eth"]))
    if how == "eth":
        if kind == "eth":
            return ("eth", inner)
        tags = draw(st.lists(st.sampled_from([0x8100, 0x88A8, 0x9100]), max_size=3))
        return ("eth", ether(etypes[kind], inner, tags))
    if kind != "eth" and how in ("vxlan", "erspan2", "erspan3"):
        inner = ether(etypes[kind], inner, [])
        kind = "eth"
    if how == "vxlan":
        port = draw(st.sampled_from([4789, 8472]))
        body = (
            struct.pack("!HHHH", 5000, port, 0, 0) + bytes([draw(st.sampled_from([8, 0])), 0, 0, 0, 0, 0, 1, 0]) + inner
        )
        proto = 17
    elif how == "geneve":
        opts = draw(st.integers(0, 63))
        geneve = bytes([opts | draw(st.sampled_from([0, 0x40])), 0]) + struct.pack("!H", etypes[kind]) + bytes(4)
        body = (
            struct.pack("!HHHH", 5000, 6081, 0, 0)
            + geneve
            + draw(st.binary(min_size=opts * 4, max_size=opts * 4))
            + inner
        )
        proto = 17
    else:
        flags = draw(st.sampled_from([0, 0x80, 0x20, 0x10, 0xB0, 0x40]))
        gproto = {"gre": etypes[kind], "erspan2": 0x88BE, "erspan3": 0x22EB}[how]
        extra = bytes(4 * bin(flags & 0xB0).count("1"))
        mirror = b""
        if how == "erspan2" and flags & 0x10:
            mirror = bytes([0x10]) + bytes(7)
        elif how == "erspan3":
            mirror = bytes([0x20]) + bytes(10) + bytes([draw(st.sampled_from([0, 1]))])
            mirror += bytes(8) if mirror[11] else b""
        body = struct.pack("!BBH", flags, 0, gproto) + extra + mirror + inner
        proto = 47
    if draw(st.booleans()):
        return ("ip4", ipv4(proto, body))
    return ("ip6", ipv6(proto, body))


@st.composite
def frames(draw: st.DrawFn) -> list[bytes]:
    """Ethernet frames: packets, some fragmented (IPv4 or IPv6), pieces
    shuffled, repeated, dropped, overlapping; then some cut or corrupted."""
    out: list[bytes] = []
    for _ in range(draw(st.integers(1, 6))):
        kind, pkt = draw(packet())
        if kind == "eth":
            out.append(pkt)
            continue
        etype = 0x0800 if kind == "ip4" else 0x86DD
        if not draw(st.booleans()):
            out.append(ether(etype, pkt, []))
            continue
        body = pkt[20:] if kind == "ip4" else pkt[40:]
        ident = draw(st.integers(0, 3))
        pieces = []
        for _ in range(draw(st.integers(1, 5))):
            a = draw(st.integers(0, max(0, len(body) // 8))) * 8
            b = draw(st.integers(a, len(body) + 16))
            more = draw(st.booleans())
            data = body[a:b] if draw(st.integers(0, 4)) else draw(st.binary(max_size=40))
            if kind == "ip4":
                pieces.append(ether(0x0800, ipv4(pkt[9], data, ident, (0x2000 if more else 0) | a // 8), []))
            else:
                fh = struct.pack("!BBHI", pkt[6], 0, a | more, ident)
                pieces.append(ether(0x86DD, ipv6(44, fh + data), []))
        out += draw(st.permutations(pieces))
    for k in range(len(out)):
        cut = draw(st.integers(0, 3))
        if cut == 0:
            out[k] = out[k][: draw(st.integers(0, len(out[k])))]
        elif cut == 1 and out[k]:
            at = draw(st.integers(0, len(out[k]) - 1))
            out[k] = out[k][:at] + bytes([draw(st.integers(0, 255))]) + out[k][at + 1 :]
    return out


@settings(FUZZ, max_examples=300)
@given(frames())
def test_random_tunnels_and_fragments_give_documented_events(fs: list[bytes]) -> None:
    events = list(frame_events(((k, 1, f) for k, f in enumerate(fs)), "fuzz", CaptureOptions()))
    for ev in events:
        assert isinstance(ev, StreamStart | StreamData | StreamGap | StreamEnd | CaptureNote)
        if isinstance(ev, CaptureNote):
            assert ev.kind in KINDS, ev


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _decode_limited(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ripple_cli", "decode", str(path)],
        preexec_fn=_limited,
        capture_output=True,
        text=True,
        timeout=600,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        check=False,
    )


def _hostile() -> bytes:
    """Frames made to exhaust the bounds: 100,000 datagrams opened at their
    furthest byte (64 KiB buffers each), and one datagram in 8,191 8-byte
    fragments, twice over, then overlapped with other bytes."""
    recs: list[tuple[int, bytes]] = []
    for k in range(100_000):
        recs.append((k, ether(0x0800, ipv4(17, b"x" * 8, k & 0xFFFF, 0x2000 | 8190), [])))
    for _round in range(2):
        for off in range(0, 65528, 8):
            recs.append((200_000, ether(0x0800, ipv4(6, b"y" * 8, 7, 0x2000 | off // 8), [])))
    recs.append((200_001, ether(0x0800, ipv4(6, b"z" * 64, 7, 0x2000 | 10), [])))
    deep = ipv4(6, TCP)
    for _ in range(200):  # tunnels 200 deep: the decoder stops at 8
        deep = ipv4(47, struct.pack("!BBH", 0, 0, 0x0800) + deep)
    recs.append((200_002, ether(0x0800, deep[:65000], [])))
    return pcap_bytes(recs)


def test_hostile_capture_under_a_memory_limit(tmp_path: Path) -> None:
    path = tmp_path / "hostile.pcap"
    path.write_bytes(_hostile())
    res = _decode_limited(path)
    assert "Traceback" not in res.stderr
    assert res.returncode == 1, res.stderr  # the conflicting overlap is a problem
    assert res.stderr.count("fragments overlap with different bytes") == 1
    assert all(line.startswith("ripple: ") for line in res.stderr.splitlines())


@settings(FUZZ, max_examples=5)
@given(st.lists(frames(), min_size=20, max_size=40))
def test_random_captures_under_a_memory_limit(tmp_path_factory: object, batches: list[list[bytes]]) -> None:
    recs = [(k, f) for k, f in enumerate(f for fs in batches for f in fs)]
    path = Path(tmp_path_factory.mktemp("fuzz")) / "random.pcap"  # type: ignore[attr-defined]
    path.write_bytes(pcap_bytes(recs))
    res = _decode_limited(path)
    assert "Traceback" not in res.stderr
    assert res.returncode in (0, 1), res.stderr
