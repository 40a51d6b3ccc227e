#!/usr/bin/env python3
"""Make the example inputs that README.md and the man pages use, byte for byte.

    python scripts/make-examples.py            # (re)writes them into examples/
    python scripts/make-examples.py --out DIR  # somewhere else
    python scripts/make-examples.py --check    # exit 1 when examples/ differs

Every file is made by the project's own generators, from fixed inputs and
with no clock or randomness, so the same sources always give the same
bytes (tests/docs/test_examples_recipe.py checks the committed files):

- examples/demo.ripple is the starting point: 300 messages written by the
  OCaml generator of the interop tests (tests/interop/ocaml/), committed;
- damaged.ripple: demo.ripple with the three kinds of damage the golden
  tests use (tests/cli/test_golden.py: a flipped payload byte, garbage
  between two envelopes, a cut tail);
- session.ripple: the stream ripple-encode(1)'s first example writes (its
  text is here, encoded by ripple's encoder);
- workers.pcap: three connections to port 9000 (tests/replay/pcap.py
  builds the packets): two workers sending demo.ripple, each answered by a
  Schema_negotiation, and an HTTP request between them;
- capture.pcap, lossy.pcap: session.ripple to port 9000 and an HTTP
  connection to port 80; lossy.pcap is the Ripple connection alone, cut in
  200-byte segments, with the segment at stream offset 200 missing;
- beats.pcap, v1.lj: Lumberjack (tests/protocols/lumberjack/ljkit.py's
  frame builders): a v2 Beat sending JSON events to port 5044, acked, and a
  v1 logstash-forwarder sending data frames; v1.lj is the v1 client's bytes;
- pravega.pcap: a Java client writing to a Pravega segment store on port
  12345 (tests/protocols/pravega/pv_bytes.py's command builders): Hellos,
  SetupAppend/AppendSetup, two AppendBlock/AppendBlockEnd of whole events,
  each acked by DataAppended, then a read of the segment from offset 0;
- rstmdb.pcap: an rstmdb client on port 7401 (tests/protocols/rcp/rcpkit.py's
  frame builders, CRC32C in every frame): HELLO, PUT_MACHINE,
  CREATE_INSTANCE, WATCH_ALL, an APPLY_EVENT and the event it sends, an
  APPLY_EVENT refused with INVALID_TRANSITION, BYE;
- mirror.pcap: capture.pcap as a traffic mirror sends it (AWS VPC Traffic
  Mirroring: each frame inside VXLAN, UDP port 4789, from 172.31.0.5 to the
  mirror target 172.31.0.9), the outer IPv4 datagrams over 300 bytes cut in
  two fragments, the last one first;
- streams.pcap: Reactive Streams on port 7373
  (tests/protocols/reactive_streams/rs_bytes.py): a client subscribing to
  two publishers of the server (subscribers 1 and 2), their elements,
  demand, a cancel and a goodbye.

pravega.pcap, rstmdb.pcap and streams.pcap are conversations: each side's
bytes come after what they answer, as real peers write them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import socket
import struct
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import dpkt  # type: ignore[import-untyped, unused-ignore]

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.capture.mutate import pcap_bytes  # noqa: E402
from tests.cli.test_golden import damaged_demo  # noqa: E402
from tests.conftest import run_cli  # noqa: E402
from tests.protocols.lumberjack.ljkit import A, D, J, W  # noqa: E402
from tests.protocols.pravega import pv_bytes as pv  # noqa: E402
from tests.protocols.rcp import rcpkit as rcp  # noqa: E402
from tests.protocols.reactive_streams import rs_bytes as rs  # noqa: E402
from tests.replay.pcap import Connection, _frame, build_pcap  # noqa: E402

EXAMPLES = ROOT / "examples"

SESSION_SEXP = """\
((seq 1) (time_ns 1700000000000000000) (schema ripple.handshake/v1)
 (msg (Handshake
  ((source_worker_id w1)
   (output_schemas
    ((vwap
      ((name vwap) (version 2) (key String)
       (fields
        (((name price) (typ Float) (default ()))
         ((name volume) (typ Int) (default ()))
         ((name venue) (typ (Option String)) (default ("()")))))))))
   (protocol_version 1)))))
((seq 2) (time_ns 1700000000000000050) (schema vwap/v2)
 (msg (Delta ((source_output vwap) (key AAPL)
   (delta (Set ((price 100) (volume 300) (venue ()))))
   (sequence_no 1) (watermark_ns ())))))
((seq 3) (time_ns 1700000000000000123) (schema vwap/v2)
 (msg (Delta ((source_output vwap) (key AAPL)
   (delta (Patch ((Price 101.25) (Venue (XNYS)))))
   (sequence_no 2) (watermark_ns (1700000000000000000))))))
((seq 4) (time_ns 1700000000000000200) (schema ripple.heartbeat/v1)
 (msg (Heartbeat
  ((worker_id w1) (timestamp_ns 1700000000000000200) (load 0.5)))))
((seq 5) (time_ns 1700000000000000300) (schema vwap/v2)
 (msg (Delta ((source_output vwap) (key AAPL) (delta Remove)
   (sequence_no 3) (watermark_ns ())))))
"""

HTTP_GET = b"GET /health HTTP/1.1\r\nHost: 10.0.0.2\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n"
HTTP_OK = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n"


def encode(text: str) -> bytes:
    """Canonical or hum text -> envelopes, by ripple's own encoder."""
    r = run_cli(["encode"], stdin=text.encode())
    if r.code != 0:
        raise SystemExit(f"make-examples: encode failed: {r.stderr}")
    return r.stdout


def negotiation(time_ns: int) -> bytes:
    """The ok Schema_negotiation a consumer answers a Handshake with."""
    schema = "ripple.schema_negotiation/v1"
    return encode(f"((seq 1)(time_ns {time_ns})(schema {schema})(msg(Schema_negotiation((ok true)(errors())))))\n")


def drop_record(pcap: bytes, index: int) -> bytes:
    """The capture without its packet number `index` (0-based)."""
    out, pos, n = bytearray(pcap[:24]), 24, 0
    while pos < len(pcap):
        (incl,) = struct.unpack_from("<I", pcap, pos + 8)
        end = pos + 16 + incl
        if n != index:
            out += pcap[pos:end]
        pos, n = end, n + 1
    return bytes(out)


def vxlan_mirror(pcap: bytes) -> bytes:
    """Each frame of an Ethernet pcap inside VXLAN over IPv4, as a mirror
    sends it; outer datagrams over 300 bytes as two fragments, last first."""
    out, pos, ident = bytearray(pcap[:24]), 24, 0
    macs = bytes.fromhex("0200000000090200000000050800")
    while pos < len(pcap):
        sec, usec, incl = struct.unpack_from("<III", pcap, pos)
        frame = pcap[pos + 16 : pos + 16 + incl]
        pos += 16 + incl
        ident += 1
        vxlan = bytes([8, 0, 0, 0, 0, 0, 7, 0]) + frame  # VNI 7
        udp = struct.pack("!HHHH", 49152 + ident, 4789, 8 + len(vxlan), 0) + vxlan
        cut = len(udp) // 16 * 8 if len(udp) > 280 else len(udp)
        pieces = [(cut // 8, udp[cut:]), (0x2000, udp[:cut])] if cut < len(udp) else [(0, udp)]
        for frag, body in pieces:
            ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(body), ident, frag, 64, 17, 0,
                             bytes([172, 31, 0, 5]), bytes([172, 31, 0, 9]))  # fmt: skip
            rec = macs + ip + body
            out += struct.pack("<IIII", sec, usec, len(rec), len(rec)) + rec
    return bytes(out)


def lumberjack_v2() -> tuple[bytes, bytes]:
    """A Beat's batch of three JSON events, in a window of 3, and the acks."""
    events = [
        {"@timestamp": "2023-11-14T22:13:20.000Z", "host": "web-1", "message": "GET /index.html 200"},
        {"@timestamp": "2023-11-14T22:13:20.500Z", "host": "web-1", "message": "GET /missing 404"},
        {"@timestamp": "2023-11-14T22:13:21.000Z", "host": "web-2", "message": "POST /login 302"},
    ]
    sent = W(3) + b"".join(J(seq, json.dumps(ev, separators=(",", ":")).encode()) for seq, ev in enumerate(events, 1))
    return sent, A(3)


def lumberjack_v1() -> tuple[bytes, bytes]:
    """A logstash-forwarder's two lines, in a window of 2, and the ack."""
    lines = [
        [(b"file", b"/var/log/app.log"), (b"host", b"db-1"), (b"line", b"hello"), (b"offset", b"0")],
        [(b"file", b"/var/log/app.log"), (b"host", b"db-1"), (b"line", b"world"), (b"offset", b"6")],
    ]
    sent = W(2, b"1") + b"".join(D(seq, pairs) for seq, pairs in enumerate(lines, 1))
    return sent, A(2, b"1")


@dataclass(frozen=True)
class Conversation:
    """A connection whose sides take turns: each step is (True: the client
    writes, False: the server writes) and the bytes, written after the
    other side's previous step arrived."""

    steps: list[tuple[bool, bytes]]
    client_port: int
    server_port: int


def conversation_pcap(conversations: list[Conversation], t0_ns: int, gap_ns: int = 100_000) -> bytes:
    """Ethernet/IPv4/TCP frames as tests/replay/pcap.py builds them (its
    `_frame`), one connection after the other, in causal order: handshake,
    each step in segments of at most 1400 bytes `gap_ns` apart, the FINs.
    Times are whole nanoseconds, written by tests/capture/mutate.py."""
    client_ip, server_ip = socket.inet_aton("10.0.0.1"), socket.inet_aton("10.0.0.2")
    records: list[tuple[int, bytes]] = []
    t = t0_ns
    ack, push, fin = dpkt.tcp.TH_ACK, dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH, dpkt.tcp.TH_FIN | dpkt.tcp.TH_ACK

    def put(from_client: bool, seq: int, ack_no: int, flags: int, data: bytes = b"") -> None:
        nonlocal t
        src, dst = (client_ip, server_ip) if from_client else (server_ip, client_ip)
        sport, dport = (conv.client_port, conv.server_port) if from_client else (conv.server_port, conv.client_port)
        records.append((t, _frame(src, dst, sport, dport, seq, ack_no, flags, data)))
        t += gap_ns

    for conv in conversations:
        cseq, sseq = 1000, 5000
        put(True, cseq, 0, dpkt.tcp.TH_SYN)
        put(False, sseq, cseq + 1, dpkt.tcp.TH_SYN | ack)
        cseq, sseq = cseq + 1, sseq + 1
        put(True, cseq, sseq, ack)
        for from_client, data in conv.steps:
            for i in range(0, len(data), 1400):
                chunk = data[i : i + 1400]
                if from_client:
                    put(True, cseq, sseq, push, chunk)
                    cseq += len(chunk)
                else:
                    put(False, sseq, cseq, push, chunk)
                    sseq += len(chunk)
        put(True, cseq, sseq, fin)
        put(False, sseq, cseq + 1, fin)
        put(True, cseq + 1, sseq + 1, ack)
    return pcap_bytes(records, nano=True)


def pravega() -> Conversation:
    """A writer appending four JSON trades in two blocks (the Java client
    without batching: AppendBlock, then AppendBlockEnd with no data), each
    block acked; then a reader reading the segment back from offset 0."""
    trades = [
        b'{"sym":"AAPL","px":189.5,"qty":100}',
        b'{"sym":"MSFT","px":411.2,"qty":250}',
        b'{"sym":"NVDA","px":495.1,"qty":7}',
        b'{"sym":"AAPL","px":189.6,"qty":40}',
    ]
    events = [pv.event(t) for t in trades]
    block1, block2 = b"".join(events[:2]), b"".join(events[2:])
    seg, w = pv.SEG, pv.W1
    c, s = True, False
    return Conversation(
        [
            (c, pv.hello()),
            (s, pv.hello()),
            (c, pv.setup_append(1, w, seg)),
            (s, pv.append_setup(1, seg, w, pv.NEW_WRITER)),
            (c, pv.append_block(w, block1) + pv.append_block_end(w, len(block1), b"", 2, 2, 1)),
            (s, pv.data_appended(w, 2, pv.NEW_WRITER, 1, len(block1))),
            (c, pv.append_block(w, block2) + pv.append_block_end(w, len(block2), b"", 2, 4, 1)),
            (s, pv.data_appended(w, 4, 2, 1, len(block1 + block2))),
            (c, pv.read_segment(seg, 0, 1 << 20, "", 2)),
            (s, pv.segment_read(seg, 0, block1 + block2, at_tail=True, rid=2)),
        ],
        50600,
        12345,
    )


def rstmdb() -> Conversation:
    """An rstmdb client's session, every message a frame with its CRC32C."""
    definition = {
        "states": ["created", "paid", "shipped"],
        "initial": "created",
        "transitions": [
            {"from": "created", "event": "pay", "to": "paid"},
            {"from": "paid", "event": "ship", "to": "shipped"},
        ],
    }
    hello = {"protocol_version": 1, "client_name": "rstmdb-py", "wire_modes": ["binary_json"], "features": ["batch"]}
    server = {"protocol_version": 1, "wire_mode": "binary_json", "server_name": "rstmdb", "server_version": "0.2.1"}
    checksum = hashlib.sha256(rcp.j(definition)).hexdigest()
    paid = {"from_state": "created", "to_state": "paid", "ctx": {"customer": "c-7"}, "wal_offset": 2}
    watched = {
        "type": "event",
        "subscription_id": "sub-1",
        "instance_id": "order-1",
        "machine": "order",
        "version": 1,
        "wal_offset": 2,
        "from_state": "created",
        "to_state": "paid",
        "event": "pay",
        "payload": {"amount": 42.5},
    }
    exchanges = [
        (rcp.request("1", "HELLO", hello), [rcp.ok("1", {**server, "features": ["batch"]})]),
        (
            rcp.request("2", "PUT_MACHINE", {"machine": "order", "version": 1, "definition": definition}),
            [rcp.ok("2", {"machine": "order", "version": 1, "stored_checksum": checksum, "created": True})],
        ),
        (
            rcp.request("3", "CREATE_INSTANCE", {"machine": "order", "version": 1, "instance_id": "order-1"}),
            [rcp.ok("3", {"instance_id": "order-1", "state": "created", "wal_offset": 1})],
        ),
        (
            rcp.request("4", "WATCH_ALL", {"machines": ["order"]}),
            [rcp.ok("4", {"subscription_id": "sub-1", "wal_offset": 1})],
        ),
        (
            rcp.request("5", "APPLY_EVENT", {"instance_id": "order-1", "event": "pay", "payload": {"amount": 42.5}}),
            [rcp.ok("5", {**paid, "applied": True, "event_id": "evt-1"}), rcp.j(watched)],
        ),
        (
            rcp.request("6", "APPLY_EVENT", {"instance_id": "order-1", "event": "pay"}),
            [rcp.error("6", "INVALID_TRANSITION", "no transition from paid on pay")],
        ),
        (rcp.request("7", "BYE", {}), [rcp.ok("7", {"goodbye": True})]),
    ]
    steps: list[tuple[bool, bytes]] = []
    for req, answers in exchanges:
        steps += [(True, rcp.frame(req)), (False, b"".join(rcp.frame(a) for a in answers))]
    return Conversation(steps, 50700, 7401)


def reactive_streams() -> Conversation:
    """The client subscribes to two publishers of the server: trades
    (subscriber 1, 2 elements asked at once) and ticks (subscriber 2,
    asked for 3 later, then cancelled); then it says goodbye."""
    c, s = True, False
    return Conversation(
        [
            (c, rs.client_hello(0) + rs.subscribe(b"trades", 1, 2) + rs.subscribe(b"ticks", 2, 0)),
            (s, rs.server_hello(0) + rs.on_subscribe(1) + rs.on_subscribe(2)),
            (s, rs.on_next(1, b'{"sym":"AAPL","px":189.5}') + rs.on_next(1, b'{"sym":"MSFT","px":411.2}')),
            (c, rs.request(2, 3) + rs.request(1, 1)),
            (s, rs.on_next(2, b"AAPL 189.52") + rs.on_next(2, b"AAPL 189.55") + rs.on_next(2, b"MSFT 411.20")),
            (s, rs.on_next(1, b'{"sym":"NVDA","px":495.1}') + rs.on_complete(1)),
            (c, rs.cancel(2)),
            (c, rs.goodbye(b"done")),
            (s, rs.goodbye_ack(b"bye")),
        ],
        50800,
        7373,
    )


def make(out: Path) -> dict[str, bytes]:
    demo = (EXAMPLES / "demo.ripple").read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        damaged = damaged_demo(Path(tmp)).read_bytes()
    session = encode(SESSION_SEXP)
    session_ok = negotiation(1700000000000000010)
    demo_ok = negotiation(1718900000010000000)
    lossy_full = build_pcap([Connection(session, session_ok, 50412, 9000)], segment=200, gap_s=0.0001)
    # Packets: SYN, SYN-ACK, ACK, then data: 0-200, the answer, 200-400, 400-465.
    lj2, lj2_ack = lumberjack_v2()
    lj1, lj1_ack = lumberjack_v1()
    capture = build_pcap(
        [Connection(session, session_ok, 50412, 9000), Connection(HTTP_GET, HTTP_OK, 50414, 80)], gap_s=0.0001
    )
    files = {
        "damaged.ripple": damaged,
        "session.ripple": session,
        "workers.pcap": build_pcap(
            [
                Connection(demo, demo_ok, 58354, 9000),
                Connection(HTTP_GET, HTTP_OK, 58362, 9000),
                Connection(demo, demo_ok, 58372, 9000),
            ],
            gap_s=0.0001,
            t0=1718900000.0,
        ),
        "capture.pcap": capture,
        "mirror.pcap": vxlan_mirror(capture),
        "lossy.pcap": drop_record(lossy_full, 5),
        "beats.pcap": build_pcap(
            [Connection(lj2, lj2_ack, 51200, 5044), Connection(lj1, lj1_ack, 51202, 5044)], gap_s=0.0001
        ),
        "v1.lj": lj1,
        "pravega.pcap": conversation_pcap([pravega()], 1_700_000_000_000_000_000),
        "rstmdb.pcap": conversation_pcap([rstmdb()], 1_700_000_000_000_000_000),
        "streams.pcap": conversation_pcap([reactive_streams()], 1_700_000_000_000_000_000),
    }
    return files


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=EXAMPLES, help="where to write (default: examples/)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file differs")
    args = ap.parse_args()
    files = make(args.out)
    differ = []
    for name, data in files.items():
        path = args.out / name
        if args.check:
            if not path.is_file() or path.read_bytes() != data:
                differ.append(name)
        else:
            args.out.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    if differ:
        print("make-examples: differ from the recipe: " + ", ".join(differ), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
