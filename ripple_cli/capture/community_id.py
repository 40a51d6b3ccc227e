"""Community ID (version 1): the flow hash Zeek, Suricata and others write
beside a connection, so that ripple's rows join theirs.

Spec: github.com/corelight/community-id-spec.  For a TCP connection it is
`1:` + base64(SHA-1(seed (2 bytes, big-endian) + saddr + daddr + proto
(1 byte) + 0 (1 byte) + sport (2 bytes) + dport (2 bytes))), the endpoints
ordered (address, then port, smaller first) so that both directions of a
connection give the same ID.  tests/capture/test_community_id_baseline.py checks it
against the spec's published baseline.

Written here rather than taken from PyPI's `communityid` (Corelight's):
for TCP it is these few lines of the standard library, that package has
had no release since 2023, and a dependency would come with every install
(the demo's too) for what hashlib and struct already do.

A raw stream has no addresses, so no Community ID: the callers give None.
"""

from __future__ import annotations

import base64
import hashlib
import socket
import struct
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ripple_cli.capture.events import Endpoint

VERSION = 1
TCP = 6
SEED_MAX = 0xFFFF


def _address(host: str) -> bytes:
    return socket.inet_pton(socket.AF_INET6 if ":" in host else socket.AF_INET, host)


def _mapped(address: bytes) -> bytes:
    return b"\0" * 10 + b"\xff\xff" + address if len(address) == 4 else address


@lru_cache(maxsize=4096)
def community_id(a: Endpoint, b: Endpoint, seed: int = 0, proto: int = TCP) -> str:
    """The Community ID of the flow between `a` and `b` (either order)."""
    if not 0 <= seed <= SEED_MAX:
        raise ValueError(f"Community ID seed {seed} is not in 0..{SEED_MAX}")
    sa, da = _address(a.host), _address(b.host)
    if len(sa) != len(da):
        # Only the tap's proxy pairs families (an IPv6 client, an IPv4
        # upstream): the IPv4 one as IPv4-mapped IPv6, as its recording (-w) writes it.
        sa, da = _mapped(sa), _mapped(da)
    sp, dp = a.port, b.port
    if (da, dp) < (sa, sp):  # the smaller endpoint first: one ID for both directions
        sa, da, sp, dp = da, sa, dp, sp
    digest = hashlib.sha1(
        struct.pack("!H", seed) + sa + da + struct.pack("!BBHH", proto, 0, sp, dp), usedforsecurity=False
    ).digest()
    return f"{VERSION}:{base64.b64encode(digest).decode('ascii')}"
