"""An input path as capture events, whatever it holds: a raw Ripple stream,
a pcap or a pcapng (told apart by their first bytes, so stdin works too)."""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from typing import BinaryIO

from ripple_cli.capture.events import CaptureEvent, StreamData, StreamEnd, StreamStart
from ripple_cli.sources.files import CHUNK_SIZE, display_name, mapped_chunks, mapped_faults, shrank

_MAGIC_LEN = 4


class ChunkFile:
    """A read-only file over a chunk iterator, for readers that want
    `read(n)` (dpkt): `read(n)` returns n bytes unless the input ends."""

    def __init__(self, first: bytes, rest: Iterator[bytes]) -> None:
        self._buf = bytearray(first)
        self._rest = rest
        self._eof = False

    def read(self, n: int = -1) -> bytes:
        while not self._eof and (n < 0 or len(self._buf) < n):
            chunk = next(self._rest, None)
            if chunk is None:
                self._eof = True
            else:
                self._buf += chunk
        if n < 0 or n >= len(self._buf):
            data = bytes(self._buf)
            self._buf.clear()
        else:
            data = bytes(self._buf[:n])
            del self._buf[:n]
        return data

    def read1(self, n: int = -1) -> bytes:
        """What is there, at most n bytes; waits for the next chunk only
        when nothing is buffered, so a live source is never held up.  With
        it the capture readers take big blocks, not a read per record."""
        if not self._buf:
            chunk = None if self._eof else next(self._rest, None)
            if chunk is None:
                self._eof = True
                return b""
            if n < 0 or len(chunk) <= n:
                return bytes(chunk)
            self._buf += chunk
        return self.read(len(self._buf) if n < 0 else min(n, len(self._buf)))

    def readable(self) -> bool:
        return True


def input_events(
    path: str,
    stdin: BinaryIO,
    ports: frozenset[int] = frozenset(),
    max_flows: int = 10000,
    name: str | None = None,
    window: int = 8 << 20,
    chunks: Iterator[bytes] | Iterator[bytes | mmap.mmap] | None = None,
) -> Iterator[CaptureEvent]:
    """`ports`, `max_flows` and `window` apply to captures: see `CaptureOptions`.
    `name` is the input's name in notes about the file (default: `path`).
    `chunks`, when given, are the input's bytes already opened (a pipe or a
    FIFO can be opened only once: a caller that looked at its head passes
    the head and the rest here).  A raw stream's chunks may be mmap
    windows of the file (files.mapped_chunks), a capture's are bytes."""
    faults = mapped_faults()
    if chunks is None:
        chunks = mapped_chunks(path, stdin)
    head: bytes | mmap.mmap = b""
    while len(head) < _MAGIC_LEN:
        chunk = next(chunks, None)
        if chunk is None:
            break
        head = chunk if not head else bytes(head) + chunk  # a first window stays as it is
    from ripple_cli.capture.formats import sniff_format

    if sniff_format(head) == "raw":
        yield StreamStart(None, None, True)
        if head:
            yield StreamData(None, head, None)
        for chunk in chunks:
            yield StreamData(None, chunk, None)
        yield StreamEnd(None, None, "end of input")
        # The decoder may read a window after the source has moved past it
        # (the cut tail of the last one, windows held until the protocol is
        # told at the end): a file that shrank meanwhile is known only now.
        if mapped_faults() != faults:
            raise shrank(path)
        return
    from ripple_cli.capture.reader import CaptureOptions, capture_events

    opts = CaptureOptions(ports=ports, max_flows=max_flows, window=window)
    rest = _pieces(chunks)
    yield from capture_events(ChunkFile(bytes(head), rest), display_name(name or path), opts)  # type: ignore[arg-type]


def _pieces(chunks: Iterator[bytes] | Iterator[bytes | mmap.mmap]) -> Iterator[bytes]:
    """The chunks as bytes, a window cut in read()'s sizes: the capture
    readers copy what they keep anyway."""
    for chunk in chunks:
        if type(chunk) is bytes:
            yield chunk
        else:
            for at in range(0, len(chunk), CHUNK_SIZE):
                yield chunk[at : at + CHUNK_SIZE]
