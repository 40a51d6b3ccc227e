"""Writing pcapng: one section, one interface, Enhanced Packet Blocks with
nanosecond timestamps; and rotation over several files.

Own code rather than `dpkt.pcapng.Writer`, which takes timestamps as float
seconds (a float holds about a microsecond at today's epoch, not a
nanosecond) and writes the whole file from one object, where rotation needs
each file to be a complete capture of its own (its own section and
interface blocks).

Every block is little-endian; readers take the byte order from the section
header (Wireshark, tshark, dpkt, `ripple decode` all do).
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections import deque
from dataclasses import dataclass
from typing import BinaryIO

LINKTYPE_ETHERNET = 1
DEFAULT_SNAPLEN = 262144

_SHB = 0x0A0D0D0A
_IDB = 1
_EPB = 6
_BOM = 0x1A2B3C4D
_OPT_END = 0
_OPT_SHB_USERAPPL = 4
_OPT_IF_NAME = 2
_OPT_IF_TSRESOL = 9
_TSRESOL_NS = 9  # a power of ten: 10**-9 s

_EPB_HEAD = struct.Struct("<IIIIIII")  # type, length, interface, ts high, ts low, captured, original
_EPB_OVERHEAD = _EPB_HEAD.size + 4  # the trailing length


def _pad4(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 4)


def _option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + _pad4(value)


def _block(btype: int, body: bytes) -> bytes:
    length = 12 + len(body)
    return struct.pack("<II", btype, length) + body + struct.pack("<I", length)


def header_blocks(linktype: int, snaplen: int = DEFAULT_SNAPLEN, if_name: str | None = None) -> bytes:
    """A Section Header Block and one Interface Description Block."""
    shb_opts = _option(_OPT_SHB_USERAPPL, b"ripple tap") + _option(_OPT_END, b"")
    # Section length -1: not known in advance (the file is written as it goes).
    shb = _block(_SHB, struct.pack("<IHHq", _BOM, 1, 0, -1) + shb_opts)
    idb_opts = b""
    if if_name:
        idb_opts += _option(_OPT_IF_NAME, if_name.encode("utf-8"))
    idb_opts += _option(_OPT_IF_TSRESOL, bytes([_TSRESOL_NS])) + _option(_OPT_END, b"")
    idb = _block(_IDB, struct.pack("<HHI", linktype, 0, snaplen) + idb_opts)
    return shb + idb


def packet_block(time_ns: int, frame: bytes, orig_len: int | None = None) -> bytes:
    """An Enhanced Packet Block on interface 0, time in nanoseconds."""
    pad = -len(frame) % 4
    length = _EPB_OVERHEAD + len(frame) + pad
    head = _EPB_HEAD.pack(
        _EPB,
        length,
        0,
        (time_ns >> 32) & 0xFFFFFFFF,
        time_ns & 0xFFFFFFFF,
        len(frame),
        len(frame) if orig_len is None else orig_len,
    )
    return b"".join((head, frame, b"\0" * pad, struct.pack("<I", length)))


def block_size(caplen: int) -> int:
    """The size of the Enhanced Packet Block of a `caplen`-byte frame."""
    return _EPB_OVERHEAD + caplen + (-caplen % 4)


class PcapngWriter:
    """Packets to one pcapng file, as they come: a reader can open the file
    while it grows (each block is written whole)."""

    def __init__(self, f: BinaryIO, linktype: int, snaplen: int = DEFAULT_SNAPLEN, if_name: str | None = None) -> None:
        self.f = f
        self.snaplen = snaplen
        head = header_blocks(linktype, snaplen, if_name)
        f.write(head)
        self.size = len(head)
        self.packets = 0

    def write(self, time_ns: int, frame: bytes) -> int:
        """Writes one packet (cut to the snap length); returns the bytes written."""
        orig = len(frame)
        if orig > self.snaplen:
            frame = frame[: self.snaplen]
        block = packet_block(time_ns, frame, orig)
        self.f.write(block)
        self.size += len(block)
        self.packets += 1
        return len(block)

    def flush(self) -> None:
        self.f.flush()

    def close(self) -> None:
        self.f.close()


# ---------------------------------------------------------------- rotation


@dataclass(frozen=True)
class Rotation:
    """When to start a new file (like tcpdump's -C, -G and -W)."""

    max_bytes: int | None = None  # size:MB, a file is at most this big (unless one packet is bigger)
    max_seconds: float | None = None  # time:S, a file covers at most this much capture time
    max_files: int | None = None  # files:N, only the newest N files are kept

    @property
    def rotates(self) -> bool:
        return self.max_bytes is not None or self.max_seconds is not None


ROTATE_HELP = "size:MB (1 MB = 1,000,000 bytes), time:S (seconds) or files:N"


ROTATE_MAX = 1e9  # MB, seconds (some 30 years) or files: beyond any use, within a C integer


def parse_rotation(specs: tuple[str, ...] | list[str]) -> Rotation:
    """`("size:10", "files:5")` -> Rotation(10_000_000, None, 5).  Raises
    ValueError with a message for the user."""
    max_bytes: int | None = None
    max_seconds: float | None = None
    max_files: int | None = None
    for spec in specs:
        kind, sep, value = spec.partition(":")
        kind = kind.strip().lower()
        if not sep or kind not in ("size", "time", "files"):
            raise ValueError(f"{spec!r}: expected {ROTATE_HELP}")
        try:
            number = float(value) if kind != "files" else int(value)
        except ValueError:
            number = 0
        if not number > 0:  # `not >`: NaN too
            raise ValueError(f"{spec!r}: {value!r} is not a positive {'integer' if kind == 'files' else 'number'}")
        if number > ROTATE_MAX:  # infinity too
            raise ValueError(f"{spec!r}: {value!r} is above the largest accepted, {int(ROTATE_MAX):,}")
        if kind == "size":
            max_bytes = max(1, int(number * 1_000_000))
        elif kind == "time":
            max_seconds = float(number)
        else:
            max_files = int(number)
    if max_files is not None and max_bytes is None and max_seconds is None:
        raise ValueError("files:N needs size:MB or time:S to rotate on")
    return Rotation(max_bytes, max_seconds, max_files)


def rotated_name(path: str, index: int) -> str:
    """The first file is PATH, the next PATH.1, PATH.2, ... (never reused,
    so that names sort in capture order)."""
    return path if index == 0 else f"{path}.{index}"


class RotatingWriter:
    """pcapng over one file or a rotation of files, each a whole capture
    (its own section and interface blocks) that reads on its own.

    Files are opened at the first packet that needs them; `open_first`
    creates the first one at once, to fail early on a path that cannot be
    written.
    """

    def __init__(
        self,
        path: str,
        linktype: int,
        rotation: Rotation = Rotation(),
        snaplen: int = DEFAULT_SNAPLEN,
        if_name: str | None = None,
    ) -> None:
        self.path = path
        self.linktype = linktype
        self.rotation = rotation
        self.snaplen = snaplen
        self.if_name = if_name
        self.index = -1
        self.kept: deque[str] = deque()  # files written, oldest first (files:N removes the oldest)
        self._writer: PcapngWriter | None = None
        self._start_ns = 0
        self.packets = 0
        self.bytes = 0

    def open_first(self) -> None:
        if self._writer is None:
            self._open()

    def _open(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self.index += 1
        name = rotated_name(self.path, self.index)
        self._writer = PcapngWriter(open(name, "wb"), self.linktype, self.snaplen, self.if_name)  # noqa: SIM115
        self.kept.append(name)
        limit = self.rotation.max_files
        while limit is not None and len(self.kept) > limit:
            old = self.kept.popleft()
            with contextlib.suppress(FileNotFoundError):  # removed by someone else: the aim is met
                os.unlink(old)

    def write(self, time_ns: int, frame: bytes) -> None:
        w = self._writer
        rot = self.rotation
        full = w is not None and (
            (rot.max_bytes is not None and w.size + block_size(min(len(frame), self.snaplen)) > rot.max_bytes)
            or (rot.max_seconds is not None and time_ns - self._start_ns >= rot.max_seconds * 1e9)
        )
        if w is None or (w.packets and full):
            self._open()
        w = self._writer
        assert w is not None
        if w.packets == 0:
            self._start_ns = time_ns
        self.bytes += w.write(time_ns, frame)
        self.packets += 1

    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
