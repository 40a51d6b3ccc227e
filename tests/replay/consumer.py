"""A Ripple consumer for the replay tests: real sockets on 127.0.0.1, in a
thread.  It reads envelopes with the codec, answers the first Handshake of
each connection with a Schema_negotiation, and records every envelope it
receives (bytes and arrival time)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from dataclasses import dataclass, field
from types import TracebackType

from ripple_cli.codec.envelope import build_envelope, frame_bytes
from ripple_cli.codec.messages import (
    FIXED_FINGERPRINTS,
    HANDSHAKE,
    SCHEMA_NEGOTIATION,
    DeltaMode,
    SchemaNegotiation,
    write_payload,
)
from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.ripple.decoder import StreamDecoder
from ripple_cli.protocols.ripple.message import Message


def negotiation(ok: bool, errors: tuple[str, ...] = (), seq: int = 1) -> bytes:
    payload = write_payload(SchemaNegotiation(ok, tuple(e.encode() for e in errors)))
    fp = FIXED_FINGERPRINTS[SCHEMA_NEGOTIATION]
    return build_envelope(SCHEMA_NEGOTIATION, seq, time.time_ns(), fp, payload)


@dataclass
class Received:
    envelopes: list[bytes] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)  # time.monotonic() of each
    problems: list[Problem] = field(default_factory=list)
    closed_by_us: bool = False

    @property
    def duration(self) -> float:
        """From the first message after the Handshake to the last."""
        return self.arrivals[-1] - self.arrivals[1] if len(self.arrivals) > 2 else 0.0


@dataclass
class Behaviour:
    ok: bool = True  # the answer to the Handshake
    errors: tuple[str, ...] = ()
    answer: bool = True  # False: never answer (the replay times out)
    close_after: int | None = None  # close the connection after this many envelopes


def serve(sock: socket.socket, how: Behaviour, into: Received) -> None:
    """Read one connection to its end, answering its Handshake."""
    decoder = StreamDecoder(None, DeltaMode.RAW)
    answered = False
    with sock:
        while True:
            try:
                data = sock.recv(1 << 16)
            except ConnectionResetError:
                return
            events = decoder.feed(data) if data else decoder.finish()
            now = time.monotonic()
            for ev in events:
                if isinstance(ev, Problem):
                    into.problems.append(ev)
                    continue
                assert isinstance(ev, Message)
                into.envelopes.append(frame_bytes(ev.frame))
                into.arrivals.append(now)
                if ev.frame.tag == HANDSHAKE and not answered and how.answer:
                    answered = True
                    sock.sendall(negotiation(how.ok, how.errors))
                    if not how.ok:
                        into.closed_by_us = True
                        return  # the protocol: a refusal closes the connection
                if how.close_after is not None and len(into.envelopes) >= how.close_after:
                    into.closed_by_us = True
                    return
            if not data:
                return


class Consumer:
    """Listens on 127.0.0.1 (a free port) and serves `connections`
    connections one after another; `received[i]` is connection i's."""

    def __init__(self, connections: int = 1, how: Behaviour | None = None) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.how = how or Behaviour()
        self.received: list[Received] = [Received() for _ in range(connections)]
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _run(self) -> None:
        try:
            for rec in self.received:
                conn, _ = self.listener.accept()
                serve(conn, self.how, rec)
        except BaseException as e:
            self.error = e
        finally:
            self.listener.close()

    def __enter__(self) -> Consumer:
        self._thread.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        if et is not None:
            # The test failed: wake the accept (shutdown does, close does not).
            with contextlib.suppress(OSError):
                self.listener.shutdown(socket.SHUT_RDWR)
        self._thread.join(30 if et is None else 2)
        assert not self._thread.is_alive(), "the consumer did not finish"
        if et is None and self.error is not None:
            raise self.error


def connect_and_serve(port: int, how: Behaviour | None = None, timeout: float = 10.0) -> Received:
    """The consumer side of --listen: connect (retrying until the replay
    listens), then serve the connection."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            sock = socket.create_connection(("127.0.0.1", port))
            break
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    rec = Received()
    serve(sock, how or Behaviour(), rec)
    return rec
