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
  v1 logstash-forwarder sending data frames; v1.lj is the v1 client's bytes.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.cli.test_golden import damaged_demo  # noqa: E402
from tests.conftest import run_cli  # noqa: E402
from tests.protocols.lumberjack.ljkit import A, D, J, W  # noqa: E402
from tests.replay.pcap import Connection, build_pcap  # noqa: E402

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
        "capture.pcap": build_pcap(
            [Connection(session, session_ok, 50412, 9000), Connection(HTTP_GET, HTTP_OK, 50414, 80)], gap_s=0.0001
        ),
        "lossy.pcap": drop_record(lossy_full, 5),
        "beats.pcap": build_pcap(
            [Connection(lj2, lj2_ack, 51200, 5044), Connection(lj1, lj1_ack, 51202, 5044)], gap_s=0.0001
        ),
        "v1.lj": lj1,
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
