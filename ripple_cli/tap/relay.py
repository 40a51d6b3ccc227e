"""The tap's forwarding process: a transparent TCP relay that hands a copy
of what it forwards to the tap, and never waits for the tap.

Why a process and not a thread: CPython runs one thread at a time, and a
thread that wants the interpreter back after each socket call waits for a
busy decoding thread to yield it (up to the switch interval).  Measured on
this project's 2-core machine, an asyncio relay forwarding through loopback
fell from 770 to 220 MB/s next to one busy thread.  In a process of its own
the relay runs its event loop and nothing else.

For each chunk it forwards the bytes first, then writes a copy to its
stdout (the tap reads it: see records.py).  The copies wait in the pipe
transport's buffer; past `buffer` bytes a copy is dropped and the tap is
told a gap of that many bytes instead.  The tap stops the relay by writing
STOP_BYTE to the relay's stdin and closing it.  When the tap goes away
without that (killed, or its decoder failed), the relay is orphaned: it
stops listening and writing copies, and forwards the connections already
open until they close, so that a failure of the decoder never costs the
traffic it watches.

Closing follows a plain relay: a FIN from one side is passed on as a
shutdown(SHUT_WR) to the other, the sockets close once both directions are
done; a reset or an error on one side resets the other.

The loop itself comes in two lanes with the same records and closing
rules: `_relayloop` (C, built from _relayloop.c next to this file, used when
it is there) and the asyncio loop below (RIPPLE_PURE=1, or where the C
extension could not be built).  The tests run the tap through both.

    python -m ripple_cli.tap.relay CONFIG_JSON
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import json
import os
import resource
import signal
import socket
import stat
import struct
import sys
import time
from dataclasses import asdict, dataclass
from types import ModuleType
from typing import Any, cast

from ripple_cli.codec.fast import pure_requested
from ripple_cli.tap.records import (
    DATA,
    END,
    ERROR,
    GAP,
    GAP_SIZE,
    HEADER,
    LISTENING,
    NOTE,
    OPEN,
    STOPPED,
    pack,
    pack_json,
)

_F_SETPIPE_SZ = 1031  # Linux fcntl: a bigger pipe means fewer wake-ups of the tap
_PIPE_SIZE = 1 << 20
_WRITE_HIGH_WATER = 1 << 20  # per socket: read from one side while the other takes this much
STOP_BYTE = b"S"  # on the relay's stdin: the tap asks it to stop (see above)
_ORPHAN_POLL = 0.05  # seconds between looks at the connections an orphaned relay still forwards
# asyncio lane: seconds between looks for a reset of a side whose FIN came
# (a selector cannot ask epoll for errors alone, as the C lane does).
_HALF_CLOSED_POLL = 0.1
_STOP_GRACE = 2.0  # seconds for open connections to flush and close when the tap stops
_DRAIN_WAIT = 5.0  # seconds for the tap to take the last records
_FLUSH_MS = 2  # C lane: copies wait at most this long for more, so that the tap wakes per batch
_BACKLOG = 1024


@dataclass(frozen=True)
class RelayConfig:
    listen_host: str | None  # None: every interface
    listen_port: int
    upstream_host: str
    upstream_port: int
    max_connections: int
    buffer: int  # bytes of copies waiting for the tap before copies are dropped

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> RelayConfig:
        return cls(**json.loads(text))


def _hostport(addr: Any) -> list[Any]:
    return [str(addr[0]), int(addr[1])]


def _text(addr: list[Any]) -> str:
    host, port = addr
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class Sink:
    """Records to the tap through the pipe transport, the copies bounded."""

    def __init__(self, transport: asyncio.WriteTransport, limit: int) -> None:
        self.transport = transport
        self.limit = limit
        self._held: dict[tuple[int, bool], tuple[int, int]] = {}  # dropped and not yet told: (bytes, time)
        transport.set_write_buffer_limits(high=max(limit, 1))

    def control(self, record: bytes) -> None:
        # Always written: they are small and bounded by the connections.
        if not self.transport.is_closing():
            self.transport.write(record)

    def data(self, conn: int, c2s: bool, t: int, data: bytes) -> None:
        tr = self.transport
        if tr.is_closing():
            return
        key = (conn, c2s)
        if tr.get_write_buffer_size() + len(data) > self.limit:
            size, t0 = self._held.get(key, (0, t))
            self._held[key] = (size + len(data), t0)
            return
        self._flush_gap(key)
        tr.write(HEADER.pack(DATA, conn, c2s, t, len(data)) + data)

    def _flush_gap(self, key: tuple[int, bool]) -> None:
        held = self._held.pop(key, None)
        if held is not None:
            self.control(pack(GAP, key[0], key[1], held[1], GAP_SIZE.pack(held[0])))

    def end(self, conn: int, c2s: bool, reason: str) -> None:
        self._flush_gap((conn, c2s))
        self.control(pack(END, conn, c2s, time.time_ns(), reason.encode("utf-8")))

    def note(self, kind: str, detail: str, conn: int = 0) -> None:
        self.control(pack_json(NOTE, {"kind": kind, "detail": detail, "error": False}, conn, time.time_ns()))


def _reset(transport: asyncio.BaseTransport | None) -> None:
    """Close with a RST: SO_LINGER 0, then close without flushing."""
    if transport is None or transport.is_closing():
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    cast(asyncio.Transport, transport).abort()


class _Side(asyncio.Protocol):
    """One socket of a proxied connection: the accepted client's or the upstream's."""

    def __init__(self, conn: _Conn, from_client: bool) -> None:
        self.conn = conn
        self.from_client = from_client
        self.transport: asyncio.Transport | None = None
        self.eof = False

    @property
    def peer(self) -> _Side:
        return self.conn.upstream if self.from_client else self.conn.client

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.transport.set_write_buffer_limits(high=_WRITE_HIGH_WATER)
        self.conn.relay.transports += 1
        if self.from_client:
            self.conn.accepted()
        else:
            self.conn.connected()

    def data_received(self, data: bytes) -> None:
        peer = self.peer.transport
        if peer is None or peer.is_closing():
            return
        peer.write(data)  # forwarded first; the copy is the same (immutable) bytes object
        self.conn.relay.sink.data(self.conn.number, self.from_client, time.time_ns(), data)

    def eof_received(self) -> bool:
        self.conn.eof(self)
        return True  # keep the socket open for the other direction (half-close)

    def connection_lost(self, exc: Exception | None) -> None:
        self.conn.relay.transports -= 1
        self.conn.lost(self, exc)

    # Flow control: when this side's outgoing buffer is full, stop reading the other side.
    def pause_writing(self) -> None:
        if self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer.transport is not None:
            self.peer.transport.resume_reading()


class _Conn:
    def __init__(self, relay: Relay) -> None:
        self.relay = relay
        self.number = 0  # given once the upstream connection is made
        self.client = _Side(self, True)
        self.upstream = _Side(self, False)
        self.ended = {True: False, False: False}  # by direction (c2s?)
        self.closing = False
        self.connecting: asyncio.Task[Any] | None = None
        self.watching: asyncio.Future[None] | None = None  # a half-closed side looked at (_watch)

    def accepted(self) -> None:
        relay = self.relay
        assert self.client.transport is not None
        peer = self.client.transport.get_extra_info("peername")
        if len(relay.conns) >= relay.cfg.max_connections:
            self.closing = True
            self.client.transport.close()
            relay.sink.note(
                "refused",
                f"connection from {_text(_hostport(peer))} refused: "
                f"{relay.cfg.max_connections} connections open (--max-connections)",
            )
            return
        relay.conns.add(self)
        self.client.transport.pause_reading()  # until the upstream answers
        self.connecting = asyncio.get_running_loop().create_task(self._connect(peer))

    async def _connect(self, peer: Any) -> None:
        cfg = self.relay.cfg
        try:
            await asyncio.get_running_loop().create_connection(
                lambda: self.upstream, cfg.upstream_host, cfg.upstream_port
            )
        except OSError as e:
            upstream = _text([cfg.upstream_host, cfg.upstream_port])
            why = os.strerror(e.errno) if e.errno else str(e)  # asyncio's strerror repeats the address
            if e.errno in (errno.EMFILE, errno.ENFILE):  # the tap's limit, not the upstream's fault
                self.relay.sink.note(
                    "fd_limit",
                    f"connection from {_text(_hostport(peer))} closed: no descriptor left to dial upstream "
                    f"{upstream}: {why} (ulimit -n)",
                )
            else:
                self.relay.sink.note(
                    "upstream_unreachable",
                    f"connection from {_text(_hostport(peer))} closed: upstream {upstream} unreachable: {why}",
                )
            self.closing = True
            self.relay.conns.discard(self)
            _reset(self.client.transport)

    def connected(self) -> None:
        client, upstream = self.client.transport, self.upstream.transport
        assert client is not None and upstream is not None
        if self.closing:
            upstream.close()  # the client went away while the upstream was dialled
            return
        relay = self.relay
        relay.count += 1
        self.number = relay.count
        opened = {
            "client": _hostport(client.get_extra_info("peername")),
            "server": _hostport(upstream.get_extra_info("peername")),
        }
        relay.sink.control(pack_json(OPEN, opened, self.number, time.time_ns()))
        client.resume_reading()

    def _end(self, c2s: bool, reason: str) -> None:
        if self.number and not self.ended[c2s]:
            self.ended[c2s] = True
            self.relay.sink.end(self.number, c2s, reason)

    def eof(self, side: _Side) -> None:
        side.eof = True
        peer = side.peer.transport
        if peer is not None and not peer.is_closing() and peer.can_write_eof():
            peer.write_eof()  # shutdown(SHUT_WR) once what is buffered for it is sent
        self._end(side.from_client, "fin")
        if self.client.eof and self.upstream.eof:
            self.close()
        elif side.transport is not None:
            self.watching = asyncio.ensure_future(self._watch(side, side.transport))

    async def _watch(self, side: _Side, transport: asyncio.BaseTransport) -> None:
        """A side whose FIN came is not read any more, so its reset would
        show only when the other side next writes to it: meanwhile that side
        would see nothing (CLOSE_WAIT, no error) and the connection keep its
        slot.  Its socket's error is looked at until the connection closes."""
        sock = transport.get_extra_info("socket")
        while sock is not None and not self.closing and not transport.is_closing():
            await asyncio.sleep(_HALF_CLOSED_POLL)
            if self.closing or transport.is_closing():
                return
            if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):  # EPIPE: a reset in CLOSE_WAIT
                cast(asyncio.Transport, transport).abort()  # connection_lost: both end with "rst"
                return

    def close(self) -> None:
        """Both directions are done: close, flushing what is buffered."""
        self.closing = True
        for side in (self.client, self.upstream):
            if side.transport is not None and not side.transport.is_closing():
                side.transport.close()
        self.relay.conns.discard(self)

    def cut(self) -> None:
        """The tap stops: a direction still open is cut, and its receiver
        reset (what waits for it is dropped), so that no peer takes the cut
        for the other's end of stream; a direction already ended by a FIN
        has what waits for it written before its socket closes."""
        self.closing = True
        self._end(True, "tap stopped")
        self._end(False, "tap stopped")
        for side in (self.client, self.upstream):
            tr = side.transport
            if tr is not None and not tr.is_closing():
                if side.peer.eof:
                    tr.close()
                else:
                    _reset(tr)
        self.relay.conns.discard(self)

    def lost(self, side: _Side, exc: Exception | None) -> None:
        if self.closing:
            self.relay.conns.discard(self)
            return
        # Gone before both directions ended: a reset or an error closes both.
        self.closing = True
        if exc is None or isinstance(exc, ConnectionResetError):
            reason = "rst"
        else:
            reason = f"error: {getattr(exc, 'strerror', None) or exc}"
        self._end(side.from_client, reason)  # the side that failed ends first
        self._end(not side.from_client, reason)
        if self.connecting is not None and not self.connecting.done():
            self.connecting.cancel()
        _reset(side.peer.transport)
        self.relay.conns.discard(self)


class Relay:
    def __init__(self, cfg: RelayConfig, sink: Sink) -> None:
        self.cfg = cfg
        self.sink = sink
        self.conns: set[_Conn] = set()
        self.count = 0
        self.transports = 0  # sockets not yet closed

    def client_protocol(self) -> asyncio.Protocol:
        return _Conn(self).client

    async def stop(self) -> None:
        for conn in list(self.conns):
            if conn.connecting is not None and not conn.connecting.done():
                conn.connecting.cancel()
            conn.cut()
        deadline = time.monotonic() + _STOP_GRACE
        while self.transports > 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)


class _Pipe(asyncio.Protocol):
    """The read end of stdin or the write end of stdout.  STOP_BYTE then the
    end of stdin: the tap asks us to stop.  Any other end of either pipe:
    the tap is gone, we are orphaned."""

    def __init__(self, stop: asyncio.Event, orphaned: asyncio.Event) -> None:
        self.stop = stop
        self.orphaned = orphaned
        self.asked = False

    def data_received(self, data: bytes) -> None:
        self.asked = self.asked or STOP_BYTE in data

    def eof_received(self) -> bool:
        self._ended()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended()

    def _ended(self) -> None:
        (self.stop if self.asked else self.orphaned).set()


# Descriptors besides two a connection: the listeners, the records' pipes,
# the loop's own (epoll, Python's), with room to spare.
_FD_SPARE = 64


def fd_room(max_connections: int) -> str | None:
    """Raises the soft limit on open descriptors toward what
    --max-connections needs (two a connection), as servers do: a soft limit
    of 1024 (the usual default; the hard one is higher) would relay about
    500 connections and reset the rest.  Returns a warning when even the
    hard limit is short."""
    need = 2 * max_connections + _FD_SPARE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return None
    room = need if hard == resource.RLIM_INFINITY else min(need, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (room, hard))
        soft = room
    if soft >= need:
        return None
    return (
        f"--max-connections {max_connections} needs {need} open files, and the limit is {soft} (ulimit -n): "
        f"about {max(soft - _FD_SPARE, 0) // 2} connections can be relayed at once, later ones wait or are reset"
    )


def _fd_note(cfg: RelayConfig) -> bytes:
    warning = fd_room(cfg.max_connections)
    if warning is None:
        return b""
    return pack_json(NOTE, {"kind": "fd_limit", "detail": warning, "error": False}, 0, time.time_ns())


async def serve(cfg: RelayConfig, out_fd: int, in_fd: int) -> int:
    loop = asyncio.get_running_loop()
    stop, orphaned = asyncio.Event(), asyncio.Event()
    with contextlib.suppress(OSError):
        fcntl.fcntl(out_fd, _F_SETPIPE_SZ, _PIPE_SIZE)
    out, _ = await loop.connect_write_pipe(lambda: _Pipe(stop, orphaned), os.fdopen(out_fd, "wb", buffering=0))
    sink = Sink(out, cfg.buffer)
    relay = Relay(cfg, sink)
    where = _text([cfg.listen_host or "*", cfg.listen_port])
    try:
        socks = _listen(cfg)
    except OSError as e:
        why = os.strerror(e.errno) if e.errno and e.errno > 0 else str(e.strerror or e)
        sink.control(pack(ERROR, payload=f"tap: cannot listen on {where}: {why}".encode()))
        await _drain(out)
        return 1
    servers = [await loop.create_server(relay.client_protocol, sock=sock, backlog=_BACKLOG) for sock in socks]
    addresses = [_text(_hostport(s.getsockname())) for s in socks]
    note = _fd_note(cfg)  # before LISTENING: no connection comes under the old limit
    sink.control(pack_json(LISTENING, {"addresses": addresses}))
    if note:
        sink.control(note)
    await loop.connect_read_pipe(lambda: _Pipe(stop, orphaned), os.fdopen(in_fd, "rb", buffering=0))
    ended = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(orphaned.wait())]
    await asyncio.wait(ended, return_when=asyncio.FIRST_COMPLETED)
    for f in ended:
        f.cancel()
    for server in servers:
        server.close()
    if not stop.is_set():  # orphaned: no copies, no new connections; the open ones run to their end
        if not out.is_closing():
            out.abort()
        while relay.conns or relay.transports > 0:
            await asyncio.sleep(_ORPHAN_POLL)
        return 0
    await relay.stop()
    sink.control(pack(STOPPED, time_ns=time.time_ns()))
    await _drain(out)
    return 0


async def _drain(out: asyncio.WriteTransport) -> None:
    tr = out
    deadline = time.monotonic() + _DRAIN_WAIT
    while not tr.is_closing() and tr.get_write_buffer_size() and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    tr.close()


def c_loop() -> ModuleType | None:
    """The C event loop, or None: RIPPLE_PURE is set, or it was not built here."""
    if pure_requested():
        return None
    try:
        from ripple_cli.tap import _relayloop  # type: ignore[attr-defined]
    except ImportError:
        return None
    return cast(ModuleType, _relayloop)


# Port 0 on several addresses: tries for one free port on all of them.
_SAME_PORT_TRIES = 20


def _listen(cfg: RelayConfig) -> list[socket.socket]:
    """The listening sockets, as asyncio's create_server makes them (every
    address the host names; IPv6 ones IPv6-only), except that port 0 is one
    port on all of them (asyncio's picks one per address: `--listen :0`
    would be 0.0.0.0:33345 and [::]:33925).  Raises OSError."""
    infos = socket.getaddrinfo(cfg.listen_host, cfg.listen_port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    for attempt in range(_SAME_PORT_TRIES):
        try:
            return _bind_all(list(dict.fromkeys(infos)), cfg.listen_port)
        except OSError as e:
            # The port the first address got is taken on another: another.
            if cfg.listen_port != 0 or e.errno != errno.EADDRINUSE or attempt == _SAME_PORT_TRIES - 1:
                raise
    raise AssertionError("unreachable")


def _bind_all(infos: list[tuple[Any, ...]], port: int) -> list[socket.socket]:
    socks: list[socket.socket] = []
    try:
        for family, kind, proto, _name, address in infos:
            s = socket.socket(family, kind, proto)
            socks.append(s)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(socks) > 1:
                address = (address[0], socks[0].getsockname()[1], *address[2:])
            s.bind(address)
            s.listen(_BACKLOG)
    except OSError:
        for s in socks:
            s.close()
        raise
    return socks


def _upstreams(cfg: RelayConfig) -> tuple[list[tuple[int, str, int, int, int]], str]:
    """The upstream's addresses (tried in order for each connection), or
    none and why."""
    try:
        infos = socket.getaddrinfo(cfg.upstream_host, cfg.upstream_port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        return [], str(e.strerror)
    out: list[tuple[int, str, int, int, int]] = []
    for family, _kind, _proto, _name, address in infos:
        if family == socket.AF_INET:
            out.append((int(family), str(address[0]), int(address[1]), 0, 0))
        elif family == socket.AF_INET6:
            out.append((int(family), str(address[0]), int(address[1]), int(address[2]), int(address[3])))  # type: ignore[misc]
    return list(dict.fromkeys(out)), "no IPv4 or IPv6 address"


def serve_c(loop: ModuleType, cfg: RelayConfig, out_fd: int, in_fd: int) -> int:
    with contextlib.suppress(OSError):
        fcntl.fcntl(out_fd, _F_SETPIPE_SZ, _PIPE_SIZE)
    where = _text([cfg.listen_host or "*", cfg.listen_port])
    try:
        socks = _listen(cfg)
    except OSError as e:
        why = os.strerror(e.errno) if e.errno and e.errno > 0 else str(e.strerror or e)
        _write_all(out_fd, pack(ERROR, payload=f"tap: cannot listen on {where}: {why}".encode()))
        return 1
    addresses = [_text(_hostport(s.getsockname())) for s in socks]
    note = _fd_note(cfg)  # before LISTENING: no connection comes under the old limit
    _write_all(out_fd, pack_json(LISTENING, {"addresses": addresses}) + note)
    upstreams, unresolved = _upstreams(cfg)
    fds = [s.detach() for s in socks]  # the C loop owns and closes them
    upstream_text = _text([cfg.upstream_host, cfg.upstream_port])
    return int(
        loop.run(fds, upstreams, upstream_text, unresolved, out_fd, in_fd, cfg.max_connections, cfg.buffer, _FLUSH_MS)
    )


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def main(argv: list[str]) -> int:
    # The tap stops the relay (closing stdin) after its own Ctrl-C: ignore the terminal's.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    cfg = RelayConfig.from_json(argv[1])
    # Records get fd 1's pipe on a descriptor of their own; fd 1 itself becomes
    # stderr, so that nothing printed by accident can corrupt them.
    out_fd = os.dup(1)
    os.dup2(2, 1)
    in_fd = os.dup(0)
    if not stat.S_ISFIFO(os.fstat(out_fd).st_mode):
        print("ripple: tap: relay: its stdout must be a pipe (ripple tap starts it)", file=sys.stderr)
        return 2
    loop = c_loop()
    try:
        if loop is not None:
            return serve_c(loop, cfg, out_fd, in_fd)
        return asyncio.run(serve(cfg, out_fd, in_fd))
    except OSError as e:
        # The system refused the loop itself (epoll, descriptors): one line on
        # the tap's stderr; the tap reports the relay's end as a problem.
        print(f"ripple: tap: relay: {e.strerror or e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
