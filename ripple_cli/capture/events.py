"""What a capture source yields: the life of each TCP stream direction, in
capture order.  A raw stream file is the degenerate case: one stream, its
bytes, its end.

Every source (pcap file, pcapng file, live sniffing, the tap's proxy)
produces these events, so that decoding, verifying and display code works
the same on all of them.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Union


@dataclass(frozen=True, slots=True)
class Endpoint:
    host: str  # "127.0.0.1", "::1"
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class StreamId:
    """One direction of one connection.  `connection` numbers connections
    from 1 in the order they are first seen; `client` is the side that sent
    the SYN (or, with no SYN seen, the side first seen sending; a capture
    reader may know better from the ports: see `capture.reassembly`)."""

    connection: int
    client: Endpoint
    server: Endpoint
    from_client: bool
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Every event of a capture is looked up by its stream (the demux, the
        # reports): the generated __hash__ hashed both endpoints each time,
        # three Python calls a lookup.  The fields never change: once.
        object.__setattr__(self, "_hash", hash((self.connection, self.client, self.server, self.from_client)))

    def __hash__(self) -> int:
        return self._hash

    @property
    def direction(self) -> str:
        """`c2s` (client to server) or `s2c`."""
        return "c2s" if self.from_client else "s2c"

    @property
    def label(self) -> str:
        """`3 10.0.0.1:50412 -> 10.0.0.2:9000`: what --show-connection prints."""
        src, dst = (self.client, self.server) if self.from_client else (self.server, self.client)
        return f"{self.connection} {src} -> {dst}"

    def community_id(self, seed: int = 0) -> str:
        """The connection's Community ID (capture/community_id.py): the
        same for both directions."""
        return _community_id(self, seed)

    @property
    def key(self) -> str:
        """The id `--stream` takes: `3` (both directions) or `3:c2s`."""
        return f"{self.connection}:{self.direction}"


@dataclass(frozen=True, slots=True)
class StreamStart:
    stream: StreamId | None  # None: a raw stream file
    time_ns: int | None
    syn_seen: bool  # False: the connection was already open when the capture began


@dataclass(frozen=True, slots=True)
class StreamData:
    stream: StreamId | None  # None: a raw stream file
    # A raw file's bytes may be a read-only mmap window of it (sources/
    # files.py); the Demux hands those as bytes to a dissector that does
    # not take buffers (StreamDissector.takes_buffers).
    data: bytes | mmap.mmap
    time_ns: int | None  # capture time of the packet that carried these bytes (None: not a capture)


@dataclass(frozen=True, slots=True)
class StreamGap:
    """Bytes the capture never saw (a dropped segment): the decoder
    resynchronizes after it."""

    stream: StreamId | None
    size: int
    time_ns: int | None


@dataclass(slots=True)
class TcpCounts:
    """What TCP reassembly saw of one direction's segments."""

    out_of_order: int = 0  # segments that came before bytes preceding them
    retransmitted: int = 0  # segments carrying bytes already seen (duplicates, retransmissions)
    acked_unseen: int = 0  # holes the receiver acknowledged before the capture showed their bytes
    held: int = 0  # the most segments held at once, waiting for a hole to fill

    def add(self, other: TcpCounts) -> None:
        self.out_of_order += other.out_of_order
        self.retransmitted += other.retransmitted
        self.acked_unseen += other.acked_unseen
        self.held = max(self.held, other.held)


@dataclass(frozen=True, slots=True)
class StreamEnd:
    stream: StreamId | None
    time_ns: int | None
    reason: str  # "fin", "rst", "evicted", "end of capture"
    tcp: TcpCounts | None = None  # a capture's reassembly counts (None: not reassembled)


@dataclass(frozen=True, slots=True)
class CaptureNote:
    """Something about the capture itself (not a stream's content): a
    conflicting retransmission, an evicted idle connection, an unsupported
    link type, a truncated file.  `stream` is None when it concerns no one
    stream.

    The kinds the capture readers give: `bad_capture` (error: the file is
    damaged; reading resumes at the next plausible record, if any),
    `unsupported_linktype` (error), `capture_truncated` (the file ends
    inside a record), `snap_length` (packets cut short when captured,
    counted at the end), `pcap_header` (a second pcap file header: files
    joined), `ip_fragment` (an IP datagram whose fragments did not all
    arrive), `fragment_overlap` and `bad_fragment` (errors: fragments that
    conflict; capture/fragments.py), `conflicting_overlap` (error: a
    retransmission with different bytes), `evicted` (too many connections
    open), `port_reused` (a new SYN on a connection whose end was not
    seen), `reassembly_window` (a hole
    declared because the bytes held after it passed --reassembly-window)."""

    stream: StreamId | None
    time_ns: int | None  # None: no packet's time is known yet (a file damaged at its start)
    kind: str
    detail: str
    error: bool = False  # True: counts as a problem (exit 1); False: informational
    skipped: int = 0  # bytes of the capture file passed over, when known


@lru_cache(maxsize=4096)
def _community_id(stream: StreamId, seed: int) -> str:
    # Keyed by the stream (its hash computed once): asked for every message
    # a JSON output writes.  Imported here: hashlib and socket are not worth
    # loading for a raw stream file, which has no connection.
    from ripple_cli.capture.community_id import community_id

    return community_id(stream.client, stream.server, seed)


CaptureEvent = Union[StreamStart, StreamData, StreamGap, StreamEnd, CaptureNote]
