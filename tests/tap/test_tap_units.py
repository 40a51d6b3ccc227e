"""The tap's parts on their own: the pcapng writer and its rotation, the TCP
framing of proxied bytes, the queues, the relay's records, the counters."""

from __future__ import annotations

import io
import random
from pathlib import Path

import dpkt  # type: ignore[import-untyped, unused-ignore]
import pytest

from ripple_cli.capture.events import (
    CaptureEvent,
    CaptureNote,
    Endpoint,
    StreamData,
    StreamEnd,
    StreamGap,
    StreamId,
    StreamStart,
)
from ripple_cli.capture.pcapfile import read_pcapng
from ripple_cli.capture.pcapng_writer import (
    LINKTYPE_ETHERNET,
    PcapngWriter,
    RotatingWriter,
    Rotation,
    parse_rotation,
    rotated_name,
)
from ripple_cli.capture.reader import CaptureOptions, capture_events
from ripple_cli.codec.envelope import Frame, build_envelope
from ripple_cli.codec.fast import speedups
from ripple_cli.codec.messages import DELTA, FIXED_FINGERPRINTS, HEARTBEAT, DeltaMsg, Heartbeat, write_payload
from ripple_cli.codec.problems import Problem
from ripple_cli.flow.demux import Demux
from ripple_cli.flow.pipeline import BaseSink, pump
from ripple_cli.flow.protocol_choice import ProtocolChoice
from ripple_cli.protocols.base import DissectOptions, LaneKind
from ripple_cli.protocols.item import Progress, Run
from ripple_cli.protocols.origin import Origin
from ripple_cli.protocols.ripple.message import Message
from ripple_cli.tap.live import by_type_text, human_bytes, human_duration
from ripple_cli.tap.proxy import HostPort, parse_hostport
from ripple_cli.tap.queues import DropQueue, End, EventQueue
from ripple_cli.tap.records import DATA, END, GAP, GAP_SIZE, OPEN, pack, pack_json, read_records
from ripple_cli.tap.sniff import bpf_expression
from ripple_cli.tap.stats import KEEP_CLOSED, TapStats
from ripple_cli.tap.synth import MAX_SEGMENT, TcpSynthesizer, checksum

CLIENT = Endpoint("10.0.0.1", 50000)
SERVER = Endpoint("10.0.0.2", 9000)


def _sid(conn: int, c2s: bool, client: Endpoint = CLIENT, server: Endpoint = SERVER) -> StreamId:
    return StreamId(conn, client, server, c2s)


# ---------------------------------------------------------------- pcapng


def test_pcapng_reads_back_with_ripple_and_dpkt_to_the_nanosecond(tmp_path: Path) -> None:
    path = tmp_path / "x.pcapng"
    frames = [(1_718_900_000_123_456_789 + i * 1001, bytes([i]) * (i * 7 + 1)) for i in range(20)]
    with path.open("wb") as f:
        w = PcapngWriter(f, LINKTYPE_ETHERNET, snaplen=100, if_name="lo")
        for t, data in frames:
            w.write(t, data)
    assert w.size == path.stat().st_size and w.packets == 20
    with path.open("rb") as f:
        back = list(read_pcapng(f))
    # Cut to the snap length, which a note at the end says; every nanosecond kept.
    assert back[:-1] == [(t, LINKTYPE_ETHERNET, data[:100]) for t, data in frames]
    assert back[-1] == CaptureNote(
        None,
        frames[-1][0],
        "snap_length",
        "5 packets cut short when captured (at most 100 bytes kept of each): "
        "what they lost is missing from their streams (capture with tcpdump -s 0)",
    )
    with path.open("rb") as f:
        reader = dpkt.pcapng.Reader(f)
        got = list(reader)
    assert [bytes(b) for _t, b in got] == [d[:100] for _t, d in frames]
    assert reader.datalink() == LINKTYPE_ETHERNET


def test_rotation_by_time_keeps_each_file_to_its_span(tmp_path: Path) -> None:
    w = RotatingWriter(str(tmp_path / "t.pcapng"), LINKTYPE_ETHERNET, Rotation(max_seconds=1.0))
    base = 10**18
    for k in range(10):
        w.write(base + k * 300_000_000, b"\0" * 60)  # a packet every 0.3 s
    w.close()
    assert list(w.kept) == [rotated_name(str(tmp_path / "t.pcapng"), i) for i in range(3)]
    counts = []
    for name in w.kept:
        with open(name, "rb") as f:
            times = [item[0] for item in read_pcapng(f) if isinstance(item, tuple)]
        assert times[-1] - times[0] < 1_000_000_000
        counts.append(len(times))
    assert counts == [4, 4, 2]


def test_rotation_by_size_and_files(tmp_path: Path) -> None:
    path = str(tmp_path / "s.pcapng")
    w = RotatingWriter(path, LINKTYPE_ETHERNET, Rotation(max_bytes=1000, max_files=2))
    w.open_first()
    for _ in range(30):
        w.write(1, b"x" * 100)
    w.write(2, b"y" * 5000)  # bigger than a file: alone in its own
    w.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"s.pcapng.{w.index - 1}", f"s.pcapng.{w.index}"]
    sizes = [Path(n).stat().st_size for n in w.kept]
    assert sizes[0] <= 1000 and sizes[1] > 5000
    assert w.packets == 31


@pytest.mark.parametrize(
    ("specs", "rotation"),
    [
        ((), Rotation()),
        (("size:2.5",), Rotation(max_bytes=2_500_000)),
        (("time:60", "files:4"), Rotation(max_seconds=60.0, max_files=4)),
        (("SIZE:1", "time:0.5"), Rotation(max_bytes=1_000_000, max_seconds=0.5)),
    ],
)
def test_parse_rotation(specs: tuple[str, ...], rotation: Rotation) -> None:
    assert parse_rotation(specs) == rotation


@pytest.mark.parametrize("spec", ["size", "size:", "size:-1", "time:0", "files:1.5", "files:0", "count:3", "files:2"])
def test_parse_rotation_refuses(spec: str) -> None:
    with pytest.raises(ValueError):
        parse_rotation((spec,))


# ---------------------------------------------------------------- synthesized TCP


def _capture(tmp: Path, events: list[CaptureEvent], isn: int = 0xFFFFFF00) -> tuple[Path, list[tuple[int, bytes]]]:
    synth = TcpSynthesizer(isn=lambda: isn)  # near 2**32: the sequence numbers wrap mid-stream
    frames = [f for ev in events for f in synth.frames(ev)]
    buf = io.BytesIO()
    w = PcapngWriter(buf, LINKTYPE_ETHERNET)
    for t, frame in frames:
        w.write(t, frame)
    path = tmp / "synth.pcapng"
    path.write_bytes(buf.getvalue())
    return path, frames


def _read(path: Path) -> list[CaptureEvent]:
    with path.open("rb") as f:
        return list(capture_events(f, "synth", CaptureOptions()))


def test_synthesized_connection_reads_back_as_the_same_streams(tmp_path: Path) -> None:
    rng = random.Random(1)
    c2s, s2c = _sid(1, True), _sid(1, False)
    up = [rng.randbytes(rng.randrange(1, 200_000)) for _ in range(6)]
    down = [rng.randbytes(rng.randrange(1, 90_000)) for _ in range(4)]
    events: list[CaptureEvent] = [StreamStart(c2s, 1000, True), StreamStart(s2c, 1000, True)]
    t = 2000
    for i in range(6):
        events.append(StreamData(c2s, up[i], t))
        if i < 4:
            events.append(StreamData(s2c, down[i], t + 1))
        t += 1000
    events += [StreamEnd(c2s, t, "fin"), StreamEnd(s2c, t + 1, "fin")]
    path, frames = _capture(tmp_path, events)
    for _t, frame in frames:
        eth = dpkt.ethernet.Ethernet(frame)
        assert len(eth.data.data.data) <= MAX_SEGMENT
        # dpkt recomputes both checksums when they are zeroed: ours must match.
        ip = dpkt.ip.IP(bytes(eth.data))
        want_ip, want_tcp = ip.sum, ip.data.sum
        ip.sum = 0
        ip.data.sum = 0
        again = dpkt.ip.IP(bytes(ip))
        assert (again.sum, again.data.sum) == (want_ip, want_tcp)
    back = _read(path)
    assert not [e for e in back if isinstance(e, CaptureNote | StreamGap)]
    got = {True: b"", False: b""}
    for e in back:
        if isinstance(e, StreamData):
            assert e.stream is not None and (e.stream.client, e.stream.server) == (CLIENT, SERVER)
            got[e.stream.from_client] += e.data
    assert got[True] == b"".join(up) and got[False] == b"".join(down)
    starts = [e for e in back if isinstance(e, StreamStart)]
    assert all(s.syn_seen for s in starts) and len(starts) == 2
    assert [e.reason for e in back if isinstance(e, StreamEnd)] == ["fin", "fin"]


def test_a_gap_is_a_hole_of_its_size_and_a_reset_ends_both(tmp_path: Path) -> None:
    c2s, s2c = _sid(7, True), _sid(7, False)
    events: list[CaptureEvent] = [
        StreamStart(c2s, 1, True),
        StreamStart(s2c, 1, True),
        StreamData(c2s, b"a" * 1000, 2),
        StreamGap(c2s, 5000, 3),  # the tap dropped these
        StreamData(c2s, b"b" * 1000, 4),
        StreamData(s2c, b"ok", 5),  # acknowledges past the hole: the reader declares it at once
        StreamEnd(s2c, 6, "rst"),
        StreamEnd(c2s, 6, "rst"),
    ]
    path, frames = _capture(tmp_path, events)
    assert sum(1 for _t, f in frames if dpkt.ethernet.Ethernet(f).data.data.flags & dpkt.tcp.TH_RST) == 1
    back = _read(path)
    c2s_events = [e for e in back if e.stream is not None and e.stream.from_client and not isinstance(e, StreamStart)]
    assert [type(e).__name__ for e in c2s_events] == ["StreamData", "StreamGap", "StreamData", "StreamEnd"]
    assert isinstance(c2s_events[1], StreamGap) and c2s_events[1].size == 5000
    assert {e.reason for e in back if isinstance(e, StreamEnd)} == {"rst"}


def test_ipv6_and_mixed_families() -> None:
    client, server = Endpoint("::1", 40000), Endpoint("127.0.0.1", 9000)  # mixed: IPv4 goes IPv4-mapped
    c2s = StreamId(1, client, server, True)
    synth = TcpSynthesizer()
    frames = synth.frames(StreamStart(c2s, 1, True)) + synth.frames(StreamData(c2s, b"hello", 2))
    ip6 = dpkt.ethernet.Ethernet(frames[-1][1]).data
    assert isinstance(ip6, dpkt.ip6.IP6)
    assert ip6.dst == bytes(10) + b"\xff\xff" + bytes([127, 0, 0, 1])
    assert ip6.data.data == b"hello"


def test_checksum_matches_rfc1071() -> None:
    # The example of RFC 1071, section 3: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2.
    assert checksum(bytes.fromhex("0001f203f4f5f6f7")) == 0xFFFF - 0xDDF2
    assert checksum(b"\x01") == 0xFFFF - 0x0100  # an odd length is padded with a zero
    assert checksum(b"\xff\xff", b"\xff\xff") == 0  # never -0: 0xffff sums stay 0xffff


# ---------------------------------------------------------------- queues


def test_event_queue_turns_what_does_not_fit_into_gaps_in_order() -> None:
    q = EventQueue(max_bytes=100)
    a, b = _sid(1, True), _sid(1, False)
    q.put_event(StreamStart(a, 0, True))
    q.put_event(StreamData(a, b"x" * 60, 1))
    q.put_event(StreamData(a, b"y" * 60, 2))  # does not fit: dropped
    q.put_event(StreamData(b, b"z" * 30, 3))  # fits
    q.put_event(StreamData(a, b"w" * 50, 4))  # does not fit either
    assert q.dropped_bytes == 110
    assert isinstance(q.get(0), StreamStart)
    assert isinstance(q.get(0), StreamData)  # the x's: room again
    q.put_event(StreamData(a, b"v" * 10, 5))  # fits: the gap goes first
    q.put_event(StreamEnd(b, 6, "fin"))
    q.close()
    rest = []
    while not isinstance(item := q.get(0), End):
        rest.append(item)
    assert rest == [
        StreamData(b, b"z" * 30, 3),
        StreamGap(a, 110, 2),
        StreamData(a, b"v" * 10, 5),
        StreamEnd(b, 6, "fin"),
    ]


def test_event_queue_close_declares_pending_gaps() -> None:
    q = EventQueue(max_bytes=10)
    a = _sid(1, True)
    q.put_event(StreamData(a, b"x" * 10, 1))
    q.put_event(StreamData(a, b"y" * 10, 2))
    q.close()
    assert q.get(0) == StreamData(a, b"x" * 10, 1)
    assert q.get(0) == StreamGap(a, 10, 2)
    assert isinstance(q.get(0), End)


def test_drop_queue_bounds_items_and_bytes_and_never_blocks() -> None:
    q: DropQueue[int] = DropQueue(max_items=3, max_bytes=100)
    assert q.put(1, 200)  # an empty queue takes anything
    assert not q.put(2, 1)
    assert q.get(0) == 1
    assert [q.put(i, 10) for i in range(4)] == [True, True, True, False]
    assert (q.refused, q.refused_bytes, len(q)) == (2, 11, 3)
    assert q.get(0.01) == 0
    assert q.get(0) == 1 and q.get(0) == 2
    assert q.get(0.01) is None  # nothing within the timeout


def test_drop_queue_gives_batches_in_order_and_frees_their_bytes() -> None:
    q: DropQueue[int] = DropQueue(max_items=10, max_bytes=30)
    assert [q.put(i, 10) for i in range(4)] == [True, True, True, False]
    assert q.get_many(2, 0) == [0, 1]
    assert [q.put(i, 10) for i in (4, 5, 6)] == [True, True, False]  # 20 bytes freed, not more
    q.close()
    batch = q.get_many(256, 0)
    assert batch is not None and batch[:-1] == [2, 4, 5] and isinstance(batch[-1], End)
    assert q.get_many(256, 0.01) is None and len(q) == 0
    for i in range(3):
        q.put(i, 10)
    assert q.get_many(256, 0, most_bytes=15) == [0, 1]  # past the bound by one item at most


# ---------------------------------------------------------------- records, parsing


def test_records_round_trip_and_a_cut_record_ends_the_stream() -> None:
    data = (
        pack_json(OPEN, {"client": ["1.2.3.4", 5], "server": ["::1", 6]}, conn=1, time_ns=7)
        + pack(DATA, 1, True, 8, b"payload")
        + pack(GAP, 1, False, 9, GAP_SIZE.pack(12345))
        + pack(END, 1, True, 10, b"fin")
    )
    recs = list(read_records(io.BytesIO(data)))
    assert [(r.type, r.conn, r.c2s, r.time_ns) for r in recs] == [
        (OPEN, 1, False, 7),
        (DATA, 1, True, 8),
        (GAP, 1, False, 9),
        (END, 1, True, 10),
    ]
    assert recs[0].json() == {"client": ["1.2.3.4", 5], "server": ["::1", 6]}
    assert GAP_SIZE.unpack(recs[2].payload) == (12345,)
    assert len(list(read_records(io.BytesIO(data[:-2])))) == 3


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("127.0.0.1:9000", HostPort("127.0.0.1", 9000)),
        ("[::1]:9000", HostPort("::1", 9000)),
        ("localhost:0", HostPort("localhost", 0)),
        (":9000", HostPort(None, 9000)),
    ],
)
def test_parse_hostport(text: str, parsed: HostPort) -> None:
    assert parse_hostport(text) == parsed
    assert str(parsed) == (text if parsed.host else "*:9000")


@pytest.mark.parametrize("text", ["9000", "host:", "host:port", "::1:9000", "h:70000"])
def test_parse_hostport_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_hostport(text)


def test_bpf_expression() -> None:
    assert bpf_expression(None, frozenset()) == "tcp"
    assert bpf_expression("host 10.0.0.2", frozenset()) == "host 10.0.0.2"
    assert bpf_expression(None, frozenset({19400})) == "tcp port 19400"
    assert bpf_expression("vlan", frozenset({9001, 9000})) == "(vlan) and (tcp port 9000 or tcp port 9001)"


# ---------------------------------------------------------------- counters, and how they read


def _progress_stream() -> tuple[bytes, Progress]:
    """A worker's stream: Deltas of "vwap" 1..300 but 53 and 54, 120 twice,
    one envelope seq out of order, heartbeats of loads 0.1..., watermarks
    on every third Delta; and the Progress it must leave."""
    out, seq = bytearray(), 0
    numbers = [n for n in range(1, 301) if n not in (53, 54)]
    numbers.insert(numbers.index(121), 120)
    for i, n in enumerate(numbers):
        seq += 1 if i != 200 else -3
        wm = 1_000_000_000 + i if i % 3 == 0 else None
        out += build_envelope(DELTA, seq, 7, b"x/v1", write_payload(DeltaMsg(b"vwap", b"k", b"", n, wm)))
        if i % 50 == 7:
            seq += 1
            out += build_envelope(
                HEARTBEAT, seq, 7, FIXED_FINGERPRINTS[HEARTBEAT], write_payload(Heartbeat(b"w", 1, i / 1000))
            )
    last_wm = max(i for i in range(len(numbers)) if i % 3 == 0)
    want = Progress(seq, ("vwap", 300), 1_000_000_000 + last_wm, 0.257, 0, 0, 2, 1, 1)
    return bytes(out), want


@pytest.mark.parametrize("lane", [None, LaneKind.TABLE, LaneKind.SEXP, LaneKind.SELECT])
@pytest.mark.parametrize("chunk", [1, 57, 1000, 1 << 20])
def test_progress_is_the_same_whether_the_lane_or_python_decodes(lane: LaneKind | None, chunk: int) -> None:
    """The live view's counters (StreamDissector.progress) come from the
    Python decoder's messages and the fast lane's runs alike, split
    anywhere; the lane really ran when it was asked for."""
    data, want = _progress_stream()
    options = DissectOptions(lane=lane, progress=True)
    demux = Demux("t", ProtocolChoice(protocol="ripple", options=options))
    a = _sid(1, True)
    events: list[CaptureEvent] = [StreamStart(a, 1, True)]
    events += [StreamData(a, data[i : i + chunk], 2) for i in range(0, len(data), chunk)]
    events.append(StreamEnd(a, 3, "fin"))

    class Count(BaseSink):
        takes_runs = True
        runs = problems = 0

        def run(self, origin: Origin, run: Run) -> None:
            self.runs += 1
            self.problems += run.problem_count

        def problem(self, origin: Origin, problem: Problem) -> None:
            self.problems += 1

    sink = Count()
    pump(events, demux, sink)
    got = demux.streams[a].progress
    assert got is not None
    # heartbeats and watermarks only grow (a run counts its several once)
    assert (got.heartbeats > 0, got.watermarks > 0) == (True, True)
    got.heartbeats = got.watermarks = 0
    assert got == want
    assert sink.problems == 0  # without --rules the numbering is the view's, not a problem
    if lane is None or speedups() is None:
        assert sink.runs == 0
    elif chunk > 1:
        assert sink.runs > 0


def test_stats_count_per_direction_and_in_total() -> None:
    st = TapStats()
    a, b = _sid(1, True), _sid(1, False)
    for ev in (StreamStart(a, 1, True), StreamStart(b, 1, True), StreamData(a, b"x" * 500, 2), StreamGap(a, 70, 3)):
        st.event(ev)
    o = Origin("tap", a, 1_000_000_000)
    for seq, n in enumerate([1, 2, 5, 5, 6], start=1):
        frame = Frame(0, 1, DELTA, 0, seq, seq, b"x/v1", b"", 0)
        st.output(o, Message(frame, DeltaMsg(b"vwap", b"k", b"", n, 400_000_000)))
    st.output(o, Message(Frame(0, 1, HEARTBEAT, 0, 9, 9, b"", b"", 0), Heartbeat(b"w", 1, 0.75)))
    st.output(o, Problem(10, "crc_mismatch", "bad"))
    # What the stream's dissector says of its numbering, read after an event that came at 1 s.
    st.progress(a, Progress(9, ("vwap", 6), 400_000_000, 0.75, 1, 5, 2, 1, 0), 1_000_000_000)
    streams, totals = st.snapshot()
    s = next(x for x in streams if x.stream == a)
    assert (s.messages, s.stream_bytes, s.lost, s.crc_errors, s.problems) == (6, 500, 70, 1, 1)
    assert (s.delta_missing, s.delta_duplicates, s.last_seq, s.last_delta) == (2, 1, 9, ("vwap", 6))
    assert s.heartbeat == (1_000_000_000, 0.75) and s.watermark_lag_ns == 600_000_000
    # Read again later with no new heartbeat or watermark: their arrival times stay.
    st.progress(a, Progress(10, ("vwap", 6), 400_000_000, 0.75, 1, 5, 2, 1, 0), 5_000_000_000)
    s = next(x for x in st.snapshot()[0] if x.stream == a)
    assert (s.last_seq, s.heartbeat, s.watermark_lag_ns) == (10, (1_000_000_000, 0.75), 600_000_000)
    st.progress(a, Progress(11, ("vwap", 7), 4_500_000_000, 0.5, 2, 6, 2, 1, 0), 5_000_000_000)
    s = next(x for x in st.snapshot()[0] if x.stream == a)
    assert (s.last_seq, s.heartbeat, s.watermark_lag_ns) == (11, (5_000_000_000, 0.5), 500_000_000)
    assert dict(s.by_type) == {"Delta": 5, "Heartbeat": 1}
    assert (totals.connections, totals.open_connections, totals.messages, totals.not_decoded) == (1, 1, 6, 70)
    st.event(StreamEnd(a, 4, "fin"))
    st.event(StreamEnd(b, 4, "rst"))
    st.not_shown_messages = 3
    st.notes.append("tcpdump: 2 packets dropped by kernel")
    assert st.snapshot()[1].open_connections == 0
    assert st.summary() == (
        "1 connection, 6 messages, 1 problem; 3 messages not shown, 70 bytes not decoded; "
        "tcpdump: 2 packets dropped by kernel"
    )


def test_stats_forget_old_closed_connections_but_keep_counting() -> None:
    st = TapStats()
    for n in range(1, KEEP_CLOSED + 11):
        for c2s in (True, False):
            st.event(StreamStart(_sid(n, c2s), 0, True))
        for c2s in (True, False):
            st.event(StreamEnd(_sid(n, c2s), 0, "fin"))
    streams, totals = st.snapshot()
    assert totals.connections == KEEP_CLOSED + 10
    assert len(streams) == 2 * KEEP_CLOSED and min(s.stream.connection for s in streams) == 11


def test_stats_leave_out_connections_found_not_to_carry_ripple() -> None:
    st = TapStats()
    for conn in (1, 2):
        for c2s in (True, False):
            st.event(StreamStart(_sid(conn, c2s), 0, True))
        st.event(StreamData(_sid(conn, True), b"x" * 10 * conn, 1))
    st.undecoded(2)
    st.event(StreamData(_sid(2, True), b"y" * 99, 2))  # ignored from now on
    streams, totals = st.snapshot()
    assert {s.stream.connection for s in streams} == {1}
    assert (totals.connections, totals.open_connections, totals.stream_bytes) == (1, 1, 10)
    st.event(StreamEnd(_sid(2, True), 3, "fin"))
    st.event(StreamEnd(_sid(2, False), 3, "fin"))
    assert st.snapshot()[1].connections == 1


def test_human_units() -> None:
    assert [human_bytes(n) for n in (0, 1023, 1024, 5 << 20, 3 << 30)] == ["0B", "1023B", "1.0K", "5.0M", "3.0G"]
    assert [human_duration(n) for n in (500, 2_500_000, 4_100_000_000, -90 * 10**9, 5400 * 10**9, 10**15)] == [
        "0us",
        "2ms",
        "4.1s",
        "-2m",
        "1.5h",
        "12d",
    ]
    assert by_type_text({"Delta": 5, "Heartbeat": 1, "Handshake": 2}) == "5D 2Hs 1HB"
