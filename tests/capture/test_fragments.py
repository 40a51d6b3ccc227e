"""IP fragment reassembly: the datagram comes back whole, within its bounds,
and what cannot be reassembled is reported, naming the frames."""

from __future__ import annotations

import struct
from pathlib import Path

from mutate import pcap_bytes

from ripple_cli.capture.fragments import Defragmenter, Fragment
from ripple_cli.capture.packets import decode_frame
from tests.conftest import run_cli

SRC, DST = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
S = 1_000_000_000


def ipv4_fragment(ident: int, offset: int, more: bool, data: bytes, proto: int = 6) -> bytes:
    head = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(data), ident, (0x2000 if more else 0) | offset // 8,
                       64, proto, 0, SRC, DST)  # fmt: skip
    return head + data


def frag(ident: int, offset: int, more: bool, data: bytes) -> Fragment:
    got = decode_frame(101, ipv4_fragment(ident, offset, more, data))
    assert isinstance(got, Fragment)
    return got


def tcp(payload: bytes, sport: int = 40000) -> bytes:
    return struct.pack("!HHIIBBHHH", sport, 9000, 1, 0, 5 << 4, 0x18, 1000, 0, 0) + payload


def test_whole_in_any_order_and_duplicates_merged() -> None:
    body = tcp(b"0123456789abcdef" * 4)  # 84 bytes
    d = Defragmenter()
    assert d.add(frag(1, 40, False, body[40:]), 0, 1) == (None, [])
    assert d.add(frag(1, 16, True, body[16:48]), 0, 2) == (None, [])  # overlaps the last with the same bytes
    assert d.add(frag(1, 40, False, body[40:]), 0, 3) == (None, [])  # captured twice
    whole, notes = d.add(frag(1, 0, True, body[:24]), 0, 4)
    assert notes == [] and whole is not None
    seg = decode_frame(101, whole)
    assert isinstance(seg, tuple) and seg[7] == b"0123456789abcdef" * 4
    assert d.open == {} and d.size == 0


def test_conflicting_overlap_is_a_problem_naming_the_frame() -> None:
    body = tcp(b"A" * 40)
    d = Defragmenter()
    d.add(frag(7, 0, True, body[:32]), 0, 5)
    whole, notes = d.add(frag(7, 24, False, b"B" * 8 + body[32:]), 0, 9)
    assert whole is None
    assert [(n.kind, n.error, n.detail) for n in notes] == [
        (
            "fragment_overlap",
            True,
            "IPv4 10.0.0.1 -> 10.0.0.2 id 7: fragments overlap with different bytes (bytes 24-59) "
            "in frame 9 (datagram from frame 5 dropped)",
        )
    ]
    assert d.open == {}


def test_bad_fragments() -> None:
    d = Defragmenter()
    _, notes = d.add(frag(1, 65528, False, b"x" * 16), 0, 1)
    assert [n.kind for n in notes] == ["bad_fragment"] and "past the 65535" in notes[0].detail
    d.add(frag(2, 0, True, b"x" * 8), 0, 2)
    d.add(frag(2, 16, False, b"x" * 8), 0, 3)  # the end: 24 (8-15 missing)
    _, notes = d.add(frag(2, 24, True, b"x" * 8), 0, 4)
    assert [n.kind for n in notes] == ["bad_fragment"] and "past the end its last fragment set in frame 4" in notes[
        0
    ].detail
    d.add(frag(3, 0, True, b"x" * 8), 0, 5)
    d.add(frag(3, 16, False, b"x" * 8), 0, 6)
    _, notes = d.add(frag(3, 8, False, b"x" * 8), 0, 7)
    assert [n.kind for n in notes] == ["bad_fragment"]
    assert d.open == {}


def test_bounds_timeout_and_end() -> None:
    d = Defragmenter(max_datagrams=2, max_bytes=1000, timeout_ns=30 * S)
    d.add(frag(1, 8, True, b"x" * 8), 0, 1)
    d.add(frag(2, 8, True, b"x" * 8), 1, 2)
    _, notes = d.add(frag(3, 8, True, b"x" * 8), 2, 3)
    assert [n.detail for n in notes] == [
        "IPv4 10.0.0.1 -> 10.0.0.2 id 1 (frames 1-1) incomplete too many datagrams being reassembled: "
        "8 of ? bytes, missing from the stream"
    ]
    assert not notes[0].error and notes[0].kind == "ip_fragment"
    _, notes = d.add(frag(4, 600, True, b"x" * 8), 3, 4)  # a 608-byte buffer (and its mask): over 1000 bytes
    assert [n.detail.split(" (")[0] for n in notes] == [
        "IPv4 10.0.0.1 -> 10.0.0.2 id 2",
        "IPv4 10.0.0.1 -> 10.0.0.2 id 3",
        "IPv4 10.0.0.1 -> 10.0.0.2 id 4",
    ]
    reasons = [n.detail.split(" incomplete ")[1].split(":")[0] for n in notes]
    assert reasons == ["too many datagrams being reassembled"] + ["over the fragment memory bound"] * 2
    assert list(d.open) == [] and d.size == 0  # the new one alone is over the bound too
    d.add(frag(5, 8, True, b"x" * 8), 4, 5)
    _, notes = d.add(frag(6, 8, True, b"x" * 8), 4 + 30 * S + 1, 6)
    assert [n.detail for n in notes] == [
        "IPv4 10.0.0.1 -> 10.0.0.2 id 5 (frames 5-5) incomplete after 30 s: 8 of ? bytes, missing from the stream"
    ]
    assert [n.detail for n in d.finish(0)] == [
        "IPv4 10.0.0.1 -> 10.0.0.2 id 6 (frames 6-6) incomplete at the end of the capture: "
        "8 of ? bytes, missing from the stream"
    ]


def test_cli_reports_an_overlap_in_one_line(tmp_path: Path) -> None:
    body = tcp(b"A" * 40)
    frames = [ipv4_fragment(7, 0, True, body[:32]), ipv4_fragment(7, 24, False, b"B" * 8 + body[32:])]
    path = tmp_path / "overlap.pcap"
    path.write_bytes(pcap_bytes(((k * S, f) for k, f in enumerate(frames)), linktype=101))
    res = run_cli(["decode", str(path)])
    assert res.code == 1 and res.stdout == b""
    assert res.stderr == (
        f"ripple: {path}: error: IPv4 10.0.0.1 -> 10.0.0.2 id 7: fragments overlap with different bytes "
        "(bytes 24-59) in frame 2 (datagram from frame 1 dropped)\n"
    )
