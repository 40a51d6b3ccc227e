"""Helpers for the Lumberjack tests: frame builders (written here, not taken
from the code under test), decoding one direction, and a frame stream read
by the tests' own reading of the layout.  What every protocol's tests use
is in tests/protocols/dissector_kit.py."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Sequence

from ripple_cli.protocols.base import DissectOptions, Item
from ripple_cli.protocols.lumberjack import LumberjackDissector
from ripple_cli.protocols.lumberjack.stream import LumberjackStream
from tests.conftest import GOLDEN as GOLDEN_ROOT
from tests.protocols.dissector_kit import feed_all, messages

GOLDEN = GOLDEN_ROOT / "protocols" / "lumberjack"
DISSECTOR = LumberjackDissector()


def u32(n: int) -> bytes:
    return struct.pack(">I", n)


def W(n: int, v: bytes = b"2") -> bytes:
    return v + b"W" + u32(n)


def A(n: int, v: bytes = b"2") -> bytes:
    return v + b"A" + u32(n)


def J(seq: int, payload: bytes, v: bytes = b"2") -> bytes:
    return v + b"J" + u32(seq) + u32(len(payload)) + payload


def D(seq: int, pairs: Sequence[tuple[bytes, bytes]], v: bytes = b"1") -> bytes:
    out = v + b"D" + u32(seq) + u32(len(pairs))
    for k, val in pairs:
        out += u32(len(k)) + k + u32(len(val)) + val
    return out


def C(payload: bytes, v: bytes = b"2") -> bytes:
    return v + b"C" + u32(len(payload)) + payload


def decode(
    data: bytes,
    pieces: Iterable[bytes] | None = None,
    options: DissectOptions | None = None,
    from_client: bool | None = None,
) -> list[Item]:
    """Every item of one direction, fed in `pieces` (default: all at once)."""
    return feed_all(LumberjackStream(options or DissectOptions(), from_client), [data] if pieces is None else pieces)


def events(items: Iterable[Item]) -> list[tuple[int, object]]:
    """(seq, event) of every Data and Json message, in stream order."""
    return [(m.fields["seq"], m.fields["event"]) for m in messages(items) if m.type in ("Data", "Json")]


def split_frames(data: bytes) -> list[bytes]:
    """The whole frames of a clean frame stream, each as its bytes: the
    tests' own reading of the layout, to check the decoder against."""
    out, p = [], 0
    while p < len(data):
        kind = data[p + 1 : p + 2]
        if kind in (b"W", b"A"):
            end = p + 6
        elif kind == b"C":
            end = p + 6 + struct.unpack_from(">I", data, p + 2)[0]
        elif kind == b"J":
            end = p + 10 + struct.unpack_from(">I", data, p + 6)[0]
        elif kind == b"D":
            end = p + 10
            for _ in range(struct.unpack_from(">I", data, p + 6)[0]):
                end += 4 + struct.unpack_from(">I", data, end)[0]
                end += 4 + struct.unpack_from(">I", data, end)[0]
        else:
            raise ValueError(f"no frame at {p}: {data[p : p + 2]!r}")
        assert end <= len(data), "a partial frame"
        out.append(data[p:end])
        p = end
    return out


def expanded(frame: bytes) -> list[bytes]:
    """The frames a C frame holds, depth first (nested C frames followed by
    their own frames), as the decoder lists them."""
    out = []
    for inner in split_frames(zlib.decompress(frame[6:])):
        out.append(inner)
        if inner[1:2] == b"C":
            out += expanded(inner)
    return out
