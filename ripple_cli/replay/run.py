"""The replay itself: each recording on a connection of its own, one after
another, in the order of the recorded connections.

One after another (not in parallel) because each recorded connection opens
with its own Handshake and negotiation, and a consumer sees one producer
at a time, the way it would when a worker reconnects; the messages of one
connection keep their recorded timing among themselves.
"""

from __future__ import annotations

import gc
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ripple_cli.codec.envelope import DEFAULT_MAX_PAYLOAD
from ripple_cli.replay.renumber import Renumberer
from ripple_cli.replay.schedule import Clock, Pacing, Schedule
from ripple_cli.replay.session import Session, accept, connect, listening_address, open_listener
from ripple_cli.replay.source import Recording
from ripple_cli.replay.stats import ReplayStats


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    to: tuple[str, int] | None = None  # connect to this consumer...
    listen: tuple[str, int] | None = None  # ...or serve one that connects here
    pacing: Pacing = field(default_factory=Pacing)
    loops: int = 1  # passes over each recording's messages after its Handshake
    limit: int | None = None  # messages written at most, Handshakes included
    renumber: bool = False
    handshake_timeout_s: float = 10.0  # to connect, and for the answer to the Handshake
    max_payload: int = DEFAULT_MAX_PAYLOAD
    renumber_from: int = 1  # the first envelope seq and Delta sequence_no when renumbering
    wait_answer: bool = True  # --handshake wait: the Schema_negotiation before the rest; none: no wait


def plan(rec: Recording, loops: int) -> Iterator[tuple[int, bytes]]:
    """(time, envelope) of every message after the Handshake, `loops`
    times; pass k is laid k spans later on the recording's clock."""
    span = rec.span_ns()
    body = rec.body
    for k in range(loops):
        shift = k * span
        for m in body:
            yield m.time_ns + shift, m.data


def replay(
    recordings: list[Recording],
    opts: ReplayOptions,
    stats: ReplayStats,
    notice: Callable[[str], None],
    clock: Clock = time.monotonic_ns,
) -> None:
    """Raises ConnectFailed, PeerRefused, PeerGone (and KeyboardInterrupt);
    `stats` is up to date whatever happens."""
    # The loaded source is never garbage; frozen, it is out of the
    # collector's way: a full collection walking it mid-replay would be a
    # lag spike of milliseconds.
    gc.freeze()
    try:
        _replay(recordings, opts, stats, notice, clock)
    finally:
        gc.unfreeze()


def _replay(
    recordings: list[Recording],
    opts: ReplayOptions,
    stats: ReplayStats,
    notice: Callable[[str], None],
    clock: Clock,
) -> None:
    listener: socket.socket | None = None
    if opts.listen is not None:
        listener = open_listener(*opts.listen)
        stats.peer = listening_address(listener)
        stats.listening = True
    try:
        for rec in recordings:
            if opts.limit is not None and stats.messages >= opts.limit:
                break
            if listener is not None:
                which = f" for {rec.label}" if len(recordings) > 1 else ""
                notice(f"listening on {stats.peer}: waiting for a consumer{which}")
                sock, peer = accept(listener)
                stats.consumers.append(peer)
            else:
                assert opts.to is not None
                sock, peer = connect(*opts.to, opts.handshake_timeout_s, notice)
            stats.connections += 1
            session = Session(sock, peer, stats, opts.max_payload, clock)
            complete = False
            try:
                encode = Renumberer(opts.renumber_from) if opts.renumber else None
                handshake = rec.handshake.data if encode is None else encode(rec.handshake.data)
                if opts.wait_answer:
                    session.negotiate(handshake, opts.handshake_timeout_s)
                else:
                    session.send_handshake(handshake)
                schedule = Schedule(opts.pacing, clock())
                session.stream(plan(rec, opts.loops), encode, schedule, opts.limit)
                complete = True
            finally:
                # An interrupted or failed connection is dropped at once; a
                # finished one is closed cleanly.
                session.close(graceful=complete)
    finally:
        if listener is not None:
            listener.close()
