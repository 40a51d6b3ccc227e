"""What a replay did, reported at its end (also after Ctrl-C or a peer
that went away): counts, achieved rate, and how late messages were sent
against their schedule."""

from __future__ import annotations

import json
from array import array
from dataclasses import dataclass, field
from typing import Any

from ripple_cli.terminal.words import plural

NS = 1_000_000_000


@dataclass
class ReplayStats:
    peer: str  # HOST:PORT replayed to (--to), or listened on (--listen)
    pacing: str  # Pacing.describe()
    paced: bool  # False under --topspeed: no target to be late for
    connections: int = 0
    messages: int = 0  # every envelope written, Handshakes included
    bytes: int = 0
    handshakes: int = 0
    handshake_bytes: int = 0
    elapsed_ns: int = 0  # summed over connections: from the peer's answer to the last write
    skipped: int = 0  # problems in the source (their bytes were not sent)
    interrupted: bool = False
    stopped: str | None = None  # why the replay ended early, when it did
    # Per streamed message: the clock after its write returned, minus its
    # target.  8 bytes each, so that percentiles are exact.
    lags_ns: array[int] = field(default_factory=lambda: array("q"))
    # Under --listen: `peer` is our own address; the consumers that
    # connected are these, in order.
    listening: bool = False
    consumers: list[str] = field(default_factory=list)

    @property
    def streamed(self) -> int:
        """Messages after the Handshakes: those the schedule paced."""
        return self.messages - self.handshakes

    def rates(self) -> tuple[float, float]:
        """(messages/s, MB/s) of the streamed messages over the elapsed time."""
        if self.elapsed_ns <= 0:
            return 0.0, 0.0
        secs = self.elapsed_ns / NS
        return self.streamed / secs, (self.bytes - self.handshake_bytes) / secs / 1e6

    def lag(self) -> dict[str, float] | None:
        """p50, p99 and max scheduling lag in ms; None if nothing was paced."""
        if not self.paced or not self.lags_ns:
            return None
        ordered = sorted(self.lags_ns)
        return {
            "p50": _ms(_percentile(ordered, 50)),
            "p99": _ms(_percentile(ordered, 99)),
            "max": _ms(ordered[-1]),
        }

    def to_json(self) -> str:
        msgs, mbs = self.rates()
        # A listening replay names its own address `listen` and the
        # consumers that came `peers`: `peer` is always the other end.
        where: dict[str, Any] = (
            {"listen": self.peer, "peers": self.consumers} if self.listening else {"peer": self.peer}
        )
        doc: dict[str, Any] = {
            "v": 1,
            **where,
            "pacing": self.pacing,
            "connections": self.connections,
            "messages": self.messages,
            "bytes": self.bytes,
            "elapsed_s": round(self.elapsed_ns / NS, 6),
            "rate": {"msgs_per_s": round(msgs, 3), "mb_per_s": round(mbs, 6)},
            "lag_ms": self.lag(),
            "skipped": self.skipped,
            "complete": not self.interrupted and self.stopped is None,
            "interrupted": self.interrupted,
            "stopped": self.stopped,
        }
        return json.dumps(doc)

    def to_text(self) -> str:
        msgs, mbs = self.rates()
        conns = plural(self.connections, "connection", grouped=True)
        where = f"to {self.peer}" if not self.listening else f"to consumers of {self.peer}"
        lines = [
            f"replay: {plural(self.messages, 'message', grouped=True)}, {self.bytes:,} bytes {where} ({conns}), "
            f"{self.elapsed_ns / NS:.3f} s at {self.pacing}" + (" (interrupted)" if self.interrupted else ""),
            f"  rate: {msgs:,.1f} msgs/s, {mbs:.3f} MB/s",
        ]
        lag = self.lag()
        if lag is not None:
            lines.append(
                f"  lag:  p50 {lag['p50']:.3f} ms, p99 {lag['p99']:.3f} ms, max {lag['max']:.3f} ms "
                "(send time minus schedule)"
            )
        if self.skipped:
            lines.append(f"  skipped: {self.skipped} problem(s) in the source (reported above), not sent")
        return "\n".join(lines)


def _percentile(ordered: list[int], pct: int) -> int:
    """Nearest rank: a value that was observed, never an interpolation."""
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[rank - 1]


def _ms(ns: int) -> float:
    return round(ns / 1e6, 6)
