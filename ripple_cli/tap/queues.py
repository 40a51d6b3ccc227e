"""Bounded queues between the tap's threads that never block the producer.

A producer that would wait on a slow consumer would pass the slowness
upstream (to forwarding, to tcpdump); instead a full queue refuses the item
and counts it.  `EventQueue` turns refused stream bytes into a `StreamGap`
of the same size, so the decoder knows exactly where bytes are missing and
resynchronizes after them.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Generic, TypeVar

from ripple_cli.capture.events import CaptureEvent, StreamData, StreamEnd, StreamGap, StreamId

T = TypeVar("T")


class End:
    """The producer is done: the last item of a queue."""

    def __repr__(self) -> str:
        return "END"


END = End()


class DropQueue(Generic[T]):
    """At most `max_items` items and `max_bytes` bytes (sizes as the
    producer gives them).  An item is accepted into an empty queue whatever
    its size, so one huge item cannot be refused forever."""

    def __init__(self, max_items: int, max_bytes: int) -> None:
        self.max_items = max_items
        self.max_bytes = max_bytes
        self._items: deque[tuple[T | End, int]] = deque()
        self._bytes = 0
        self._cond = threading.Condition()
        self.refused = 0  # items refused
        self.refused_bytes = 0

    def _fits(self, size: int) -> bool:
        return not self._items or (len(self._items) < self.max_items and self._bytes + size <= self.max_bytes)

    def _append(self, item: T | End, size: int) -> None:
        self._items.append((item, size))
        self._bytes += size
        self._cond.notify()

    def put(self, item: T, size: int = 0) -> bool:
        """False (and counted) when the queue is full."""
        with self._cond:
            if not self._fits(size):
                self.refused += 1
                self.refused_bytes += size
                return False
            self._append(item, size)
            return True

    def close(self) -> None:
        """No more items: `get` returns END once the queue is drained."""
        with self._cond:
            self._append(END, 0)

    def get(self, timeout: float | None = None) -> T | End | None:
        """The next item, END after `close`, or None after `timeout` seconds."""
        batch = self.get_many(1, timeout)
        return None if batch is None else batch[0]

    def get_many(self, most: int, timeout: float | None = None, most_bytes: int = 1 << 20) -> list[T | End] | None:
        """The next items (END the last, after `close`), up to `most` of
        them and past `most_bytes` by one at most; None after `timeout`
        seconds with none.  One lock for a batch (see session.py's _BATCH);
        the bound on bytes keeps what a consumer holds beside the queue small."""
        with self._cond:
            if not self._items and not self._cond.wait_for(lambda: bool(self._items), timeout):
                return None
            items = self._items
            taken: list[T | End] = []
            freed = 0
            while items and len(taken) < most and freed < most_bytes:
                item, size = items.popleft()
                taken.append(item)
                freed += size
            self._bytes -= freed
            return taken

    def take_all(self) -> list[T]:
        """Empties the queue: what was in it (END left out)."""
        with self._cond:
            items = [item for item, _size in self._items if not isinstance(item, End)]
            self._items.clear()
            self._bytes = 0
            return items

    def __len__(self) -> int:
        return len(self._items)


class EventQueue(DropQueue[CaptureEvent]):
    """Capture events, bounded by the stream bytes they carry.  Stream data
    that does not fit is dropped and becomes a gap of its size, put before
    the next event of its stream that is accepted (or before END)."""

    def __init__(self, max_bytes: int, max_items: int | None = None) -> None:
        # Small packets cost more memory than their bytes: bound the events too.
        super().__init__(max_items or max(10_000, max_bytes // 256), max_bytes)
        self._pending: dict[StreamId | None, tuple[int, int | None]] = {}  # stream -> (bytes dropped, time)
        self.dropped_bytes = 0

    def put_event(self, ev: CaptureEvent) -> None:
        with self._cond:
            if isinstance(ev, StreamData):
                n = len(ev.data)
                if not self._fits(n):
                    size, first = self._pending.get(ev.stream, (0, ev.time_ns))
                    self._pending[ev.stream] = (size + n, first)  # the gap dates from its first byte
                    self.dropped_bytes += n
                    return
            elif isinstance(ev, StreamGap | StreamEnd) and ev.stream in self._pending:
                pass  # the pending gap goes first, below
            else:
                self._append(ev, 0)
                return
            held = self._pending.pop(ev.stream, None)
            if held is not None:
                self._append(StreamGap(ev.stream, held[0], held[1]), 0)
            self._append(ev, len(ev.data) if isinstance(ev, StreamData) else 0)

    def close(self) -> None:
        with self._cond:
            for stream, (size, t) in self._pending.items():
                self._append(StreamGap(stream, size, t), 0)
            self._pending.clear()
            self._append(END, 0)
