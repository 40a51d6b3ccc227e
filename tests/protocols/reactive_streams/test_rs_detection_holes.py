"""Detection across a hole: a direction whose first KiB hold a hello and
whole messages, then a lost segment.  The detectors look at the bytes
before the hole (across it, a message would read as garbage and every
detector say no, and the connection would go undecoded, silently)."""

from __future__ import annotations

from rs_bytes import on_next, on_subscribe, server_hello

from ripple_cli.capture.events import Endpoint, StreamData, StreamEnd, StreamGap, StreamId, StreamStart
from ripple_cli.codec.problems import Problem
from ripple_cli.flow.demux import Demux
from ripple_cli.flow.protocol_choice import ProtocolChoice

CLIENT, SERVER = Endpoint("10.9.0.1", 41000), Endpoint("10.9.0.2", 7373)
UP, DOWN = StreamId(1, CLIENT, SERVER, True), StreamId(1, CLIENT, SERVER, False)


def _decoded(before: bytes, hole: int, after: bytes) -> list[object]:
    """The server speaks first; the client sends nothing.  (On no port of
    the protocol's: detection alone decides.)"""
    demux = Demux("x.pcap", ProtocolChoice())
    out = []
    for ev in (
        StreamStart(UP, 0, True),
        StreamStart(DOWN, 0, True),
        StreamData(DOWN, before[:700], 1),
        StreamData(DOWN, before[700:], 2),
        StreamGap(DOWN, hole, 3),
        StreamData(DOWN, after, 4),
        StreamEnd(DOWN, 5, "fin"),
        StreamEnd(UP, 5, "fin"),
    ):
        out += [item for _origin, item in demux.feed(ev)]
    out += [item for _origin, item in demux.finish()]
    assert demux.undecoded == {}, demux.undecoded
    return out


def test_a_hole_in_the_first_kib_does_not_hide_the_protocol() -> None:
    messages = server_hello(0, []) + on_subscribe(1, 0) + b"".join(on_next(1, b'{"px":%d}' % i) for i in range(100))
    lost, rest = on_next(1, b'{"px":"lost"}'), b"".join(on_next(1, b'{"px":%d}' % i) for i in range(100, 200))
    assert len(messages) < 4096
    out = _decoded(messages, len(lost), rest)
    types = [getattr(item, "type", None) for item in out if not isinstance(item, Problem)]
    assert types[:3] == ["ServerHello", "OnSubscribe", "OnNext"]
    assert types.count("OnNext") == 100  # the ones before the hole; after it, raw (ripple-reactive-streams(7))
    [gap] = [p for p in out if isinstance(p, Problem) and p.offset == len(messages)]
    assert gap.detail.startswith(f"{len(lost)} bytes missing from the stream")


def test_a_hole_held_counts_towards_the_limits_of_what_is_held() -> None:
    """Bytes after the hole are held (and replayed to the decoder) though
    the detectors no longer look at them: they count towards the bound on
    what an undecided direction may hold."""
    from ripple_cli.flow import demux as demux_module

    demux = Demux("x.pcap", ProtocolChoice())
    demux.feed(StreamStart(DOWN, 0, True))
    demux.feed(StreamData(DOWN, b"\x02", 1))  # a ServerHello's first byte: detection wants more
    demux.feed(StreamGap(DOWN, 10, 2))
    fed = 0
    chunk = b"\x00" * (1 << 20)
    while DOWN not in demux.undecoded and fed <= demux_module.UNDECIDED_LIMIT + len(chunk):
        demux.feed(StreamData(DOWN, chunk, 3))
        fed += len(chunk)
    assert demux.undecoded[DOWN].startswith("no protocol recognised")
    assert fed <= demux_module.UNDECIDED_LIMIT + len(chunk)
