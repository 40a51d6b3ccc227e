"""When each message is due: absolute targets, never accumulated sleeps.

Message i of a connection is due at

    target_i = start + (t_i - t_0) / multiplier     (--multiplier, the default at 1)
    target_i = start + i / pps                      (--pps)
    target_i = start                                (--topspeed: everything is due)

where `start` is when the peer accepted the Handshake and t_i the message's
time by the chosen clock.  Each target is computed from the start, not from
the previous send, so a late wake-up, a slow write or a busy machine makes
the messages after it late only until the schedule is caught up: the error
of one wait is never carried into the next (no drift over a long replay).

Times that go backwards (event time need not be monotonic) are taken as the
latest time seen so far: such a message is due at once, not "late".
--maxsleep caps the gap between two consecutive targets; the excess is cut
out of the schedule for every later message too, so the cap never turns
into a burst of catching up.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

NS = 1_000_000_000

# The OS wakes a sleeper 60-120 µs late (timer slack, scheduling); the last
# stretch before a target is spun on the clock instead, which costs CPU only
# for that long per message and makes the wake-up exact to a few µs.
SPIN_NS = 200_000
MAX_IDLE_NS = 3600 * NS

Clock = Callable[[], int]


class Mode(Enum):
    TOPSPEED = "topspeed"
    MULTIPLIER = "multiplier"
    PPS = "pps"


@dataclass(frozen=True, slots=True)
class Pacing:
    mode: Mode = Mode.MULTIPLIER
    multiplier: float = 1.0
    pps: float = 0.0
    maxsleep_ns: int | None = None

    @property
    def paced(self) -> bool:
        """Whether targets mean anything (lag is reported only then)."""
        return self.mode is not Mode.TOPSPEED

    def describe(self) -> str:
        if self.mode is Mode.TOPSPEED:
            text = "top speed"
        elif self.mode is Mode.PPS:
            text = f"{self.pps:g} msgs/s"
        else:
            text = f"x{self.multiplier:g}"
        if self.maxsleep_ns is not None and self.mode is not Mode.TOPSPEED:
            text += f", waits capped at {self.maxsleep_ns / 1e6:g} ms"
        return text


class Schedule:
    """Targets for one connection's messages, in order, on the monotonic clock."""

    def __init__(self, pacing: Pacing, start_ns: int) -> None:
        self.pacing = pacing
        self.start_ns = start_ns
        self._index = 0
        self._t0: int | None = None
        self._latest = 0  # latest relative time seen: times never go backwards
        self._prev = 0  # the previous message's offset in the uncut schedule
        self._cut = 0  # schedule time cut out by --maxsleep so far

    def target(self, time_ns: int) -> int:
        p = self.pacing
        if p.mode is Mode.TOPSPEED:
            return self.start_ns
        if p.mode is Mode.PPS:
            offset = int(self._index * NS / p.pps)
        else:
            if self._t0 is None:
                self._t0 = time_ns
            self._latest = max(self._latest, time_ns - self._t0)
            offset = int(self._latest / p.multiplier)
        self._index += 1
        if p.maxsleep_ns is not None and offset - self._prev > p.maxsleep_ns:
            self._cut += offset - self._prev - p.maxsleep_ns
        self._prev = offset
        return self.start_ns + offset - self._cut


def sleep_until(target_ns: int, idle: Callable[[float], None], clock: Clock = time.monotonic_ns) -> int:
    """Wait until the clock reaches `target_ns`; returns the clock then.
    `idle(seconds)` does the coarse waiting (and may do useful work, such
    as reading the socket, as long as it returns by then)."""
    while True:
        now = clock()
        remaining = target_ns - now
        if remaining <= 0:
            return now
        if remaining > SPIN_NS:
            # At most an hour at a time: a gap of centuries in the
            # timestamps is a long wait, not an overflow of the OS's timer.
            idle(min(remaining - SPIN_NS, MAX_IDLE_NS) / NS)
