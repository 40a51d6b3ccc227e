"""Which kind of input a file is, from its first bytes."""

from __future__ import annotations

import mmap

# The magic as it appears in the file: the writer's byte order decides which.
PCAP_MAGICS: dict[bytes, tuple[str, bool]] = {  # magic -> (struct byte order, nanosecond timestamps)
    bytes.fromhex("a1b2c3d4"): (">", False),
    bytes.fromhex("d4c3b2a1"): ("<", False),
    bytes.fromhex("a1b23c4d"): (">", True),
    bytes.fromhex("4d3cb2a1"): ("<", True),
}
PCAPNG_MAGIC = bytes.fromhex("0a0d0d0a")  # a Section Header Block's type: the same in both byte orders

MAGIC_SIZE = 4


def sniff_format(head: bytes | mmap.mmap) -> str:
    """`pcap`, `pcapng` or `raw` (anything else, a Ripple stream) from the
    first bytes of an input (at least 4 are needed to tell a capture)."""
    magic = bytes(head[:MAGIC_SIZE])
    if magic in PCAP_MAGICS:
        return "pcap"
    if magic == PCAPNG_MAGIC:
        return "pcapng"
    return "raw"
