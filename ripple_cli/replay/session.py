"""One replay connection: open it, send the Handshake and read the peer's
answer, stream the rest on schedule, close it without losing the tail."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Callable, Iterable

from ripple_cli.codec.envelope import DEFAULT_MAX_PAYLOAD
from ripple_cli.codec.messages import DeltaMode, SchemaNegotiation
from ripple_cli.codec.schema import text
from ripple_cli.errors import EXIT_UNREADABLE, RippleError
from ripple_cli.protocols.ripple.decoder import StreamDecoder
from ripple_cli.protocols.ripple.message import Message
from ripple_cli.replay.address import address_text
from ripple_cli.replay.schedule import Clock, Schedule, sleep_until
from ripple_cli.replay.stats import ReplayStats
from ripple_cli.sexp.atoms import escape_text

# Messages due together go out in one write, up to this much (--topspeed
# makes everything due at once: writes of this size keep the kernel busy
# without building the whole source in one buffer).
BATCH_BYTES = 256 << 10
# Under --topspeed the loop never waits, so the socket is polled for what
# the peer says (a refusal, a close) at most this often.
POLL_NS = 10_000_000
# After the last message the write side is shut and the peer's remaining
# bytes are read until it closes, at most this long: closing with unread
# bytes would send a RST, which can destroy data the peer has not read yet.
LINGER_S = 1.0


class ConnectFailed(RippleError):
    exit_code = EXIT_UNREADABLE


class PeerRefused(RippleError):
    """The peer answered a Handshake with ok false."""


class PeerGone(RippleError):
    """The peer closed or reset the connection, or never answered."""


# A refused connection is tried again (a consumer started beside the
# replay may not listen yet), waiting this long at first, doubling up to
# the last, until --handshake-timeout has passed.  Refusals for longer than
# _QUIET_S are told once: a short race is silent, a long wait never is.
_RETRY_S = (0.02, 0.5)
_QUIET_S = 1.0


def connect(
    host: str, port: int, timeout_s: float, notice: Callable[[str], None] | None = None
) -> tuple[socket.socket, str]:
    """Connects within `timeout_s`; refused attempts are retried until then,
    as a consumer that is still starting refuses at first (`notice` hears
    once when refusals have lasted a while: the wait is never silent)."""
    peer = address_text(host or "localhost", port)
    start = time.monotonic()
    deadline = start + timeout_s
    told = notice is None
    pause, longest = _RETRY_S
    while True:
        left = deadline - time.monotonic()
        try:
            sock = socket.create_connection((host or "localhost", port), timeout=max(left, 0.001))
        except ConnectionRefusedError:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ConnectFailed(f"cannot connect to {peer}: connection refused (for {timeout_s:g} s)") from None
            if not told and time.monotonic() - start >= _QUIET_S:
                assert notice is not None
                notice(f"{peer} refuses connections: trying again for up to {timeout_s:g} s")
                told = True
            time.sleep(min(pause, left))
            pause = min(pause * 2, longest)
            continue
        except TimeoutError:
            raise ConnectFailed(f"cannot connect to {peer}: no answer within {timeout_s:g} s") from None
        except OSError as e:
            raise ConnectFailed(f"cannot connect to {peer}: {e.strerror or e}") from None
        return _ready(sock), peer


def open_listener(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=1)
    except OSError as e:
        raise ConnectFailed(f"cannot listen on {address_text(host, port)}: {e.strerror or e}") from None


def listening_address(listener: socket.socket) -> str:
    host, port = listener.getsockname()[:2]
    return address_text(host, port)


def accept(listener: socket.socket) -> tuple[socket.socket, str]:
    sock, addr = listener.accept()
    return _ready(sock), address_text(addr[0], addr[1])


def _ready(sock: socket.socket) -> socket.socket:
    sock.settimeout(None)
    # Each write goes out at once: Nagle would hold a paced message back
    # until the previous one is acknowledged.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class Session:
    def __init__(
        self,
        sock: socket.socket,
        peer: str,
        stats: ReplayStats,
        max_payload: int = DEFAULT_MAX_PAYLOAD,
        clock: Clock = time.monotonic_ns,
    ) -> None:
        self.sock = sock
        self.peer = peer
        self.stats = stats
        self.clock = clock
        # What the peer sends is read with the codec, like any stream: its
        # Schema_negotiation answers are what matter here.
        self._decoder = StreamDecoder(None, DeltaMode.RAW, max_payload)
        self.answered = False
        self.eof = False
        self._start = 0
        self._elapsed_before = 0
        self._last_poll = 0

    # ------------------------------------------------------------ reading

    def _drain(self) -> None:
        """Read what the peer has sent, without blocking."""
        while not self.eof:
            try:
                data = self.sock.recv(1 << 16, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                raise self._gone(e.strerror or str(e)) from None
            if not data:
                self.eof = True
                return
            for ev in self._decoder.feed(data):
                if isinstance(ev, Message) and isinstance(ev.body, SchemaNegotiation):
                    self._answer(ev.body)

    def _answer(self, answer: SchemaNegotiation) -> None:
        if not answer.ok:
            # An error per line, each escaped (it comes off the wire).
            errors = [escape_text(text(e)) for e in answer.errors] or ["(no errors given)"]
            lines = "\n".join(f"  {e}" for e in errors)
            self.stats.stopped = "schemas refused"
            raise PeerRefused(f"{self.peer} refused the Handshake (Schema_negotiation ok false):\n{lines}")
        self.answered = True

    def _gone(self, why: str | None) -> PeerGone:
        msgs = self.stats.messages
        text = f"{self.peer} closed the connection after {msgs} message{'' if msgs == 1 else 's'} had been sent"
        self.stats.stopped = "peer closed the connection"
        return PeerGone(text + (f" ({why})" if why else ""))

    def _idle(self, seconds: float) -> None:
        """Wait up to `seconds`, reading the peer meanwhile: a refusal or a
        close is noticed while the replay waits, not at the next write."""
        ready, _, _ = select.select([self.sock], [], [], seconds)
        if ready:
            self._drain()
            if self.eof:
                raise self._gone(None)

    # ------------------------------------------------------------ the exchange

    def send_handshake(self, handshake: bytes) -> None:
        """Send the Handshake and go on (--handshake none): a refusal that
        comes later is still noticed while the rest is sent."""
        self._write(handshake)
        self.stats.handshakes += 1
        self.stats.handshake_bytes += len(handshake)
        self.stats.messages += 1
        self.stats.bytes += len(handshake)

    def negotiate(self, handshake: bytes, timeout_s: float) -> None:
        """Send the Handshake, then wait for the peer's Schema_negotiation."""
        self.send_handshake(handshake)
        deadline = self.clock() + int(timeout_s * 1e9)
        while not self.answered:
            left = deadline - self.clock()
            if left <= 0:
                self.stats.stopped = "no answer to the Handshake"
                raise PeerGone(f"no Schema_negotiation from {self.peer} within {timeout_s:g} s of the Handshake")
            ready, _, _ = select.select([self.sock], [], [], left / 1e9)
            if ready:
                self._drain()
                if self.eof and not self.answered:
                    self.stats.stopped = "peer closed the connection"
                    raise PeerGone(f"{self.peer} closed the connection without answering the Handshake")

    def stream(
        self,
        plan: Iterable[tuple[int, bytes]],
        encode: Callable[[bytes], bytes] | None,
        schedule: Schedule,
        limit: int | None,
    ) -> None:
        """Send `plan`'s (time, envelope) pairs at their targets.  Messages
        already due are batched into one write; `encode` (renumbering) runs
        before the wait for its message, so its cost hides in idle time."""
        stats, clock = self.stats, self.clock
        self._start = schedule.start_ns
        self._elapsed_before = stats.elapsed_ns
        self._last_poll = self._start
        pending = bytearray()
        due: list[int] = []
        for time_ns, envelope in plan:
            if limit is not None and stats.messages + len(due) >= limit:
                break
            target = schedule.target(time_ns)
            data = envelope
            if target > clock():
                # Not due yet: what is due goes now, then the wait.
                if due:
                    self._flush(pending, due)
                if encode is not None:
                    data = encode(envelope)
                sleep_until(target, self._idle, clock)
            elif encode is not None:
                data = encode(envelope)
            pending += data
            due.append(target)
            if len(pending) >= BATCH_BYTES:
                self._flush(pending, due)
        if due:
            self._flush(pending, due)

    def _flush(self, pending: bytearray, due: list[int]) -> None:
        self._write(pending)
        done = self.clock()
        stats = self.stats
        stats.lags_ns.extend(done - t for t in due)
        stats.messages += len(due)
        stats.bytes += len(pending)
        stats.elapsed_ns = self._elapsed_before + done - self._start
        pending.clear()
        due.clear()
        if done - self._last_poll >= POLL_NS:
            self._last_poll = done
            self._idle(0)

    def _write(self, data: bytes | bytearray) -> None:
        try:
            self.sock.sendall(data)
        except OSError as e:
            # Includes BrokenPipeError, which must not reach the guard: there
            # it means "stdout closed" and ends the program silently.
            raise self._gone(e.strerror or str(e)) from None

    def close(self, graceful: bool) -> None:
        try:
            if graceful:
                self._linger()
        finally:
            self.sock.close()

    def _linger(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            return
        deadline = self.clock() + int(LINGER_S * 1e9)
        while not self.eof:
            left = deadline - self.clock()
            if left <= 0:
                return
            ready, _, _ = select.select([self.sock], [], [], left / 1e9)
            if ready:
                try:
                    self._drain()
                except PeerGone:
                    # Everything was sent: a reset now loses nothing of ours.
                    self.stats.stopped = None
                    return
