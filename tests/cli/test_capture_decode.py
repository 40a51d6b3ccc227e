"""decode and verify on real tcpdump captures, as a user meets them: the
output for a capture equals the output for the raw bytes of each connection."""

from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.capture.livecap import capture_conversation, listener, tcpdump_pipe
from tests.conftest import EXAMPLES, ROOT, run_cli

DEMO = (EXAMPLES / "demo.ripple").read_bytes()
DEMO_SEXP = (EXAMPLES / "demo.sexp").read_bytes()
ANSWER_LINE = b"((seq 1)(time_ns 1718900000010000000)(schema ripple.schema_negotiation/v1)(msg(Schema_negotiation((ok true)(errors())))))\n"  # noqa: E501
HTTP = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 50
COMMUNITY_ID = re.compile(r"1:[A-Za-z0-9+/]{27}=")


def answer_bytes(tmp: Path) -> bytes:
    src = tmp / "answer.sexp"
    src.write_bytes(ANSWER_LINE)
    out = tmp / "answer.ripple"
    assert run_cli(["encode", str(src), "-o", str(out)]).code == 0
    return out.read_bytes()


@pytest.fixture(scope="module")
def mixed_capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, bytes]]:
    """Two Ripple connections (the demo stream, answered by a negotiation)
    and one that is not Ripple, captured with tcpdump on lo."""
    tmp = tmp_path_factory.mktemp("mixed")
    answer = answer_bytes(tmp)
    path = tmp / "mixed.pcap"
    http_answer = b"HTTP/1.1 200 OK\r\n\r\n" * 30
    payloads = [(DEMO, answer), (HTTP, http_answer), (DEMO, answer)]
    # Each connection gets its own kind of answer (accept order is not connect order).
    exchanges = capture_conversation(
        path, payloads, 5, answer_for=lambda first: answer if first[:4] == DEMO[:4] else http_answer
    )
    return path, {e.client_port: e.sent for e in exchanges}


def connections(path: Path) -> dict[str, str]:
    """`--list-streams` as {stream key: end column} (the Community IDs left out)."""
    r = run_cli(["decode", "--list-streams", str(path)], width=200)
    assert r.code == 0, r.stderr
    rows = [[x for x in line.split() if not COMMUNITY_ID.fullmatch(x)] for line in r.text.splitlines()[1:]]
    return {row[0]: " ".join(row[8:]) if row[4] != "0" else " ".join(row[4:]) for row in rows}


def test_capture_decodes_like_the_raw_stream(mixed_capture: tuple[Path, dict[int, bytes]]) -> None:
    path, _sent = mixed_capture
    r = run_cli(["decode", str(path)])
    assert r.code == 0, r.stderr
    assert r.stderr == ""
    lines = r.stdout.splitlines(keepends=True)
    # Two demo streams (interleaved) and two answers; nothing of the HTTP one.
    assert len(lines) == 2 * 300 + 2
    assert lines.count(ANSWER_LINE) == 2
    per_stream = {}
    for conn in (1, 2, 3):
        out = run_cli(["decode", "--stream", f"{conn}:c2s", str(path)]).stdout
        per_stream[conn] = out
    ripple_conns = [c for c, out in per_stream.items() if out]
    assert len(ripple_conns) == 2
    for c in ripple_conns:
        assert per_stream[c] == DEMO_SEXP
        assert run_cli(["decode", "--stream", f"{c}:s2c", str(path)]).stdout == ANSWER_LINE


def test_list_streams_marks_the_other_traffic(mixed_capture: tuple[Path, dict[int, bytes]]) -> None:
    path, _sent = mixed_capture
    r = run_cli(["decode", "--list-streams", str(path)], width=200)
    text = r.text
    assert text.splitlines()[0].split()[:6] == ["stream", "protocol", "from", "to", "community_id", "msgs"]
    assert text.count(" 300 ") == 2
    assert len(set(COMMUNITY_ID.findall(text))) == 3  # one per connection, both directions alike
    assert text.count("no protocol recognised") == 2  # both directions of the HTTP connection
    assert text.count(" ripple ") == 4  # both directions of the two Ripple connections


def test_port_option_decodes_everything_on_it(mixed_capture: tuple[Path, dict[int, bytes]]) -> None:
    path, _sent = mixed_capture
    first = run_cli(["decode", "--format", "jsonl", "-Y", "direction == c2s", "-c", "1", str(path)]).stdout
    server_port = int(json.loads(first)["dst"].rsplit(":", 1)[1])
    # With --port every connection on it is decoded: the HTTP one is garbage.
    r = run_cli(["decode", "--port", str(server_port), str(path)])
    assert r.code == 1
    assert "bad_magic" in r.stderr or "bad magic" in r.stderr


def test_jsonl_carries_connection_direction_and_capture_time(mixed_capture: tuple[Path, dict[int, bytes]]) -> None:
    path, _sent = mixed_capture
    r = run_cli(["decode", "--format", "jsonl", "--type", "Schema_negotiation", str(path)])
    docs = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(docs) == 4  # the demo's own negotiation (c2s) and the answer (s2c), twice
    for d in docs:
        assert set(d) >= {"connection", "direction", "src", "dst", "capture_time_ns", "capture_time"}
        assert d["direction"] in ("c2s", "s2c")
        assert d["capture_time"].endswith("Z")
    assert sorted(d["direction"] for d in docs) == ["c2s", "c2s", "s2c", "s2c"]
    # The Community ID, beside src and dst: one per connection, the same both ways.
    ids = {(d["connection"], d["community_id"]) for d in docs}
    assert len(ids) == 2 and len({cid for _c, cid in ids}) == 2
    assert all(COMMUNITY_ID.fullmatch(cid) for _c, cid in ids)


def test_show_connection_and_filter_on_it(mixed_capture: tuple[Path, dict[int, bytes]]) -> None:
    path, _sent = mixed_capture
    r = run_cli(["decode", "--show-connection", "-Y", "direction == s2c", str(path)])
    lines = r.text.splitlines()
    assert len(lines) == 2
    for line in lines:
        assert line.startswith(ANSWER_LINE.decode().rstrip("\n") + " ; ")
        assert " -> 127.0.0.1:" in line


def test_verify_capture(mixed_capture: tuple[Path, dict[int, bytes]]) -> None:
    path, _sent = mixed_capture
    r = run_cli(["verify", "--schemas", str(EXAMPLES / "more-schemas"), str(path)])
    assert r.code == 0, r.text
    assert r.text.splitlines()[-1] == "verify: 4 streams, 602 messages, 0 problems"


def test_live_view_from_tcpdump_pipe(tmp_path: Path) -> None:
    """`tcpdump -U -w - | ripple decode -`: messages show while the
    connection is still open."""
    answer = answer_bytes(tmp_path)
    with listener() as srv, tcpdump_pipe(f"tcp port {srv.getsockname()[1]}") as dump:
        assert dump.stdout is not None
        decoder = subprocess.Popen(
            [sys.executable, "-m", "ripple_cli", "decode", "-"],
            stdin=dump.stdout,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
        )
        assert decoder.stdout is not None
        import socket

        host, port = srv.getsockname()[:2]
        accepted: list[socket.socket] = []
        t = threading.Thread(target=lambda: accepted.append(srv.accept()[0]))
        t.start()
        client = socket.create_connection((host, port))
        t.join(10)
        client.sendall(DEMO[:699])  # the Handshake only; the connection stays open
        first = decoder.stdout.readline()
        assert first == DEMO_SEXP.splitlines(keepends=True)[0]
        accepted[0].sendall(answer)
        assert decoder.stdout.readline() == ANSWER_LINE
        client.close()
        accepted[0].close()
    decoder.wait(timeout=30)
    assert decoder.returncode == 0


@pytest.fixture(scope="module")
def one_connection(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The demo stream over one real connection, in small writes so that it
    spans many segments."""
    tmp = tmp_path_factory.mktemp("one")
    path = tmp / "one.pcap"
    [exchange] = capture_conversation(path, [(DEMO, b"")], 9, max_write=700)
    return path, exchange.client_port


def envelopes(stream: bytes) -> list[tuple[int, int]]:
    """(offset, size) of every envelope of a clean stream."""
    out, pos = [], 0
    while pos < len(stream):
        size = 63 + int.from_bytes(stream[pos + 55 : pos + 59], "little")
        out.append((pos, size))
        pos += size
    return out


def test_mutated_capture_loses_only_what_the_holes_touch(one_connection: tuple[Path, int], tmp_path: Path) -> None:
    from tests.capture import mutate

    path, port = one_connection
    pkts = mutate.read_pcap(path)
    data = mutate.data_indices(pkts, port)
    assert len(data) > 20
    # Reorder and duplicate some segments, overlap one identically, drop two.
    pkts = mutate.reorder(pkts, data[3], data[6])
    data = mutate.data_indices(pkts, port)
    pkts = mutate.duplicate(pkts, data[8], data[12])
    data = mutate.data_indices(pkts, port)
    # (the first data packet from the 16th on whose successor is contiguous:
    # how the kernel cut and resent the stream varies from capture to capture)
    pkts = mutate.overlap(pkts, next(i for i in data[15:] if mutate.contiguous_next(pkts, i)), 100)
    data = mutate.data_indices(pkts, port)

    # Two holes apart: each a segment no other packet (a duplicate, the
    # overlap) covers any byte of, else its bytes would still arrive.  How
    # the stream was cut into segments varies from capture to capture.
    def alone(i: int) -> bool:
        start = mutate.stream_offset(pkts, i)
        end = start + len(pkts[i].payload)
        return not any(
            j != i
            and mutate.stream_offset(pkts, j) < end
            and start < mutate.stream_offset(pkts, j) + len(pkts[j].payload)
            for j in data
        )

    first = next(i for i in data[10:] if alone(i))
    first_end = mutate.stream_offset(pkts, first) + len(pkts[first].payload)
    second = next(i for i in data[len(data) // 2 :] if alone(i) and mutate.stream_offset(pkts, i) > first_end)
    dropped = [first, second]
    holes = []
    for i in dropped:
        start = mutate.stream_offset(pkts, i)
        holes.append((start, start + len(pkts[i].payload)))
    damaged = mutate.write_pcap(tmp_path / "damaged.pcap", mutate.drop(pkts, dropped))

    # --raw: a hole may take the Handshake, and with it the schemas.
    r = run_cli(["decode", "--raw", "--stream", "1:c2s", str(damaged)])
    assert r.code == 1
    gap_lines = [x for x in r.stderr.splitlines() if "bytes missing from the stream" in x]
    assert len(gap_lines) == 2, r.stderr
    for (start, end), line in zip(sorted(holes), gap_lines, strict=True):
        assert f"{end - start} bytes missing from the stream at offset {start}" in line
    lines = run_cli(["decode", "--raw", str(EXAMPLES / "demo.ripple")]).stdout.splitlines(keepends=True)
    expected = [
        lines[k]
        for k, (off, size) in enumerate(envelopes(DEMO))
        if not any(off < end and start < off + size for start, end in holes)
    ]
    assert r.stdout.splitlines(keepends=True) == expected
    assert len(expected) < 300


def _cut_records(path: Path) -> tuple[int, int]:
    """(records whose captured length is under the packet's, the most bytes kept of one)."""
    data = path.read_bytes()
    assert data[:4] == b"\xd4\xc3\xb2\xa1"  # tcpdump's pcap, this machine's (little-endian) order
    pos, cut, kept = 24, 0, 0
    while pos < len(data):
        caplen, origlen = struct.unpack_from("<II", data, pos + 8)
        if caplen < origlen:
            cut, kept = cut + 1, max(kept, caplen)
        pos += 16 + caplen
    return cut, kept


@pytest.mark.parametrize("snaplen", [72, 200])
def test_a_short_snap_length_is_said_once(tmp_path: Path, snaplen: int) -> None:
    """tcpdump -s cuts the packets: each stream then has holes.  With 6
    payload bytes kept of each packet no protocol can be recognised, and
    decode used to print nothing and exit 0; with 134 the holes are errors
    with no cause given.  A warning now says where the holes come from."""
    path = tmp_path / "snap.pcap"
    capture_conversation(path, [(DEMO, answer_bytes(tmp_path))], 3, extra=["-s", str(snaplen)])
    cut, kept = _cut_records(path)
    assert cut > 0 and kept == snaplen
    warning = (
        f"ripple: {path}: warning: {cut} packets cut short when captured (at most {kept} bytes kept of each): "
        "what they lost is missing from their streams (capture with tcpdump -s 0)\n"
    )
    r = run_cli(["decode", str(path)], width=1000)
    if snaplen == 72:
        assert (r.code, r.text, r.stderr) == (0, "", warning)
        ends = connections(path)
        assert "no protocol recognised in the 6 bytes before a hole" in ends["1:c2s"]
    else:
        assert r.code == 1
        assert r.stderr.startswith(warning)
        assert "bytes missing from the stream" in r.stderr
