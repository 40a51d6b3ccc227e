"""Item 7 of issue 15: inputs built to make a quadratic path show, at two
sizes.  Where the work can be counted it is (bytes the detectors look at,
walks over the streams); elsewhere the larger input, eight times the size,
must take less than thirty-two times as long (a quadratic path takes
sixty-four), each the best of three runs so that a busy machine does not
decide."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ripple_cli.capture.events import Endpoint, StreamData, StreamEnd, StreamId, StreamStart
from ripple_cli.capture.packets import ACK, SYN, Segment
from ripple_cli.capture.reassembly import Reassembler
from ripple_cli.flow.demux import Demux
from ripple_cli.flow.protocol_choice import ProtocolChoice

A, B = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
ISN = 1000


def _best_of_three(work: Callable[[], Any]) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        work()
        best = min(best, time.process_time() - t0)
    return best


def _linear(build: Callable[[int], Callable[[], Any]], n: int) -> None:
    # Eight times the input: a linear path takes eight to thirteen times as
    # long here (caches and dicts grow too), a quadratic one sixty-four.  At
    # four times, a linear path measured 10.1x beside a busy core, too near
    # a quadratic path's sixteen to tell them apart; half of sixty-four is.
    small, large = build(n), build(8 * n)
    small()  # warm caches and imports
    ratio = _best_of_three(large) / max(_best_of_three(small), 1e-3)
    assert ratio < 32, f"8x the input took {ratio:.1f}x the time"


def _seg(seq: int, payload: bytes = b"") -> Segment:
    return (A, B, 50000, 9000, seq & 0xFFFFFFFF, 0, ACK, payload)


def _reassemble(segments: list[Segment]) -> Callable[[], Any]:
    syn: Segment = (A, B, 50000, 9000, ISN - 1, 0, SYN, b"")

    def run() -> list[Any]:
        r = Reassembler()
        out = []
        for t, s in enumerate([syn, *segments]):
            out += r.feed(t, s)
        return out + r.finish()

    return run


def test_retransmissions_of_old_bytes_are_compared_in_linear_time() -> None:
    def build(n: int) -> Callable[[], Any]:
        delivered = [_seg(ISN + i, b"x") for i in range(n)]  # n one-byte segments, all in the history
        again = [_seg(ISN, b"x")] * n  # the first byte, retransmitted n times
        return _reassemble(delivered + again)

    _linear(build, 3000)


def test_tiny_segments_out_of_order_are_held_in_linear_time() -> None:
    def build(n: int) -> Callable[[], Any]:
        backwards = [_seg(ISN + i, b"y") for i in range(n, 0, -1)]  # after a hole at 0, last byte first
        return _reassemble([*backwards, _seg(ISN, b"h")])

    _linear(build, 20_000)


def test_out_of_order_bytes_all_arrive_in_order() -> None:
    backwards = [_seg(ISN + i, bytes([i % 251])) for i in range(300, 0, -1)]
    events = _reassemble([*backwards, _seg(ISN, b"\xff")])()
    data = b"".join(e.data for e in events if isinstance(e, StreamData))
    assert data == b"\xff" + bytes(i % 251 for i in range(1, 301))


def test_detection_looks_at_held_bytes_a_bounded_number_of_times() -> None:
    """A connection no detector recognises yet, fed in small segments: the
    detectors must not re-read the whole held head on every segment."""
    c, s = Endpoint("10.0.0.1", 40000), Endpoint("10.0.0.2", 4444)
    up = StreamId(1, c, s, True)
    demux = Demux("x", ProtocolChoice())
    looked = 0
    detect = demux._detect

    def counting(head: bytes) -> Any:
        nonlocal looked
        looked += len(head)
        return detect(head)

    demux._detect = counting  # type: ignore[method-assign]
    demux.feed(StreamStart(up, 0, True))
    fed = 0
    chunk = bytes(range(256)) * 4  # no protocol's start, and no envelope in it
    while fed < 600 << 10:
        demux.feed(StreamData(up, chunk, fed))
        fed += len(chunk)
    demux.feed(StreamEnd(up, fed, "fin"))
    assert looked <= 12 * fed, f"the detectors read {looked / fed:.0f} times the bytes held"


def _counting_crc(monkeypatch: Any) -> list[int]:
    """Bytes given to crc32c by the framing and the range CRCs, on the
    Python search (the C one, framing._accel, is the same search, compared
    with it in tests/property/test_prop_fast.py, and hashes where Python
    cannot count)."""
    from ripple_cli.codec import crcrange, framing

    monkeypatch.setattr(framing, "_accel", None)
    monkeypatch.setattr(crcrange, "_accel", None)

    hashed = [0]
    real = framing.crc32c

    def crc(data: Any) -> int:
        hashed[0] += len(data)
        return real(data)

    monkeypatch.setattr(framing, "crc32c", crc)
    monkeypatch.setattr(crcrange, "crc32c", crc)
    return hashed


def test_resync_over_headers_claiming_large_payloads_hashes_each_byte_a_few_times(monkeypatch: Any) -> None:
    from ripple_cli.codec.framing import FrameDecoder
    from tests.hostile.bombs import claiming_headers

    hashed = _counting_crc(monkeypatch)
    data = claiming_headers(256 << 10, claim=256 << 10)
    dec = FrameDecoder()
    items = []
    for i in range(0, len(data), 1 << 16):
        items += dec.feed(data[i : i + (1 << 16)])
    items += dec.finish()
    assert [type(x).__name__ for x in items] == ["Problem", "Frame"]
    assert hashed[0] <= 40 * len(data), f"hashed {hashed[0] / len(data):.0f} times the stream"


def test_detection_over_headers_claiming_large_payloads_hashes_each_byte_a_few_times(monkeypatch: Any) -> None:
    from ripple_cli.codec.framing import find_envelope
    from tests.hostile.bombs import claiming_headers

    hashed = _counting_crc(monkeypatch)
    data = claiming_headers(256 << 10, claim=256 << 10)
    assert find_envelope(data) == data.rindex(b"RIPP")  # the Heartbeat at the end
    assert hashed[0] <= 40 * len(data), f"hashed {hashed[0] / len(data):.0f} times the head"


def test_pravega_resync_over_headers_claiming_large_bodies_is_linear() -> None:
    """Damage made of AppendBlockEnd headers, each claiming a body that runs
    past the next header and past the end: every one is a candidate whose
    claimed body must be judged, without copying or reading it whole."""
    import struct

    from ripple_cli.protocols.base import DissectOptions
    from ripple_cli.protocols.pravega.stream import PravegaStream

    hello = struct.pack(">iiii", -127, 8, 15, 5)

    def build(n: int) -> Callable[[], Any]:
        # Claims past the end, and never landing on a header (4 mod 8).
        unit = struct.pack(">ii", 4, 4 * n + 4)
        data = hello + b"\x01" + unit * (n // 8) + hello

        def run() -> list[Any]:
            s = PravegaStream(DissectOptions(), None)
            out = []
            for i in range(0, len(data), 1 << 16):
                out += s.feed(data[i : i + (1 << 16)])
            out += s.finish()
            kinds = [type(x).__name__ for x in out]
            assert kinds == ["ProtoMessage", "Problem", "ProtoMessage"], kinds
            return out

        return run

    _linear(build, 128 << 10)


def test_connections_joined_part_way_past_max_flows_are_admitted_in_linear_time() -> None:
    """A capture started on a busy server: each connection's first packet
    carries data, no SYN, and there are more of them than --max-flows."""

    def build(n: int) -> Callable[[], Any]:
        segments = [(A, B, 1024 + i % 60000, 9000, 5000, 0, ACK, b"z" * 20) for i in range(n)]

        def run() -> int:
            r = Reassembler(max_flows=n // 2)  # half of them past it
            count = sum(len(r.feed(t, s)) for t, s in enumerate(segments))
            return count + len(r.finish())

        return run

    _linear(build, 3000)


def test_a_stream_of_many_holes_is_one_short_line_in_linear_time() -> None:
    """A hole after every few bytes (a capture that lost one segment in
    two): one damaged region, its line naming the first two holes and
    counting the others, whatever their number."""
    from ripple_cli.codec.framing import FrameDecoder

    def build(n: int) -> Callable[[], Any]:
        def run() -> list[Any]:
            d = FrameDecoder()
            out: list[Any] = []
            for _ in range(n):
                out += d.feed(b"0123456789")
                out += d.gap(1)
            return out + d.finish()

        return run

    _linear(build, 5000)
    [problem] = build(5000)()
    assert problem.detail == (
        "1 bytes missing from the stream at offset 10; then 1 bytes missing from the stream at offset 21; "
        "then 4998 more holes (4998 bytes)"
    )
    assert problem.skipped == 5000 * 11
