"""Proxy mode: the relay process as a source of capture events.

Each proxied connection is a stream pair for `Demux`: StreamId(n, client =
the accepted peer, server = the upstream's address, from_client = True for
client -> upstream).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, cast

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
from ripple_cli.errors import InputUnreadable
from ripple_cli.tap.record import Packet
from ripple_cli.tap.records import (
    DATA,
    END,
    ERROR,
    GAP,
    GAP_SIZE,
    LISTENING,
    NOTE,
    OPEN,
    STOPPED,
    Record,
    read_records,
)
from ripple_cli.tap.relay import STOP_BYTE, RelayConfig

_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)
_STOP_WAIT = 10.0  # seconds for the relay to close its connections and exit


@dataclass(frozen=True)
class HostPort:
    host: str | None  # None: every interface (listening only)
    port: int

    def __str__(self) -> str:
        host = self.host or "*"
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"


def parse_hostport(text: str) -> HostPort:
    """`127.0.0.1:9000`, `[::1]:9000`, `localhost:9000`, `:9000` (every
    interface).  Raises ValueError."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{text!r} is not HOST:PORT")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"{text!r}: write an IPv6 address in brackets, [::1]:{port}")
    return HostPort(host or None, int(port))


class ProxySource:
    """Starts the relay; its records become capture events."""

    synthesize = True  # -w records frames synthesized from the stream events
    holds_backlog = True  # the relay holds copies for the reader, up to --buffer

    def __init__(self, listen: HostPort, upstream: HostPort, max_connections: int, buffer: int) -> None:
        if upstream.host is None:
            raise ValueError("the upstream needs a host")
        self.name = "tap"
        self.config = RelayConfig(listen.host, listen.port, upstream.host, upstream.port, max_connections, buffer)
        self.upstream = upstream
        self._proc: subprocess.Popen[bytes] | None = None
        self._records: Iterator[Record] | None = None
        self.addresses: list[str] = []

    def start(self) -> str:
        """Starts the relay and waits until it listens.  Returns what the
        status line says; raises InputUnreadable when it cannot listen, or
        when the upstream's name does not resolve (the C relay resolves it
        once, at its start: no connection could ever be forwarded)."""
        try:
            socket.getaddrinfo(self.config.upstream_host, self.config.upstream_port, type=socket.SOCK_STREAM)
        except socket.gaierror as e:
            raise InputUnreadable(f"tap: cannot resolve the upstream {self.upstream}: {e.strerror}") from None
        env = dict(os.environ)
        # The relay imports ripple_cli from wherever this one was imported.
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "ripple_cli.tap.relay", self.config.to_json()],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            process_group=0,  # out of the terminal's foreground group: Ctrl-C reaches the tap only
        )
        assert self._proc.stdout is not None
        self._records = read_records(cast(BinaryIO, self._proc.stdout))
        first = next(self._records, None)
        if first is None or first.type != LISTENING:
            self.close()
            self._proc.stdout.close()
            if first is not None and first.type == ERROR:
                raise InputUnreadable(first.payload.decode("utf-8", "replace"))
            raise InputUnreadable(f"tap: the relay process did not start (exit status {self._proc.returncode})")
        self.addresses = [str(a) for a in first.json()["addresses"]]
        return f"listening on {', '.join(self.addresses)}, forwarding to {self.upstream}"

    def events(self, packet: Callable[[Packet], None] | None = None) -> Iterator[CaptureEvent]:
        """The relay's records as capture events, until it stops."""
        assert self._records is not None and self._proc is not None
        try:
            yield from self._events(self._records)
        finally:
            if self._proc.stdout is not None:
                self._proc.stdout.close()

    def _events(self, records: Iterator[Record]) -> Iterator[CaptureEvent]:
        streams: dict[int, tuple[StreamId, StreamId]] = {}
        ended: set[tuple[int, bool]] = set()
        for rec in records:
            t = rec.time_ns
            if rec.type == DATA:
                yield StreamData(streams[rec.conn][0 if rec.c2s else 1], rec.payload, t)
            elif rec.type == GAP:
                yield StreamGap(streams[rec.conn][0 if rec.c2s else 1], GAP_SIZE.unpack(rec.payload)[0], t)
            elif rec.type == OPEN:
                info = rec.json()
                client, server = Endpoint(*info["client"]), Endpoint(*info["server"])
                pair = (StreamId(rec.conn, client, server, True), StreamId(rec.conn, client, server, False))
                streams[rec.conn] = pair
                yield StreamStart(pair[0], t, True)
                yield StreamStart(pair[1], t, True)
            elif rec.type == END:
                pair = streams[rec.conn]
                yield StreamEnd(pair[0 if rec.c2s else 1], t, rec.payload.decode("utf-8", "replace"))
                ended.add((rec.conn, rec.c2s))
                if (rec.conn, not rec.c2s) in ended:
                    del streams[rec.conn]
                    ended -= {(rec.conn, True), (rec.conn, False)}
            elif rec.type == NOTE:
                info = rec.json()
                yield CaptureNote(None, t, str(info["kind"]), str(info["detail"]), bool(info.get("error")))
            elif rec.type == STOPPED:
                return
        code = self._proc.wait() if self._proc is not None else None
        yield CaptureNote(
            None, time.time_ns(), "relay_died", f"the relay process ended unexpectedly (exit status {code})", True
        )

    def stop(self) -> None:
        """Asks the relay to close its connections and stop; `events` ends after."""
        proc = self._proc
        if proc is not None and proc.stdin is not None and not proc.stdin.closed:
            with contextlib.suppress(OSError):
                proc.stdin.write(STOP_BYTE)
                proc.stdin.flush()
            with contextlib.suppress(OSError):
                proc.stdin.close()

    def abandon(self) -> None:
        """The tap cannot go on (its decoder failed): the relay is left to
        forward the connections already open until they close, unwatched."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()  # without STOP_BYTE: the relay is orphaned, not stopped

    def close(self) -> None:
        proc = self._proc
        if proc is None:
            return
        self.stop()
        try:
            proc.wait(timeout=_STOP_WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def end_notes(self) -> list[str]:
        return []
