"""A pcap or pcapng input (a file or a pipe) to capture events: frames,
TCP segments, reassembled streams."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from ripple_cli.capture.events import CaptureEvent, CaptureNote
from ripple_cli.capture.formats import MAGIC_SIZE, sniff_format
from ripple_cli.capture.fragments import Defragmenter, Fragment
from ripple_cli.capture.packets import DECODERS, LINKTYPE_NAMES, Decoder, PacketDecode, raw_ip
from ripple_cli.capture.pcapfile import LinkFrame, read_pcap, read_pcapng
from ripple_cli.capture.reassembly import Reassembler


@dataclass
class CaptureOptions:
    ports: frozenset[int] = frozenset()  # only connections with one of these ports (either side); empty: all
    max_flows: int = 10000  # open connections at once; beyond, the least recently active is evicted
    window: int = 8 << 20  # bytes held after a hole, per direction, before it is declared (--reassembly-window)
    history: int = 256 << 10  # delivered bytes kept per direction to compare retransmissions with


def _supported() -> str:
    return ", ".join(f"{name} ({lt})" for lt, name in sorted(LINKTYPE_NAMES.items()))


def capture_events(f: BinaryIO, name: str, options: CaptureOptions) -> Iterator[CaptureEvent]:
    """The events of the TCP connections in the capture `f` (positioned at
    its start; a pipe is fine, and events come as packets arrive), in
    capture order, then a StreamEnd("end of capture") for every stream still
    open.  `name` is the input's display name, for notes about the file."""
    head = b""
    while len(head) < MAGIC_SIZE:
        more = f.read(MAGIC_SIZE - len(head))
        if not more:
            break
        head += more
    fmt = sniff_format(head)
    if fmt == "pcap":
        yield from frame_events(read_pcap(f, head), name, options, one_linktype=True)
    elif fmt == "pcapng":
        yield from frame_events(read_pcapng(f, head), name, options)
    else:
        yield CaptureNote(None, None, "bad_capture", f"{name} is not a pcap or pcapng file (no magic)", error=True)


def frame_events(
    frames: Iterable[LinkFrame | CaptureNote], name: str, options: CaptureOptions, one_linktype: bool = False
) -> Iterator[CaptureEvent]:
    """The events of already read frames (time_ns, link type, frame bytes),
    notes passed through: for a source that has its frames some other way.
    `one_linktype`: all frames share a link type (a pcap), so an
    unsupported one ends the reading."""
    reasm = Reassembler(options.max_flows, options.window, options.history, options.ports)
    defrag = Defragmenter()
    number = 0  # frame numbers from 1, as Wireshark shows them: notes about fragments name them
    time_ns = 0
    feed = reasm.feed
    ports = options.ports
    decoders: dict[int, Decoder | None] = {}
    last_lt = -1
    decode: Decoder | None = None
    for item in frames:
        if isinstance(item, CaptureNote):
            yield item
            continue
        time_ns, lt, frame = item
        number += 1
        if lt != last_lt:
            if lt not in decoders:
                decoders[lt] = DECODERS.get(lt)
                if decoders[lt] is None:
                    yield CaptureNote(
                        None,
                        time_ns,
                        "unsupported_linktype",
                        f"link type {lt} is not supported (supported: {_supported()})",
                        error=True,
                    )
                    if one_linktype:
                        break  # nothing in the file can be read
            last_lt, decode = lt, decoders[lt]
        if decode is None:
            continue
        seg: PacketDecode = decode(frame)
        if seg.__class__ is not tuple:  # (the plain TCP path pays this one test)
            while isinstance(seg, Fragment):
                whole, notes = defrag.add(seg, time_ns, number)
                yield from notes
                seg = raw_ip(whole) if whole is not None else None
            if seg is None:
                continue
        if ports and seg[2] not in ports and seg[3] not in ports:
            continue
        events = feed(time_ns, seg)
        if events:
            yield from events
    yield from defrag.finish(time_ns)
    yield from reasm.finish()
