"""`BufferedStream`: the buffer bookkeeping of a length- or marker-framed
stream dissector, shared by the protocols that resynchronise after damage.

Modelled on Ripple's own `codec/framing.py` `FrameDecoder`:

- `_buf` holds only the bytes not yet decoded from `_pos` on (one
  unfinished message, or the bytes a resync is still looking through);
  `_base` is the stream offset of `_buf[0]`, so `_base + i` is the stream
  offset of `_buf[i]`;
- damage (bytes that start no message, a length above the bound, a capture
  hole) opens one region, `_damage = (stream offset, kind, detail)`, that
  the protocol's resync closes at the next sure message start: ONE
  `Problem` for the region, with the bytes it skipped;
- a hole (`gap`) is damage too: merged into a region already open (the
  region keeps its kind, its detail says "; then" the hole), or a new
  `gap` region from the first byte not yet decoded: the message cut by
  the hole is lost with it.

A subclass writes `_run(out, final)`, the decoding loop: decode from
`_pos`, move `_pos` past what it consumed, open and close damage with
`_open_damage`/`_close_damage`, stop when more bytes are needed (when
`final`, nothing more will come: report what is left).  The hooks below
say what else a hole or the end of the stream touches.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Iterator

from ripple_cli.codec.problems import Problem, then_hole
from ripple_cli.protocols.base import Item, StreamDissector


class BufferedStream(StreamDissector):
    def __init__(self) -> None:
        self._buf = bytearray()
        self._pos = 0  # index in _buf of the first byte not yet decoded
        self._base = 0  # stream offset of _buf[0]
        # An open damaged region: (stream offset, kind, detail), closed at
        # the next sure message start or at the end of the stream.
        self._damage: tuple[int, str, str] | None = None

    @property
    def buffered(self) -> int:
        """Bytes held, waiting for the rest of a message (or for resync)."""
        return len(self._buf) - self._pos

    # ------------------------------------------------------------ the contract

    def feed(self, data: bytes) -> list[Item]:
        return list(self.feed_lazily(data))

    def feed_lazily(self, data: bytes) -> Iterator[Item]:
        if data:  # no new bytes complete nothing
            self._buf += data
            yield from self._items(final=False)
            self._compact()

    def gap(self, size: int) -> list[Item]:
        out: list[Item] = []
        self._run(out, final=False)
        hole_at = self._base + len(self._buf)
        detail = f"{size} bytes missing from the stream at offset {hole_at}"
        self._forget_across_gap()
        if self._damage is not None:
            start, kind, first = self._damage
            self._damage = (start, kind, then_hole(first, detail, size))
        elif not self._bridge_gap(size, detail, out):
            # The message cut by the hole is lost with it.
            self._damage = (self._base + self._pos, "gap", detail)
        self._base = hole_at + size
        self._buf = bytearray()
        self._pos = 0
        return out

    def finish(self) -> list[Item]:
        return list(self.finish_lazily())

    def finish_lazily(self) -> Iterator[Item]:
        yield from self._items(final=True)
        out: list[Item] = []
        self._at_end(out)
        yield from out
        self._base += len(self._buf)
        self._buf = bytearray()
        self._pos = 0

    # ------------------------------------------------------------ for subclasses

    @abstractmethod
    def _run(self, out: list[Item], final: bool) -> None:
        """Decode from `_pos` on, appending messages and problems to `out`."""

    def _items(self, final: bool) -> Iterable[Item]:
        """`_run`'s items; a subclass whose one chunk may give more than fit
        in memory yields them as it decodes instead (consumed whole before
        the buffer is touched again)."""
        out: list[Item] = []
        self._run(out, final)
        return out

    def _forget_across_gap(self) -> None:
        """A hole: drop the state that joins one message to the next (it
        can no longer be joined across the missing bytes)."""

    def _bridge_gap(self, size: int, detail: str, out: list[Item]) -> bool:
        """A hole with no damage open: True when the protocol dealt with it
        itself (its framing survives the hole, say, so it reports the hole
        in `out` and knows where the next message starts); False, the
        default, opens a `gap` region from the first byte not decoded."""
        return False

    def _at_end(self, out: list[Item]) -> None:
        """After the final `_run`: report what it left in the buffer."""

    def _compact(self) -> None:
        if self._pos:
            del self._buf[: self._pos]
            self._base += self._pos
            self._pos = 0

    def _open_damage(self, pos: int, kind: str, detail: str) -> None:
        """Damage starting at `_buf[pos]`."""
        self._damage = (self._base + pos, kind, detail)

    def _close_damage(self, pos: int, out: list[Item]) -> None:
        """The damaged region ends before `_buf[pos]`: one problem for it."""
        assert self._damage is not None
        start, kind, detail = self._damage
        self._damage = None
        out.append(Problem(start, kind, detail, skipped=self._base + pos - start))
