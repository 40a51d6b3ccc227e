"""Real tcpdump captures of real sockets on the loopback interface, read
back: each direction must be exactly what its socket sent."""

from __future__ import annotations

import io
import socket
import struct
import threading
import time
from pathlib import Path

import dpkt  # type: ignore[import-untyped, unused-ignore]
import pytest
from livecap import (
    DEMO,
    Exchange,
    assert_exchanges,
    capture_conversation,
    closed,
    converse,
    listener,
    read_capture,
    tcp_packets,
    tcpdump,
    tcpdump_pipe,
)

from ripple_cli.capture.events import CaptureEvent, StreamData, StreamEnd
from ripple_cli.capture.pcapfile import read_pcap
from ripple_cli.capture.reader import CaptureOptions, capture_events
from tests.capture.capkit import Capture, payloads


def test_lo_ethernet_pcap(lo_capture: Capture) -> None:
    res = read_capture(lo_capture.path)
    assert_exchanges(res, lo_capture.exchanges)
    for conn in res.connections.values():
        assert conn.server_port == lo_capture.server_port
    assert sorted(res.connections) == [1, 2, 3]


def test_any_interface_linux_cooked_v2(tmp_path: Path) -> None:
    path = tmp_path / "any.pcap"
    exchanges = capture_conversation(path, payloads(2, seed=3), seed=3, iface="any")
    with path.open("rb") as f:
        first = next(read_pcap(f))
    assert isinstance(first, tuple) and first[1] == 276  # what `tcpdump -i any` writes
    assert_exchanges(read_capture(path), exchanges)


def test_any_interface_linux_cooked_v1(tmp_path: Path) -> None:
    path = tmp_path / "any-sll.pcap"
    exchanges = capture_conversation(path, payloads(2, seed=4), seed=4, iface="any", extra=["-y", "LINUX_SLL"])
    with path.open("rb") as f:
        first = next(read_pcap(f))
    assert isinstance(first, tuple) and first[1] == 113
    assert_exchanges(read_capture(path), exchanges)


def test_nanosecond_pcap(tmp_path: Path) -> None:
    path = tmp_path / "nano.pcap"
    exchanges = capture_conversation(path, payloads(1, seed=5), seed=5, extra=["--time-stamp-precision=nano"])
    assert path.read_bytes()[:4] == bytes.fromhex("4d3cb2a1")
    res = read_capture(path)
    assert_exchanges(res, exchanges)
    times = [e.time_ns for e in res.events if isinstance(e, StreamData)]
    # Each is a packet's own timestamp to the nanosecond (read here from the
    # record headers).  Not asserted sorted: two CPUs stamp the two
    # directions, and a file may hold them a few ns out of order.
    raw = path.read_bytes()
    stamps, at = set(), 24
    while at < len(raw):
        sec, nsec, incl, _orig = struct.unpack_from("<IIII", raw, at)
        stamps.add(sec * 1_000_000_000 + nsec)
        at += 16 + incl
    assert set(times) <= stamps
    assert any(t % 1000 for t in times), "nanoseconds were rounded away"
    assert abs(times[0] / 1e9 - time.time()) < 60


def test_ipv6_loopback(tmp_path: Path) -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 in this kernel")
    path = tmp_path / "v6.pcap"
    try:
        listener("::1").close()
    except OSError as e:
        pytest.skip(f"no ::1 here: {e}")
    exchanges = capture_conversation(path, payloads(2, seed=6), seed=6, host="::1")
    res = read_capture(path)
    assert_exchanges(res, exchanges)
    conn = res.connections[1]
    assert conn.c2s.start is not None and conn.c2s.start.stream is not None
    assert conn.c2s.start.stream.client.host == "::1"
    assert conn.c2s.start.stream.label.startswith(f"1 [::1]:{conn.client_port} -> [::1]:")


def test_port_filter(tmp_path: Path) -> None:
    """Two servers in one capture; --port keeps the connections of one."""
    path = tmp_path / "two.pcap"
    ex_a: list[Exchange] = []
    ex_b: list[Exchange] = []
    until = closed(lambda: [e.client_port for e in ex_a + ex_b])
    with listener() as a, listener() as b:
        pa, pb = a.getsockname()[1], b.getsockname()[1]
        with tcpdump(path, f"tcp port {pa} or tcp port {pb}", until=until):
            ex_a += converse(a, payloads(2, seed=8), seed=8)
            ex_b += converse(b, payloads(1, seed=9), seed=9)
    assert_exchanges(read_capture(path), ex_a + ex_b)
    only_b = read_capture(path, ports=frozenset({pb}))
    assert_exchanges(only_b, ex_b)
    assert list(only_b.connections) == [1]  # numbered among the connections kept


def _pcapng_from(captures: list[tuple[Path, int]], tsresol: list[int]) -> bytes:
    """A pcapng whose interface k holds capture k's packets, with
    if_tsresol tsresol[k], in one section (little-endian, as dpkt writes)."""
    idbs = []
    for (_path, linktype), res in zip(captures, tsresol, strict=True):
        opts = [
            dpkt.pcapng.PcapngOptionLE(code=dpkt.pcapng.PCAPNG_OPT_IF_TSRESOL, data=bytes([res])),
            dpkt.pcapng.PcapngOptionLE(code=dpkt.pcapng.PCAPNG_OPT_ENDOFOPT),
        ]
        idbs.append(dpkt.pcapng.InterfaceDescriptionBlockLE(linktype=linktype, snaplen=262144, opts=opts))
    out = io.BytesIO()
    writer = dpkt.pcapng.Writer(out, idb=idbs)
    records = []
    for k, ((path, _lt), res) in enumerate(zip(captures, tsresol, strict=True)):
        with path.open("rb") as f:
            for t, _lt2, frame in (r for r in read_pcap(f) if isinstance(r, tuple)):
                records.append((t, k, res, frame))
    records.sort(key=lambda r: r[0])
    for t, k, res, frame in records:
        units = (t << (res & 0x7F)) // 1_000_000_000 if res & 0x80 else t // 10 ** (9 - res)
        epb = dpkt.pcapng.EnhancedPacketBlockLE(
            iface_id=k, ts_high=units >> 32, ts_low=units & 0xFFFFFFFF, caplen=len(frame), pkt_len=len(frame)
        )
        epb.pkt_data = frame
        writer.writepkt(epb)
    return out.getvalue()


def test_pcapng_of_real_captures(tmp_path: Path, lo_capture: Capture) -> None:
    """tcpdump 4.99 writes pcap only: the same packets in a pcapng written
    with dpkt.pcapng.Writer (one interface), then two captures of different
    link types as two interfaces with different resolutions, then that
    again as a second, big-endian section."""
    one = _pcapng_from([(lo_capture.path, 1)], [6])
    assert_exchanges(read_capture(io.BytesIO(one)), lo_capture.exchanges)

    any_path = tmp_path / "any.pcap"
    any_ex = capture_conversation(any_path, payloads(1, seed=11), seed=11, iface="any")
    two = _pcapng_from([(lo_capture.path, 1), (any_path, 276)], [6, 9])
    res = read_capture(io.BytesIO(two))
    assert_exchanges(res, lo_capture.exchanges + any_ex)

    # The same again with if_tsresol 2^-20 s for the second interface,
    # then a big-endian section of the lo packets alone.
    mixed = _pcapng_from([(lo_capture.path, 1), (any_path, 276)], [9, 0x80 | 20])
    be = _big_endian_section(lo_capture.path)
    res = read_capture(io.BytesIO(mixed + be))
    # The second section's lo connections are new connections (a new SYN
    # after their FIN): six lo connections, one on any.
    assert len(res.connections) == 7
    lo_ports = {e.client_port for e in lo_capture.exchanges}
    twice = [c for c in res.connections.values() if c.client_port in lo_ports]
    assert len(twice) == 6
    for conn in twice:
        ex = next(e for e in lo_capture.exchanges if e.client_port == conn.client_port)
        assert bytes(conn.c2s.data) == ex.sent and bytes(conn.s2c.data) == ex.answered
    assert not [n for n in res.notes if n.error]


def _big_endian_section(path: Path) -> bytes:
    """One pcapng section in big-endian byte order (dpkt's writer only writes
    the machine's order; its big-endian block classes do the rest)."""
    shb = dpkt.pcapng.SectionHeaderBlock()
    opts = [
        dpkt.pcapng.PcapngOption(code=dpkt.pcapng.PCAPNG_OPT_IF_TSRESOL, data=b"\x03"),  # milliseconds
        dpkt.pcapng.PcapngOption(code=dpkt.pcapng.PCAPNG_OPT_ENDOFOPT),
    ]
    parts = [bytes(shb), bytes(dpkt.pcapng.InterfaceDescriptionBlock(linktype=1, snaplen=262144, opts=opts))]
    last = 0
    with path.open("rb") as f:
        for rec in read_pcap(f):
            assert isinstance(rec, tuple)
            t, _lt, frame = rec
            # Later than the first section, one millisecond apart, so that
            # the closed connections' linger time has passed.
            last = max(last + 1, t // 1_000_000 + 10 * 60 * 1000)
            epb = dpkt.pcapng.EnhancedPacketBlock(
                iface_id=0, ts_high=last >> 32, ts_low=last & 0xFFFFFFFF, caplen=len(frame), pkt_len=len(frame)
            )
            epb.pkt_data = frame
            parts.append(bytes(epb))
    return b"".join(parts)


def test_live_pipe_from_tcpdump() -> None:
    """`tcpdump -U -w - | ripple ...`: a connection's bytes come out while
    tcpdump is still capturing, long before its output ends."""
    with listener() as srv:
        port = srv.getsockname()[1]
        with tcpdump_pipe(f"tcp port {port}") as proc:
            assert proc.stdout is not None
            events: list[tuple[float, CaptureEvent]] = []
            got_end = threading.Event()

            def consume() -> None:
                assert proc.stdout is not None
                for ev in capture_events(proc.stdout, "<stdin>", CaptureOptions()):
                    events.append((time.monotonic(), ev))
                    if isinstance(ev, StreamEnd) and ev.stream is not None and not ev.stream.from_client:
                        got_end.set()

            reader = threading.Thread(target=consume)
            reader.start()
            exchanges = converse(srv, [(DEMO, b"ack" * 300)], seed=12)
            assert got_end.wait(10), "the connection's end did not come through the pipe while tcpdump ran"
            still_running = proc.poll() is None
            stopped_at = time.monotonic()
        reader.join(10)
    assert still_running
    data = bytearray()
    for at, ev in events:
        if isinstance(ev, StreamData) and ev.stream is not None and ev.stream.from_client:
            assert at < stopped_at
            data += ev.data
    assert bytes(data) == exchanges[0].sent


def test_many_short_connections(tmp_path: Path) -> None:
    """Twenty connections at once, small writes: every one apart and whole."""
    path = tmp_path / "many.pcap"
    exchanges = capture_conversation(path, payloads(20, seed=13), seed=13, max_write=400)
    res = read_capture(path)
    assert_exchanges(res, exchanges)
    assert sorted(res.connections) == list(range(1, 21))


def _two_resets(path: Path) -> bool:
    return sum(1 for _s, _d, flags in tcp_packets(path) if flags & dpkt.tcp.TH_RST) >= 2


def test_real_rst_and_port_reuse(tmp_path: Path) -> None:
    """A client aborts (SO_LINGER 0: RST), then connects again from the same
    port: the second SYN on those ports is a new connection."""
    path = tmp_path / "rst.pcap"
    with listener() as srv:
        host, port = srv.getsockname()[:2]
        with tcpdump(path, f"tcp port {port}", until=_two_resets):
            received: list[bytes] = []

            def serve() -> None:
                for _ in range(2):
                    conn, _addr = srv.accept()
                    with conn:
                        buf = bytearray()
                        while True:
                            try:
                                chunk = conn.recv(65536)
                            except ConnectionResetError:
                                break
                            if not chunk:
                                break
                            buf += chunk
                            conn.sendall(b"ok")
                        received.append(bytes(buf))

            server = threading.Thread(target=serve)
            server.start()
            client_port = 0
            for k in range(2):
                c = socket.socket()
                c.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                c.bind(("127.0.0.1", client_port))
                c.connect((host, port))
                client_port = c.getsockname()[1]
                c.sendall(DEMO[: 1000 * (k + 1)])
                assert c.recv(2) == b"ok"
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                c.close()
                time.sleep(0.05)
            server.join(10)
    res = read_capture(path)
    assert sorted(res.connections) == [1, 2]
    for number, conn in res.connections.items():
        assert conn.client_port == client_port
        assert conn.c2s.start is not None and conn.c2s.start.syn_seen
        assert bytes(conn.c2s.data) == DEMO[: 1000 * number] == received[number - 1]
        assert conn.s2c.data.startswith(b"ok")
        assert conn.c2s.end is not None and conn.c2s.end.reason == "rst"
        assert conn.s2c.end is not None and conn.s2c.end.reason == "rst"
    assert not res.notes
