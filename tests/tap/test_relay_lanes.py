"""The relay process on its own, in both lanes: the C event loop
(_relayloop.c) and the asyncio one (RIPPLE_PURE=1).  Each scenario runs on
real sockets and checks the records the tap would read, exactly (times and
ephemeral ports aside), and that both lanes give the same ones."""

from __future__ import annotations

import os
import random
import resource
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, cast

import pytest
from tapkit import listener, recv_all, serve_once

from ripple_cli.tap.records import (
    DATA,
    END,
    GAP,
    GAP_SIZE,
    LISTENING,
    NOTE,
    OPEN,
    STOPPED,
    Record,
    read_records,
)
from ripple_cli.tap.relay import STOP_BYTE, RelayConfig, c_loop

ROOT = Path(__file__).resolve().parents[2]
LANES = ["c", "asyncio"]
FLIP = bytes(b ^ 0x5A for b in range(256))
NAMES = {LISTENING: "LISTENING", OPEN: "OPEN", DATA: "DATA", GAP: "GAP", END: "END", NOTE: "NOTE", STOPPED: "STOPPED"}


def _lane_env(lane: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RIPPLE_PURE"}
    if lane == "asyncio":
        env["RIPPLE_PURE"] = "1"
    elif c_loop() is None:
        pytest.skip("the C relay loop is not built here")
    return env


@dataclass
class RelayRun:
    proc: subprocess.Popen[bytes]
    port: int
    records: list[Record] = field(default_factory=list)
    reader: threading.Thread | None = None

    def stop(self) -> list[Record]:
        """Asks the relay to stop and closes its stdin, as the tap does; its records to the end."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(STOP_BYTE)
        self.proc.stdin.close()
        assert self.proc.wait(30) == 0
        if self.reader is not None:
            self.reader.join(30)
        return self.records

    def wait_for(self, cond: Callable[[list[Record]], bool], what: str) -> None:
        deadline = time.monotonic() + 20
        while not cond(self.records):
            assert time.monotonic() < deadline, f"timed out waiting for {what}: {self.summary()}"
            time.sleep(0.01)

    def summary(self) -> list[tuple[str, int, bool, bytes]]:
        return [(NAMES[r.type], r.conn, r.c2s, r.payload[:40]) for r in self.records]


def _spawn(cfg: RelayConfig, lane: str, nofile: tuple[int, int] | None = None) -> subprocess.Popen[bytes]:
    """The relay process as the tap starts it (`nofile`: its limit on open files)."""
    return subprocess.Popen(
        [sys.executable, "-m", "ripple_cli.tap.relay", cfg.to_json()],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=_lane_env(lane),
        cwd=ROOT,
        preexec_fn=None if nofile is None else lambda: resource.setrlimit(resource.RLIMIT_NOFILE, nofile),
    )


@contextmanager
def relay(
    lane: str,
    upstream_port: int,
    *,
    buffer: int = 64 << 20,
    max_connections: int = 16,
    read: bool = True,
    pace: float = 0.0,
    nofile: tuple[int, int] | None = None,
) -> Iterator[RelayRun]:
    """The relay process, listening on a free port of 127.0.0.1.  With
    read=False nobody reads its records until `start_reading`; with `pace`
    the reader sleeps that long after each record (a tap that lags)."""
    cfg = RelayConfig("127.0.0.1", 0, "127.0.0.1", upstream_port, max_connections, buffer)
    proc = _spawn(cfg, lane, nofile)
    assert proc.stdout is not None
    records = read_records(cast(BinaryIO, proc.stdout))
    first = next(records)
    assert first.type == LISTENING, first
    (address,) = first.json()["addresses"]
    run = RelayRun(proc, int(address.rsplit(":", 1)[1]))

    def pump() -> None:
        for rec in records:
            run.records.append(rec)
            if pace:
                time.sleep(pace)

    run.reader = threading.Thread(target=pump, daemon=True)
    if read:
        run.reader.start()
    try:
        yield run
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _wait(result: dict[str, object]) -> None:
    deadline = time.monotonic() + 20
    while "done" not in result:
        assert time.monotonic() < deadline, "the upstream never finished"
        time.sleep(0.01)


def _shape(records: list[Record], client_port: int, upstream_port: int) -> list[tuple[str, int, bool, object]]:
    """The records with DATA runs of one direction joined (chunking is the
    kernel's), ports and times left out."""
    out: list[tuple[str, int, bool, object]] = []
    for r in records:
        name = NAMES[r.type]
        payload: object = r.payload
        if r.type == DATA and out and out[-1][:3] == ("DATA", r.conn, r.c2s):
            out[-1] = ("DATA", r.conn, r.c2s, cast(bytes, out[-1][3]) + r.payload)
            continue
        if r.type == OPEN:
            info = r.json()
            payload = (info["client"] == ["127.0.0.1", client_port], info["server"] == ["127.0.0.1", upstream_port])
        elif r.type == NOTE:
            info = r.json()
            payload = (info["kind"], info["detail"].replace(str(client_port), "CLIENT"), info["error"])
        out.append((name, r.conn, r.c2s, payload))
    return out


def _by_direction(records: list[Record]) -> dict[bool, bytes]:
    joined = {True: b"", False: b""}
    for r in records:
        if r.type == DATA:
            joined[r.c2s] += r.payload
    return joined


@pytest.mark.parametrize("lane", LANES)
def test_a_conversation_half_closed_each_way(lane: str) -> None:
    """The client sends and FINs; the upstream answers after the FIN, then
    FINs: both directions arrive intact, and the records say so in order."""
    request = random.Random(1).randbytes(300_000)
    answer = random.Random(2).randbytes(200_000)

    def upstream(conn: socket.socket, result: dict[str, object]) -> None:
        result["value"] = recv_all(conn)  # ends at the client's FIN
        conn.sendall(answer)

    port, result = serve_once(upstream)
    with relay(lane, port) as run:
        with socket.create_connection(("127.0.0.1", run.port)) as c:
            client_port = c.getsockname()[1]
            c.sendall(request)
            c.shutdown(socket.SHUT_WR)
            assert recv_all(c) == answer
        _wait(result)
        assert result["value"] == request
        run.wait_for(lambda rs: sum(r.type == END for r in rs) == 2, "both ends")
        records = run.stop()
    assert _shape(records, client_port, port) == [
        ("OPEN", 1, False, (True, True)),
        ("DATA", 1, True, request),
        ("END", 1, True, b"fin"),
        ("DATA", 1, False, answer),
        ("END", 1, False, b"fin"),
        ("STOPPED", 0, False, b""),
    ]


@pytest.mark.parametrize("lane", LANES)
def test_a_client_reset_ends_both_directions_and_resets_the_upstream(lane: str) -> None:
    def upstream(conn: socket.socket, result: dict[str, object]) -> None:
        result["value"] = recv_all(conn)  # raises ConnectionResetError at the relay's RST

    port, result = serve_once(upstream)
    with relay(lane, port) as run:
        c = socket.create_connection(("127.0.0.1", run.port))
        client_port = c.getsockname()[1]
        c.sendall(b"before the reset")
        run.wait_for(lambda rs: any(r.type == DATA for r in rs), "the data")
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()
        _wait(result)
        assert isinstance(result.get("error"), ConnectionResetError), result
        run.wait_for(lambda rs: sum(r.type == END for r in rs) == 2, "both ends")
        records = run.stop()
    assert _shape(records, client_port, port) == [
        ("OPEN", 1, False, (True, True)),
        ("DATA", 1, True, b"before the reset"),
        ("END", 1, True, b"rst"),
        ("END", 1, False, b"rst"),
        ("STOPPED", 0, False, b""),
    ]


def _tcp_state(s: socket.socket) -> int:
    return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0]


TCP_CLOSE = 7


@pytest.mark.parametrize("lane", LANES)
@pytest.mark.parametrize("who", ["client", "upstream"])
def test_a_reset_after_a_fin_resets_the_other_side(lane: str, who: str) -> None:
    """One side sends its FIN, then resets while the other side, still
    open, is quiet: the relay no longer read the first side, so the reset
    reached nobody, and the other side stayed in CLOSE_WAIT with no error
    (its slot under --max-connections held).  It is reset now, as without
    the tap (where its socket is closed, SO_ERROR EPIPE)."""
    srv = listener()
    with relay(lane, srv.getsockname()[1]) as run:
        c = socket.create_connection(("127.0.0.1", run.port))
        client_port = c.getsockname()[1]
        u, _ = srv.accept()
        first, other = (c, u) if who == "client" else (u, c)
        first.sendall(b"last words")
        first.shutdown(socket.SHUT_WR)
        other.settimeout(20)
        assert recv_all(other) == b"last words"
        run.wait_for(lambda rs: any(r.type == END for r in rs), "the FIN")
        first.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        first.close()
        run.wait_for(lambda rs: sum(r.type == END for r in rs) == 2, "the reset")
        deadline = time.monotonic() + 20
        while _tcp_state(other) != TCP_CLOSE:
            assert time.monotonic() < deadline, f"the {who}'s reset never reached the other side"
            time.sleep(0.01)
        assert other.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0
        records = run.stop()
    c2s = who == "client"
    assert _shape(records, client_port, srv.getsockname()[1]) == [
        ("OPEN", 1, False, (True, True)),
        ("DATA", 1, c2s, b"last words"),
        ("END", 1, c2s, b"fin"),
        ("END", 1, not c2s, b"rst"),
        ("STOPPED", 0, False, b""),
    ]
    other.close()
    srv.close()


@pytest.mark.parametrize("lane", LANES)
def test_an_unreachable_upstream_is_a_note_and_the_client_is_reset(lane: str) -> None:
    srv = listener()
    closed_port = int(srv.getsockname()[1])
    srv.close()  # nothing listens there now
    with relay(lane, closed_port) as run:
        c = socket.create_connection(("127.0.0.1", run.port))
        client_port = c.getsockname()[1]
        with pytest.raises(ConnectionResetError):
            c.recv(10)
        c.close()
        run.wait_for(lambda rs: any(r.type == NOTE for r in rs), "the note")
        records = run.stop()
    detail = (
        f"connection from 127.0.0.1:CLIENT closed: upstream 127.0.0.1:{closed_port} unreachable: Connection refused"
    )
    assert _shape(records, client_port, closed_port) == [
        ("NOTE", 0, False, ("upstream_unreachable", detail, False)),
        ("STOPPED", 0, False, b""),
    ]


@pytest.mark.parametrize("lane", LANES)
def test_connections_beyond_the_limit_are_refused_with_a_note(lane: str) -> None:
    def upstream(conn: socket.socket, result: dict[str, object]) -> None:
        result["value"] = recv_all(conn)

    port, result = serve_once(upstream)
    with relay(lane, port, max_connections=1) as run:
        first = socket.create_connection(("127.0.0.1", run.port))
        first_port = first.getsockname()[1]
        run.wait_for(lambda rs: any(r.type == OPEN for r in rs), "the first connection")
        second = socket.create_connection(("127.0.0.1", run.port))
        second_port = second.getsockname()[1]
        assert second.recv(10) == b""  # closed at once
        second.close()
        run.wait_for(lambda rs: any(r.type == NOTE for r in rs), "the note")
        first.shutdown(socket.SHUT_WR)
        assert first.recv(10) == b""
        first.close()
        _wait(result)
        run.wait_for(lambda rs: sum(r.type == END for r in rs) == 2, "both ends")
        records = run.stop()
    detail = "connection from 127.0.0.1:CLIENT refused: 1 connections open (--max-connections)"
    assert _shape(records, second_port, port)[1:] == [
        ("NOTE", 0, False, ("refused", detail, False)),
        ("END", 1, True, b"fin"),
        ("END", 1, False, b"fin"),
        ("STOPPED", 0, False, b""),
    ]
    assert _shape(records, first_port, port)[0] == ("OPEN", 1, False, (True, True))


def _received(s: socket.socket, got: bytearray) -> str:
    """Reads `s` into `got` to its end: how it ended ("fin" or "rst")."""
    try:
        while chunk := s.recv(1 << 16):
            got += chunk
    except ConnectionResetError:
        return "rst"
    return "fin"


@pytest.mark.parametrize("lane", LANES)
def test_stopping_cuts_open_connections_and_says_stopped_last(lane: str) -> None:
    """The tap stops while both directions are open: each side is reset.
    A FIN would tell each peer that the other had ended its stream, which
    neither did (the relay used to do that: a client still being sent to
    got a prefix and what looked like the server's end)."""
    got = bytearray()

    def upstream(conn: socket.socket, result: dict[str, object]) -> None:
        result["end"] = _received(conn, got)

    port, result = serve_once(upstream)
    with relay(lane, port) as run:
        c = socket.create_connection(("127.0.0.1", run.port))
        client_port = c.getsockname()[1]
        c.sendall(b"still open")
        run.wait_for(lambda rs: any(r.type == DATA for r in rs), "the data")
        records = run.stop()
        assert _received(c, bytearray()) == "rst"
        c.close()
        _wait(result)
    assert (result["end"], bytes(got)) == ("rst", b"still open")
    assert _shape(records, client_port, port) == [
        ("OPEN", 1, False, (True, True)),
        ("DATA", 1, True, b"still open"),
        ("END", 1, True, b"tap stopped"),
        ("END", 1, False, b"tap stopped"),
        ("STOPPED", 0, False, b""),
    ]


@pytest.mark.parametrize("lane", LANES)
def test_stopping_writes_out_a_direction_that_ended(lane: str) -> None:
    """The upstream sent its answer and its FIN, which the client has not
    read yet when the tap stops: the client still gets all of it, then the
    FIN; the upstream, whose client never ended, is reset."""
    answer = random.Random(3).randbytes(256 << 10)

    def upstream(conn: socket.socket, result: dict[str, object]) -> None:
        conn.sendall(answer)
        conn.shutdown(socket.SHUT_WR)
        result["end"] = _received(conn, bytearray())

    port, result = serve_once(upstream)
    with relay(lane, port) as run:
        c = socket.create_connection(("127.0.0.1", run.port))
        run.wait_for(lambda rs: any(r.type == END for r in rs), "the upstream's FIN")
        run.stop()
        got = bytearray()
        assert _received(c, got) == "fin"
        c.close()
        _wait(result)
    assert (len(got), bytes(got) == answer, result["end"]) == (len(answer), True, "rst")


def _echo(payload: bytes) -> Callable[[socket.socket, dict[str, object]], None]:
    """An upstream that echoes what comes as it comes, and checks it is `payload`."""

    def upstream(conn: socket.socket, result: dict[str, object]) -> None:
        got = bytearray()
        while chunk := conn.recv(1 << 20):
            got += chunk
            conn.sendall(chunk)
        assert bytes(got) == payload

    return upstream


def _through(port: int, payload: bytes, piece: int = 0) -> bytes:
    """`payload` sent to the relay on `port` (whole, or `piece` bytes at a
    time), then a FIN; what came back."""
    back = bytearray()
    with socket.create_connection(("127.0.0.1", port)) as c:

        def drain() -> None:
            while chunk := c.recv(1 << 20):
                back.extend(chunk)

        t = threading.Thread(target=drain)
        t.start()
        step = piece or len(payload)
        for at in range(0, len(payload), step):
            c.sendall(payload[at : at + step])
        c.shutdown(socket.SHUT_WR)
        t.join(60)
    return bytes(back)


def _copies(records: list[Record], c2s: bool, size: int) -> tuple[list[tuple[int, bytes]], int]:
    """One direction of connection 1 as its records tell it: each copy at
    its place in the traffic, and the bytes the gaps held."""
    copies, at, dropped = [], 0, 0
    for r in records:
        if r.conn != 1 or r.c2s != c2s:
            continue
        if r.type == DATA:
            copies.append((at, r.payload))
            at += len(r.payload)
        elif r.type == GAP:
            (n,) = GAP_SIZE.unpack(r.payload)
            at += n
            dropped += n
    assert at == size
    return copies, dropped


@pytest.mark.parametrize("lane", LANES)
def test_copies_beyond_the_buffer_become_gaps_of_their_exact_size(lane: str) -> None:
    """Nobody reads the records while 12 MiB pass each way: the traffic is
    intact, and per direction the copies and the gaps add up to every byte,
    the gaps told before the next copy or the end."""
    payload = random.Random(3).randbytes(12 << 20)
    port, result = serve_once(_echo(payload))
    with relay(lane, port, buffer=256 << 10, read=False) as run:
        assert _through(run.port, payload) == payload  # forwarded whole while the records waited
        _wait(result)
        assert "error" not in result, result
        assert run.reader is not None
        run.reader.start()
        run.wait_for(lambda rs: sum(r.type == END for r in rs) == 2, "both ends")
        records = run.stop()
    for c2s in (True, False):
        mine = [r for r in records if r.conn == 1 and r.c2s == c2s and r.type in (DATA, GAP, END)]
        copied = sum(len(r.payload) for r in mine if r.type == DATA)
        dropped = sum(GAP_SIZE.unpack(r.payload)[0] for r in mine if r.type == GAP)
        assert copied + dropped == len(payload)
        assert dropped > 0 and mine[-1].type == END
    # What was copied is the traffic's own bytes at their place.
    for c2s in (True, False):
        copies, _dropped = _copies(records, c2s, len(payload))
        assert all(data == payload[at : at + len(data)] for at, data in copies)


@pytest.mark.parametrize("lane", LANES)
def test_a_lagging_tap_gets_every_copy_at_its_place(lane: str) -> None:
    """The tap reads its records slowly while 8 MiB pass each way through a
    1 MiB buffer: the relay's records wait, are written from wherever the
    last write stopped, and (in the C loop) wrap around the ring that holds
    them.  How often depends on the machine; whatever it was, each copy is
    the traffic's own bytes at its place, the gaps are exact, and the
    traffic is intact."""
    payload = random.Random(5).randbytes(8 << 20)
    port, result = serve_once(_echo(payload))
    with relay(lane, port, buffer=1 << 20, pace=0.0002) as run:
        assert _through(run.port, payload, piece=64 << 10) == payload  # in pieces: copies come and go
        _wait(result)
        assert "error" not in result, result
        run.wait_for(lambda rs: sum(r.type == END for r in rs) == 2, "both ends")
        records = run.stop()
    for c2s in (True, False):
        copies, dropped = _copies(records, c2s, len(payload))
        assert copies, "no copy reached the tap"
        assert all(data == payload[at : at + len(data)] for at, data in copies)
        assert sum(len(data) for _at, data in copies) + dropped == len(payload)


def test_both_lanes_give_the_same_records_for_many_connections() -> None:
    """Twenty connections at once, each a different size, in both lanes:
    the same connections, the same bytes each way, the same endings."""

    def one_lane(lane: str) -> list[tuple[bytes, bytes, bytes, bytes]]:
        srv = listener()
        port = int(srv.getsockname()[1])

        def serve() -> None:
            while True:
                try:
                    conn, _ = srv.accept()
                except OSError:
                    return

                def echo(conn: socket.socket = conn) -> None:
                    with conn:
                        while chunk := conn.recv(1 << 16):
                            conn.sendall(chunk.translate(FLIP))  # bytewise: the same whatever the chunking

                threading.Thread(target=echo, daemon=True).start()

        threading.Thread(target=serve, daemon=True).start()
        # All twenty may be open at once (on a busy machine they are): the
        # default limit of 16 would refuse some, by timing.
        with relay(lane, port, max_connections=20) as run:
            ports: dict[int, bytes] = {}

            def client(i: int) -> None:
                data = random.Random(i).randbytes(1000 * (i + 1) ** 2)
                with socket.create_connection(("127.0.0.1", run.port)) as c:
                    ports[c.getsockname()[1]] = data
                    c.sendall(data)
                    c.shutdown(socket.SHUT_WR)
                    recv_all(c)

            threads = [threading.Thread(target=client, args=(i,)) for i in range(20)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            run.wait_for(lambda rs: sum(r.type == END for r in rs) == 40, "every end")
            records = run.stop()
        srv.close()
        by_conn: dict[int, list[Record]] = {}
        for r in records:
            if r.conn:
                by_conn.setdefault(r.conn, []).append(r)
        out = []
        for rs in by_conn.values():
            client_port = rs[0].json()["client"][1]
            joined = _by_direction(rs)
            ends = b",".join(r.payload for r in rs if r.type == END)
            assert joined[True] == ports[client_port]
            assert joined[False] == ports[client_port].translate(FLIP)
            out.append(
                (joined[True], joined[False], ends, "".join(NAMES[r.type][0] for r in rs if r.type != DATA).encode())
            )
        assert len(out) == 20
        return sorted(out)

    lanes = [lane for lane in LANES if lane == "asyncio" or c_loop() is not None]
    results = [one_lane(lane) for lane in lanes]
    assert all(r == results[0] for r in results)


@pytest.mark.parametrize("lane", LANES)
def test_records_to_anything_but_a_pipe_is_one_line_and_exit_2(lane: str, tmp_path: Path) -> None:
    cfg = RelayConfig("127.0.0.1", 0, "127.0.0.1", 1, 1, 1000)
    with open(tmp_path / "records", "wb") as out:
        r = subprocess.run(
            [sys.executable, "-m", "ripple_cli.tap.relay", cfg.to_json()],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.PIPE,
            env=_lane_env(lane),
            cwd=ROOT,
            timeout=30,
            check=False,
        )
    assert r.returncode == 2
    assert r.stderr == b"ripple: tap: relay: its stdout must be a pipe (ripple tap starts it)\n"


def _soft_nofile(pid: int) -> int:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError("no open files limit")


def _clients_through(run: RelayRun, n: int) -> list[socket.socket]:
    """n clients connected through the relay, each having sent one byte."""
    clients = []
    for _ in range(n):
        c = socket.create_connection(("127.0.0.1", run.port))
        c.sendall(b"x")
        clients.append(c)
    return clients


@pytest.mark.parametrize("lane", LANES)
def test_the_relay_raises_its_soft_descriptor_limit(lane: str) -> None:
    """Two descriptors a connection: under the usual soft limit of 1024 the
    default --max-connections of 1024 relayed about 500 and reset the rest
    as "upstream unreachable: Too many open files".  The relay raises its
    soft limit toward the hard one, as servers do."""
    srv = listener()
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: [accepted.append(srv.accept()[0]) for _ in range(300)], daemon=True).start()
    with relay(lane, srv.getsockname()[1], max_connections=300, nofile=(128, 4096)) as run:
        assert _soft_nofile(run.proc.pid) == 2 * 300 + 64
        clients = _clients_through(run, 300)
        run.wait_for(lambda rs: sum(r.type == DATA for r in rs) >= 300, "a byte of every connection")
        run.wait_for(lambda _rs: len(accepted) == 300, "the upstream to accept every connection")
        got = b"".join(s.recv(1) for s in accepted)
        records = run.stop()
    assert (len(accepted), got) == (300, b"x" * 300)
    assert sum(r.type == OPEN for r in records) == 300
    assert [r for r in records if r.type == NOTE] == []
    for s in [*clients, *accepted, srv]:
        s.close()


@pytest.mark.parametrize("lane", LANES)
def test_a_hard_descriptor_limit_short_of_max_connections_is_said(lane: str) -> None:
    srv = listener()
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: [accepted.append(srv.accept()[0]) for _ in range(10)], daemon=True).start()
    with relay(lane, srv.getsockname()[1], max_connections=200, nofile=(100, 100)) as run:
        run.wait_for(lambda rs: any(r.type == NOTE for r in rs), "the note")
        clients = _clients_through(run, 10)
        run.wait_for(lambda rs: sum(r.type == DATA for r in rs) >= 10, "a byte of every connection")
        records = run.stop()
    notes = [r.json() for r in records if r.type == NOTE]
    assert notes == [
        {
            "kind": "fd_limit",
            "detail": "--max-connections 200 needs 464 open files, and the limit is 100 (ulimit -n): "
            "about 18 connections can be relayed at once, later ones wait or are reset",
            "error": False,
        }
    ]
    for s in [*clients, *accepted, srv]:
        s.close()


@pytest.mark.parametrize("lane", LANES)
def test_port_0_on_every_interface_is_one_port(lane: str) -> None:
    """`--listen :0` listens on IPv4 and IPv6: one port chosen for both
    (each family used to get its own, and the status line named two)."""
    if not socket.has_ipv6:
        pytest.skip("no IPv6 here")
    srv = listener()  # an upstream that answers: else each connection is reset at once, maybe before connect returns
    proc = _spawn(RelayConfig(None, 0, "127.0.0.1", srv.getsockname()[1], 16, 1 << 20), lane)
    try:
        assert proc.stdout is not None
        first = next(read_records(cast(BinaryIO, proc.stdout)))
        assert first.type == LISTENING, first
        addresses = first.json()["addresses"]
        hosts = [a.rsplit(":", 1)[0] for a in addresses]
        ports = {a.rsplit(":", 1)[1] for a in addresses}
        assert (sorted(hosts), len(ports)) == (["0.0.0.0", "[::]"], 1)
        (port,) = ports
        for host in ("127.0.0.1", "::1"):  # both families take connections on it
            socket.create_connection((host, int(port)), timeout=10).close()
    finally:
        proc.kill()
        proc.wait()
        srv.close()
