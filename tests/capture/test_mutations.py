"""A real capture, damaged the way networks and capture points damage
them (reordered, duplicated, overlapping, split, dropped segments; moved
sequence numbers; a capture that starts late): what reassembly makes of it."""

from __future__ import annotations

import random
from pathlib import Path

import dpkt  # type: ignore[import-untyped, unused-ignore]
import pytest
from livecap import Exchange, Result, read_capture
from mutate import (
    MASK,
    Packet,
    connection,
    data_indices,
    drop,
    duplicate,
    expected_pieces,
    isn,
    overlap,
    read_pcap,
    rebase,
    reorder,
    separate_fin,
    split,
    stream_offset,
    write_pcap,
)

from ripple_cli.capture.events import StreamEnd, StreamGap
from tests.capture.capkit import Capture


def _demo(cap: Capture) -> tuple[list[Packet], Exchange]:
    """The packets of the connection that carried the bundled stream."""
    ex = max(cap.exchanges, key=lambda e: len(e.sent))
    return connection(read_pcap(cap.path), ex.client_port), ex


def _read(tmp_path: Path, pkts: list[Packet], name: str = "m.pcap", **options: object) -> Result:
    return read_capture(write_pcap(tmp_path / name, pkts), **options)


def _assert_exact(res: Result, ex: Exchange) -> None:
    conn = res.by_client_port(ex.client_port)
    assert conn.c2s.pieces == [ex.sent]
    assert conn.s2c.pieces == [ex.answered]
    assert res.notes == []


def test_unchanged(tmp_path: Path, lo_capture: Capture) -> None:
    pkts, ex = _demo(lo_capture)
    assert len(data_indices(pkts, ex.client_port)) > 10  # enough segments for the damage below
    _assert_exact(_read(tmp_path, pkts), ex)


@pytest.mark.parametrize("seed", range(6))
def test_reordered_duplicated_split(tmp_path: Path, lo_capture: Capture, seed: int) -> None:
    """Any mix of these gives back exactly the bytes sent, with no note."""
    pkts, ex = _demo(lo_capture)
    rng = random.Random(seed)
    server_port = lo_capture.server_port
    for _ in range(8):
        sport = rng.choice([ex.client_port, server_port])
        data = data_indices(pkts, sport)
        op = rng.choice(["reorder", "duplicate", "split"])
        if op == "reorder" and len(data) > 4:
            later = rng.randint(1, 3)
            pkts = reorder(pkts, data[rng.randrange(len(data) - later - 1)], later)
        elif op == "duplicate":
            i = rng.choice(data)
            pkts = duplicate(pkts, i, rng.randint(0, min(5, len(pkts) - i - 1)))
        else:
            i = rng.choice(data)
            if len(pkts[i].payload) > 1:
                pkts = split(pkts, i, rng.randrange(1, len(pkts[i].payload)), swap=rng.random() < 0.5)
    _assert_exact(_read(tmp_path, pkts), ex)


@pytest.mark.parametrize("where", ["after", "before"])
def test_identical_overlap(tmp_path: Path, lo_capture: Capture, where: str) -> None:
    """A retransmission straddling two segments: after them (bytes already
    delivered) or before them (bytes waiting out of order)."""
    pkts, ex = _demo(lo_capture)
    for sport in (ex.client_port, lo_capture.server_port):
        data = data_indices(pkts, sport)
        i, k = data[3], data[4]
        pkts = overlap(pkts, i, k + 1 if where == "after" else i)
    _assert_exact(_read(tmp_path, pkts), ex)


def test_conflicting_overlap_after_keeps_the_first_copy(tmp_path: Path, lo_capture: Capture) -> None:
    pkts, ex = _demo(lo_capture)
    data = data_indices(pkts, ex.client_port)
    pkts = overlap(pkts, data[5], data[6] + 1, conflicting=True)
    res = _read(tmp_path, pkts)
    conn = res.by_client_port(ex.client_port)
    assert conn.c2s.pieces == [ex.sent]  # the first copy, as sent
    assert [(n.kind, n.error) for n in res.notes] == [("conflicting_overlap", True)]
    note = res.notes[0]
    assert note.stream is not None and note.stream.key == f"{conn.number}:c2s"
    start = stream_offset(pkts, data[5]) + len(pkts[data[5]].payload) // 2
    assert f"offsets {start}.." in note.detail


def test_conflicting_overlap_before_is_kept_where_nothing_came_in_order(tmp_path: Path, lo_capture: Capture) -> None:
    """The altered copy comes first (out of order, held past the hole that
    segment i fills): where segment i then comes in order, its bytes are
    kept, as a receiver's application reads them; the altered bytes past
    its end follow on and are kept, and the genuine segment i+1 is reported
    where it conflicts with them (the first copy kept, delivered)."""
    pkts, ex = _demo(lo_capture)
    data = data_indices(pkts, ex.client_port)
    i = data[5]
    pkts = overlap(pkts, i, i, conflicting=True)
    forged, genuine = pkts[i], pkts[i + 1]
    res = _read(tmp_path, pkts)
    conn = res.by_client_port(ex.client_port)
    start = stream_offset(pkts, i)
    end_i = stream_offset(pkts, i + 1) + len(genuine.payload)
    expected = bytearray(ex.sent)
    expected[end_i : start + len(forged.payload)] = forged.payload[end_i - start :]
    assert conn.c2s.pieces == [bytes(expected)]
    assert [n.kind for n in res.notes] == ["conflicting_overlap", "conflicting_overlap"]
    assert [n.detail.rsplit("; ", 1)[1] for n in res.notes] == ["the in-order copy is kept", "the first copy is kept"]
    assert all(n.error for n in res.notes)


def _sent_twice(pkts: list[Packet], sport: int, j: int) -> bool:
    """Whether another data segment from `sport` carries any byte of segment j."""
    start = stream_offset(pkts, j)
    end = start + len(pkts[j].payload)
    return any(
        k != j and stream_offset(pkts, k) < end and start < stream_offset(pkts, k) + len(pkts[k].payload)
        for k in data_indices(pkts, sport)
    )


def _holes(pkts: list[Packet], gone: list[int]) -> list[tuple[int, int]]:
    return [(stream_offset(pkts, j), len(pkts[j].payload)) for j in gone]


@pytest.mark.parametrize("seed", range(5))
def test_dropped_segments_are_exact_gaps(tmp_path: Path, lo_capture: Capture, seed: int) -> None:
    """Missing segments (single, adjacent, the last before the FIN) are
    gaps of exactly their size, every other byte at its place."""
    pkts, ex = _demo(lo_capture)
    rng = random.Random(seed)
    gone: dict[int, list[int]] = {}
    for sport in (ex.client_port, lo_capture.server_port):
        # A FIN often rides on the last data segment: give it its own, as the
        # hole left by a lost data+FIN segment has no known end.
        pkts = separate_fin(pkts, data_indices(pkts, sport)[-1])
    for sport in (ex.client_port, lo_capture.server_port):
        # Not a segment the capture holds twice (a busy machine's loopback
        # retransmits): its other copy would fill the hole.
        data = [j for j in data_indices(pkts, sport)[1:] if not _sent_twice(pkts, sport, j)]
        picks = set(rng.sample(data, min(len(data) // 4, 4)))
        if seed % 2:
            j = data.index(rng.choice(data[:-1]))
            picks |= {data[j], data[j + 1]}  # two in a row: one hole
        if seed == 0:
            picks.add(data[-1])  # the last: bounded by the FIN
        gone[sport] = sorted(picks)
    res = _read(tmp_path, drop(pkts, [j for js in gone.values() for j in js]))
    conn = res.by_client_port(ex.client_port)
    assert conn.c2s.pieces == expected_pieces(ex.sent, _holes(pkts, gone[ex.client_port]))
    assert conn.s2c.pieces == expected_pieces(ex.answered, _holes(pkts, gone[lo_capture.server_port]))
    assert res.notes == []
    for st in (conn.c2s, conn.s2c):
        assert st.end is not None and st.end.reason == "fin"


def _without_acks(pkts: list[Packet], sport: int) -> list[Packet]:
    """The side `sport` never acknowledges: only the window or the end of
    the connection can declare holes in what it receives."""
    out = []
    for p in pkts:
        if p.sport == sport and not p.flags & dpkt.tcp.TH_SYN:
            p = p.clone()
            p.tcp.flags &= ~dpkt.tcp.TH_ACK
            p = Packet(p.time_ns, dpkt.ethernet.Ethernet(p.rebuilt()))
        out.append(p)
    return out


@pytest.mark.parametrize("window", [2000, 4 << 20])
def test_gap_declared_by_window_or_by_the_end(tmp_path: Path, lo_capture: Capture, window: int) -> None:
    pkts, ex = _demo(lo_capture)
    data = data_indices(pkts, ex.client_port)
    j = data[3]
    pkts = drop(_without_acks(pkts, lo_capture.server_port), [j])
    res = _read(tmp_path, pkts, window=window)
    conn = res.by_client_port(ex.client_port)
    full = connection(read_pcap(lo_capture.path), ex.client_port)
    assert conn.c2s.pieces == expected_pieces(ex.sent, _holes(full, [j]))
    (gap,) = [e for e in res.events if isinstance(e, StreamGap)]
    assert conn.c2s.end is not None
    if window == 2000:
        # Declared once 2000 bytes waited, long before the connection closed.
        assert gap.time_ns < conn.c2s.end.time_ns
    else:
        # Declared when the connection closed (both FINs), by the same packet.
        assert gap.time_ns == conn.c2s.end.time_ns


def test_sequence_numbers_wrap_around(tmp_path: Path, lo_capture: Capture) -> None:
    """Initial sequence numbers just below 2**32: the client's wrap in the
    middle of its stream, the server's right after the SYN; with a segment
    across the wrap reordered and another dropped."""
    pkts, ex = _demo(lo_capture)
    pkts = rebase(pkts, ex.client_port, (1 << 32) - 5000)
    pkts = rebase(pkts, lo_capture.server_port, MASK)
    data = data_indices(pkts, ex.client_port)
    across = next(j for j in data if stream_offset(pkts, j) + len(pkts[j].payload) > 4999)
    assert stream_offset(pkts, across) <= 4999  # its bytes straddle the wrap
    assert pkts[across].seq + len(pkts[across].payload) > MASK
    _assert_exact(_read(tmp_path, reorder(pkts, across, 2)), ex)
    _assert_exact(_read(tmp_path, split(pkts, across, 4999 - stream_offset(pkts, across) + 1, swap=True)), ex)
    after = data[data.index(across) + 2]
    res = _read(tmp_path, drop(pkts, [after]))
    conn = res.by_client_port(ex.client_port)
    assert conn.c2s.pieces == expected_pieces(ex.sent, _holes(pkts, [after]))
    assert isn(pkts, ex.client_port) == (1 << 32) - 5000


@pytest.mark.parametrize("with_ports", [True, False])
def test_capture_starting_mid_connection(tmp_path: Path, lo_capture: Capture, with_ports: bool) -> None:
    """No handshake and the first segments missing: the first bytes seen
    start each stream (syn_seen False)."""
    pkts, ex = _demo(lo_capture)
    cut = data_indices(pkts, ex.client_port)[3]
    late = pkts[cut:]
    first_c2s = next(j for j in data_indices(pkts, ex.client_port) if j >= cut)
    first_s2c = next(j for j in data_indices(pkts, lo_capture.server_port) if j >= cut)
    options: dict[str, object] = {"ports": frozenset({lo_capture.server_port})} if with_ports else {}
    res = _read(tmp_path, late, **options)
    assert len(res.connections) == 1
    conn = res.connections[1]
    # Both ports are ephemeral here (the test server bound port 0), so with
    # no --port the side first seen sending is the client: the client, as
    # the capture starts on one of its segments.
    assert conn.client_port == ex.client_port
    assert conn.c2s.pieces == [ex.sent[stream_offset(pkts, first_c2s) :]]
    assert conn.s2c.pieces == [ex.answered[stream_offset(pkts, first_s2c) :]]
    for st in (conn.c2s, conn.s2c):
        assert st.start is not None and not st.start.syn_seen
        assert st.end is not None and st.end.reason == "fin"
    assert res.notes == []


def test_first_sender_is_the_client_without_a_handshake(tmp_path: Path, lo_capture: Capture) -> None:
    """Starting on a server segment: with --port the server is known; without,
    the side first seen sending is taken for the client."""
    pkts, ex = _demo(lo_capture)
    cut = data_indices(pkts, lo_capture.server_port)[2]
    late = pkts[cut:]
    res = _read(tmp_path, late)
    assert res.connections[1].client_port == lo_capture.server_port
    res = _read(tmp_path, late, ports=frozenset({lo_capture.server_port}))
    assert res.connections[1].client_port == ex.client_port


def test_rst_declares_the_holes(tmp_path: Path, lo_capture: Capture) -> None:
    """The client resets mid-stream, a segment before the reset missing and
    never acknowledged: the hole is declared at the RST, exactly; nothing
    after the RST counts."""
    pkts, ex = _demo(lo_capture)
    data = data_indices(pkts, ex.client_port)
    lost, last = data[4], data[7]
    kept = [p for j, p in enumerate(pkts[: last + 1]) if j != lost and not (j > lost and p.sport != ex.client_port)]
    rst = pkts[last].clone()
    rst.tcp.flags = dpkt.tcp.TH_RST
    rst.tcp.seq = (pkts[last].seq + len(pkts[last].payload)) & MASK
    rst.tcp.data = b""
    res = _read(tmp_path, [*kept, Packet(rst.time_ns, dpkt.ethernet.Ethernet(rst.rebuilt())), *pkts[last + 1 :]])
    assert len(res.connections) == 1  # the packets after the RST are its stragglers, not a new connection
    conn = res.connections[1]
    end = stream_offset(pkts, last) + len(pkts[last].payload)
    assert conn.c2s.pieces == expected_pieces(ex.sent[:end], _holes(pkts, [lost]))
    assert conn.c2s.end is not None and conn.c2s.end.reason == "rst"
    assert conn.s2c.end is not None and conn.s2c.end.reason == "rst"


@pytest.mark.parametrize("retransmit", [False, True], ids=["as-captured", "old-bytes-again"])
def test_eviction_keeps_at_most_max_flows_open(tmp_path: Path, lo_capture: Capture, retransmit: bool) -> None:
    """Three interleaved connections, room for two: the least recently
    active is evicted with a note; its later packets start it again, mid-stream;
    no byte is lost or repeated on the way, even where what comes back first
    is a retransmission of bytes delivered before the eviction (as on a busy
    machine's loopback)."""
    # Interleaved one packet each in turn, so that all three are open at once
    # (the real connections may not have overlapped in time).
    per_conn = [connection(read_pcap(lo_capture.path), ex.client_port) for ex in lo_capture.exchanges]
    if retransmit:
        for c, ex in zip(per_conn, lo_capture.exchanges, strict=True):
            data = data_indices(c, ex.client_port)
            if len(data) > 3:  # a data segment again, after the next (by then evicted: three turns later)
                c.insert(data[2] + 1, c[data[1]])
    t0 = per_conn[0][0].time_ns
    pkts = []
    for k in range(max(len(c) for c in per_conn)):
        for c in per_conn:
            if k < len(c):
                pkts.append(Packet(t0 + len(pkts) * 1000, c[k].eth))
    # --port names the server: a connection resumed on a server segment keeps its client.
    res = read_capture(write_pcap(tmp_path / "all.pcap", pkts), max_flows=2, ports=frozenset({lo_capture.server_port}))
    evictions = [n for n in res.notes if n.kind == "evicted"]
    assert evictions and not [n for n in res.notes if n.kind != "evicted"]
    assert not any(n.error for n in evictions)
    open_now = 0
    for ev in res.events:
        if isinstance(ev, StreamEnd) and ev.stream is not None and ev.stream.from_client:
            open_now -= 1
        elif type(ev).__name__ == "StreamStart" and ev.stream is not None and ev.stream.from_client:  # type: ignore[union-attr]
            open_now += 1
            assert open_now <= 2
    for note in evictions:
        assert note.stream is not None
        conn = res.connections[note.stream.connection]
        # One direction may have ended with its FIN before; not both (it would be closed, not open).
        assert "evicted" in (conn.c2s.end.reason, conn.s2c.end.reason)  # type: ignore[union-attr]
    for ex in lo_capture.exchanges:
        parts = [c for c in res.connections.values() if c.client_port == ex.client_port]
        assert b"".join(bytes(c.c2s.data) for c in parts) == ex.sent
        assert b"".join(bytes(c.s2c.data) for c in parts) == ex.answered
        assert parts[0].c2s.start is not None and parts[0].c2s.start.syn_seen
    resumed = [c for c in res.connections.values() if c.c2s.start is not None and not c.c2s.start.syn_seen]
    assert resumed  # evicted connections came back, mid-stream
