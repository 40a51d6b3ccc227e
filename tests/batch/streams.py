"""A generated set of inputs whose `ripple stats` figures are known by
construction: envelopes written with ripple's encoder at chosen envelope
times, sequence numbers, keys and watermarks, and a capture whose packets
carry chosen capture times (written record by record here: dpkt's float
timestamps cannot hold a nanosecond at today's epoch).

The layout (times in seconds after T0, lags in ms; see test_stats.py for the
figures worked out by hand from it):

  workers.pcap, connection 1 (client port 41001), worker w1:
    c2s  0.000 Handshake (outputs px, qty)
         0.100 Heartbeat
         0.200 .. 1.100  10 px Deltas, sequence_no 1 2 3 5 6 6 7 10 11 4,
                         keys AAPL MSFT AAPL IBM AAPL MSFT AAPL IBM AAPL MSFT,
                         lags 5 10 15 ... 50
         1.200 Heartbeat
         1.300 .. 1.500  3 qty Deltas, sequence_no 2 3 4, keys 1 2 1, lags 100 200 300
         2.000, 15.000, 16.000 Heartbeats
    s2c  0.050 Schema_negotiation
  workers.pcap, connection 2 (client port 41002), worker w2:
    c2s  3.000 Handshake (output px)
         3.100 Heartbeat
         3.200 .. 3.500  4 px Deltas, sequence_no 1 2 3 4, key AAPL, lags 1 2 3 4
         8.100, 13.100 Heartbeats
  w3.ripple (a raw stream: lag is envelope time minus watermark), worker w3:
         20.000 Handshake (output px)
         20.100 px Delta, sequence_no 1, key IBM, lag 7
         20.200 Heartbeat whose CRC is broken (a problem, not a message)
         13 bytes of garbage
         20.300 px Delta, sequence_no 3, key IBM, no watermark
         20.400 px Delta, sequence_no 3, key IBM, lag 9
         20.500, 32.500 Heartbeats

Each capture packet carries one envelope and is captured 1 ms after the
envelope's time; a Delta's watermark is its capture time minus its lag.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field
from pathlib import Path

import dpkt  # type: ignore[import-untyped, unused-ignore]

from ripple_cli.codec.delta import CompiledSchema, SetRow
from ripple_cli.codec.envelope import build_envelope
from ripple_cli.codec.messages import (
    FIXED_FINGERPRINTS,
    Body,
    DeltaView,
    Handshake,
    Heartbeat,
    SchemaNegotiation,
    tag_of,
    write_payload,
)
from ripple_cli.codec.schema import FLOAT, INT, STRING, Field, Schema

NS = 1_000_000_000
MS = 1_000_000
T0 = 1_718_900_000 * NS  # 2024-06-20T16:13:20Z
CAPTURE_DELAY = 1 * MS

PX = Schema(b"px", 1, STRING, (Field(b"price", FLOAT),))
QTY = Schema(b"qty", 1, INT, (Field(b"n", INT),))
_COMPILED = {s.fingerprint: CompiledSchema(s) for s in (PX, QTY)}


def at(seconds: str) -> int:
    """T0 plus a decimal number of seconds, exactly."""
    whole, _, frac = seconds.partition(".")
    return T0 + int(whole) * NS + int((frac + "000")[:3]) * MS


@dataclass
class Envelope:
    time_ns: int
    type: str
    data: bytes
    lag_ns: int | None = None  # Deltas: capture (or envelope) time minus watermark
    output: str | None = None  # Deltas: the source output


@dataclass
class Direction:
    envelopes: list[Envelope] = field(default_factory=list)

    def put(self, time_ns: int, body: Body, fingerprint: bytes, type_name: str, lag_ns: int | None = None) -> None:
        seq = len(self.envelopes) + 1
        data = build_envelope(tag_of(body), seq, time_ns, fingerprint, write_payload(body))
        output = body.source_output.decode() if isinstance(body, DeltaView) else None
        self.envelopes.append(Envelope(time_ns, type_name, data, lag_ns, output))

    def handshake(self, t: str, worker: bytes, outputs: tuple[Schema, ...]) -> None:
        body = Handshake(worker, tuple((s.name, s) for s in outputs), 1)
        self.put(at(t), body, FIXED_FINGERPRINTS[0], "Handshake")

    def heartbeat(self, t: str, worker: bytes) -> None:
        self.put(at(t), Heartbeat(worker, at(t), 0.5), FIXED_FINGERPRINTS[4], "Heartbeat")

    def delta(self, t: str, schema: Schema, key: object, value: object, n: int, lag_ms: int | None, raw: bool) -> None:
        """A Set Delta; its watermark is `lag_ms` before its capture time
        (its envelope time in a raw stream), or absent."""
        time_ns = at(t)
        seen = time_ns if raw else time_ns + CAPTURE_DELAY
        watermark = None if lag_ms is None else seen - lag_ms * MS
        row = {schema.fields[0].name.decode(): value}
        body = DeltaView(schema.name, key, SetRow(row), n, watermark, _COMPILED[schema.fingerprint])
        self.put(time_ns, body, schema.fingerprint, "Delta", None if lag_ms is None else lag_ms * MS)


def conn1() -> tuple[Direction, Direction]:
    c2s, s2c = Direction(), Direction()
    c2s.handshake("0.0", b"w1", (PX, QTY))
    s2c.put(at("0.05"), SchemaNegotiation(True, ()), FIXED_FINGERPRINTS[5], "Schema_negotiation")
    c2s.heartbeat("0.1", b"w1")
    times = ["0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1.0", "1.1"]
    numbers = [1, 2, 3, 5, 6, 6, 7, 10, 11, 4]
    keys = [b"AAPL", b"MSFT", b"AAPL", b"IBM", b"AAPL", b"MSFT", b"AAPL", b"IBM", b"AAPL", b"MSFT"]
    for i, (t, n, key) in enumerate(zip(times, numbers, keys, strict=True)):
        c2s.delta(t, PX, key, 100.0 + i, n, 5 * (i + 1), False)
    c2s.heartbeat("1.2", b"w1")
    for t, n, key, lag in (("1.3", 2, 1, 100), ("1.4", 3, 2, 200), ("1.5", 4, 1, 300)):
        c2s.delta(t, QTY, key, n * 10, n, lag, False)
    for t in ("2.0", "15.0", "16.0"):
        c2s.heartbeat(t, b"w1")
    return c2s, s2c


def conn2() -> Direction:
    c2s = Direction()
    c2s.handshake("3.0", b"w2", (PX,))
    c2s.heartbeat("3.1", b"w2")
    for i in range(4):
        c2s.delta(f"3.{2 + i}", PX, b"AAPL", 200.0 + i, i + 1, i + 1, False)
    for t in ("8.1", "13.1"):
        c2s.heartbeat(t, b"w2")
    return c2s


GARBAGE = b"not ripple!!"  # 12 bytes, then one more: 13 skipped


def raw_w3() -> tuple[Direction, bytes]:
    d = Direction()
    d.handshake("20.0", b"w3", (PX,))
    d.delta("20.1", PX, b"IBM", 1.5, 1, 7, True)
    d.heartbeat("20.2", b"w3")
    d.delta("20.3", PX, b"IBM", 2.5, 3, None, True)
    d.delta("20.4", PX, b"IBM", 3.5, 3, 9, True)
    d.heartbeat("20.5", b"w3")
    d.heartbeat("32.5", b"w3")
    broken = bytearray(d.envelopes[2].data)
    broken[-1] ^= 0xFF  # the CRC's last byte
    parts = [e.data for e in d.envelopes]
    parts[2] = bytes(broken) + GARBAGE + b"?"
    return d, b"".join(parts)


# ------------------------------------------------------------------ the capture

CLIENT = socket.inet_aton("10.1.0.1")
SERVER = socket.inet_aton("10.1.0.2")
SERVER_PORT = 7400


def _frame(from_client: bool, cport: int, seq: int, ack: int, flags: int, data: bytes) -> bytes:
    src, dst = (CLIENT, SERVER) if from_client else (SERVER, CLIENT)
    sport, dport = (cport, SERVER_PORT) if from_client else (SERVER_PORT, cport)
    tcp = dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq, ack=ack, flags=flags, win=65535, data=data)
    ip = dpkt.ip.IP(src=src, dst=dst, p=dpkt.ip.IP_PROTO_TCP, ttl=64, data=tcp)
    ip.len = len(ip)
    eth = dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
    return bytes(eth)


def _packets(cport: int, c2s: Direction, s2c: Direction, syn_ns: int, fin_ns: int) -> list[tuple[int, bytes]]:
    """A whole connection: handshake, one packet per envelope captured
    CAPTURE_DELAY after the envelope's time, FINs."""
    ack_flags = dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH
    out = [
        (syn_ns, _frame(True, cport, 100, 0, dpkt.tcp.TH_SYN, b"")),
        (syn_ns + 1, _frame(False, cport, 500, 101, dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK, b"")),
        (syn_ns + 2, _frame(True, cport, 101, 501, dpkt.tcp.TH_ACK, b"")),
    ]
    cseq, sseq = 101, 501
    timed = sorted(
        [(e.time_ns, True, e.data) for e in c2s.envelopes] + [(e.time_ns, False, e.data) for e in s2c.envelopes]
    )
    for t, from_client, data in timed:
        if from_client:
            out.append((t + CAPTURE_DELAY, _frame(True, cport, cseq, sseq, ack_flags, data)))
            cseq += len(data)
        else:
            out.append((t + CAPTURE_DELAY, _frame(False, cport, sseq, cseq, ack_flags, data)))
            sseq += len(data)
    fin = dpkt.tcp.TH_FIN | dpkt.tcp.TH_ACK
    out.append((fin_ns, _frame(True, cport, cseq, sseq, fin, b"")))
    out.append((fin_ns + 1, _frame(False, cport, sseq, cseq + 1, fin, b"")))
    out.append((fin_ns + 2, _frame(True, cport, cseq + 1, sseq + 1, dpkt.tcp.TH_ACK, b"")))
    return out


def pcap_bytes(packets: list[tuple[int, bytes]]) -> bytes:
    """A nanosecond pcap (magic a1b23c4d), Ethernet, records in time order."""
    out = [struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1)]
    for t, frame in sorted(packets, key=lambda p: p[0]):
        sec, nsec = divmod(t, NS)
        out.append(struct.pack("<IIII", sec, nsec, len(frame), len(frame)) + frame)
    return b"".join(out)


@dataclass
class StatsInputs:
    directory: Path
    pcap: Path
    raw: Path
    streams: dict[str, list[Envelope]]  # by stream name as stats --by connection names them


def write_stats_inputs(directory: Path) -> StatsInputs:
    c1, c1_back = conn1()
    c2 = conn2()
    w3, raw_bytes = raw_w3()
    packets = _packets(41001, c1, c1_back, at("0.0") - MS, at("16.5"))
    packets += _packets(41002, c2, Direction(), at("3.0") - MS, at("13.5"))
    pcap = directory / "workers.pcap"
    pcap.write_bytes(pcap_bytes(packets))
    raw = directory / "w3.ripple"
    raw.write_bytes(raw_bytes)
    broken = w3.envelopes.pop(2)  # not a message: a CRC mismatch
    assert broken.type == "Heartbeat"
    return StatsInputs(
        directory,
        pcap,
        raw,
        {
            f"{pcap} 1:c2s": c1.envelopes,
            f"{pcap} 1:s2c": c1_back.envelopes,
            f"{pcap} 2:c2s": c2.envelopes,
            str(raw): w3.envelopes,
        },
    )
