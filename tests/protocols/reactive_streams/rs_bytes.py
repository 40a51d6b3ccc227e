"""Reactive Streams bytes for the tests, built by hand from ripple's
convention (man/ripple-reactive-streams.7), independently of the package
under test: a 1-byte type code, unsigned LEB128 for Ids, counts and Longs,
LEB128-length-prefixed strings and bytes, a 1-byte version in the hellos.

Also the fixtures: small streams (a raw file holds one transcript of both
sides), each named for what it shows; and decoding them (what every
protocol's tests use is in tests/protocols/dissector_kit.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.base import DissectOptions, Item
from ripple_cli.protocols.reactive_streams import ReactiveStreamsDissector
from tests.protocols.dissector_kit import feed_all, messages

UNBOUNDED = (1 << 63) - 1  # Long.MAX_VALUE
DISSECTOR = ReactiveStreamsDissector()


def leb(n: int) -> bytes:
    """Unsigned LEB128: 7 bits a byte, low first, high bit = more."""
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def lp(b: bytes) -> bytes:
    """A length-prefixed String or bytes."""
    return leb(len(b)) + b


def client_hello(version: int = 0, extensions: Iterable[int] = ()) -> bytes:
    ext = list(extensions)
    return bytes((0x01, version)) + leb(len(ext)) + b"".join(leb(e) for e in ext)


def server_hello(version: int = 0, extensions: Iterable[int] = ()) -> bytes:
    ext = list(extensions)
    return bytes((0x02, version)) + leb(len(ext)) + b"".join(leb(e) for e in ext)


def subscribe(publisher: bytes, sid: int, initial_demand: int = 0) -> bytes:
    return b"\x03" + lp(publisher) + leb(sid) + leb(initial_demand)


def request(sid: int, demand: int) -> bytes:
    return b"\x04" + leb(sid) + leb(demand)


def cancel(sid: int) -> bytes:
    return b"\x05" + leb(sid)


def on_subscribe(sid: int, element_size: int = 0) -> bytes:
    return b"\x06" + leb(sid) + leb(element_size)


def on_next(sid: int, element: bytes, fixed: bool = False) -> bytes:
    return b"\x07" + leb(sid) + (element if fixed else lp(element))


def on_complete(sid: int) -> bytes:
    return b"\x08" + leb(sid)


def on_error(sid: int, error: bytes) -> bytes:
    return b"\x09" + leb(sid) + lp(error)


def on_next_packed(sid: int, elements: list[bytes]) -> bytes:
    return b"\x0a" + leb(sid) + leb(len(elements)) + b"".join(elements)


def part(sid: int, element_id: int, data: bytes) -> bytes:
    return b"\x0b" + leb(sid) + leb(element_id) + lp(data)


def last_part(sid: int, element_id: int, data: bytes) -> bytes:
    return b"\x0c" + leb(sid) + leb(element_id) + lp(data)


def goodbye(reason: bytes) -> bytes:
    return b"\x0d" + lp(reason)


def goodbye_ack(message: bytes) -> bytes:
    return b"\x0e" + lp(message)


def int32(n: int) -> bytes:
    return n.to_bytes(4, "big")


# ---------------------------------------------------------------- fixtures

# Every message of the draft, packed and split elements, Id reuse after
# onComplete, unbounded demand: a clean conversation (verify: no problem).
CONVERSATION = b"".join(
    (
        client_hello(0, [1, 300]),
        server_hello(0, [1]),
        subscribe(b"trades", 1),
        on_subscribe(1, 0),
        request(1, 3),
        on_next(1, b'{"px":101.5}'),
        on_next(1, b""),
        part(1, 7, b"hello, "),
        part(1, 7, b"split "),
        last_part(1, 7, b"world"),
        subscribe(b"ticks", 2, 8),
        on_subscribe(2, 4),
        on_next(2, int32(42), fixed=True),
        on_next_packed(2, [int32(1), int32(2), int32(3)]),
        cancel(2),
        request(1, UNBOUNDED),
        on_next(1, b"last"),
        on_complete(1),
        subscribe(b"trades?from=2", 1, 5),
        on_subscribe(1, 0),
        on_error(1, "publisher gone \u2014 restart".encode()),
        goodbye(b"done"),
        goodbye_ack(b"bye"),
    )
)

# Odd bytes that still decode, each shown as ripple shows it: a String that
# is not UTF-8 (a warning), a non-minimal varint and a Long above
# Long.MAX_VALUE (those messages shown raw), then type code 0 (no message:
# the rest is raw).
ODD = b"".join(
    (
        client_hello(0, []),
        subscribe(b"\xff\xfe", 3, 0),
        b"\x04\x83\x00\x05",  # Request: subscriber 3 written in 2 bytes
        request(3, 1 << 63),
        on_subscribe(3, 2),
        on_next(3, b"ab", fixed=True),
        b"\x00",
        on_next(3, b"cd", fixed=True),
    )
)

# One fixture per verify rule: its bytes, and every problem (offset, kind)
# it gives, in order (the offsets are written as indexes of the parts).
_HELLOS = client_hello() + server_hello()
_H = len(_HELLOS)


def _at(*parts: bytes) -> list[int]:
    """The offset of each part in their concatenation."""
    out, at = [], 0
    for p in parts:
        out.append(at)
        at += len(p)
    return out


def _case(parts: list[bytes], expected: list[tuple[int, str]]) -> tuple[bytes, list[tuple[int, str]]]:
    offsets = _at(*parts)
    return b"".join(parts), [(offsets[i], kind) for i, kind in expected]


VIOLATIONS: dict[str, tuple[bytes, list[tuple[int, str]]]] = {
    "demand_exceeded": _case(
        [_HELLOS, subscribe(b"p", 1, 1), on_subscribe(1), on_next(1, b"a"), on_next(1, b"b")],
        [(4, "demand_exceeded")],
    ),
    "demand_exceeded_packed": _case(
        [_HELLOS, subscribe(b"p", 1, 0), on_subscribe(1, 1), request(1, 2), on_next_packed(1, [b"a", b"b", b"c"])],
        [(4, "demand_exceeded")],
    ),
    "after_cancel": _case(
        [_HELLOS, subscribe(b"p", 1), on_subscribe(1), cancel(1), request(1, 5)],
        [(4, "after_cancel")],
    ),
    "after_complete": _case(
        [_HELLOS, subscribe(b"p", 1, 5), on_subscribe(1), on_complete(1), on_next(1, b"late")],
        [(4, "after_terminal")],
    ),
    "after_error": _case(
        [_HELLOS, subscribe(b"p", 1, 5), on_subscribe(1), on_error(1, b"x"), on_complete(1)],
        [(4, "after_terminal")],
    ),
    "id_in_use": _case(
        [_HELLOS, subscribe(b"p", 1), on_subscribe(1), subscribe(b"q", 1)],
        [(3, "id_in_use")],
    ),
    "unfinished_element": _case(
        [_HELLOS, subscribe(b"p", 1, 1), on_subscribe(1), part(1, 9, b"half"), on_complete(1)],
        [(4, "unfinished_element")],
    ),
    "unfinished_at_close": _case(
        [_HELLOS, subscribe(b"p", 1, 1), on_subscribe(1), part(1, 9, b"half")],
        [(3, "unfinished_element")],
    ),
    "version_mismatch": _case(
        [client_hello(1), server_hello(0), subscribe(b"p", 1)],
        [(0, "unsupported_version"), (0, "goodbye_missing")],
    ),
    "before_hello": _case(
        [subscribe(b"p", 1), client_hello(), server_hello()],
        [(0, "before_hello")],
    ),
    "before_onsubscribe": _case(
        [_HELLOS, subscribe(b"p", 1, 1), on_next(1, b"a")],
        [(2, "before_onsubscribe")],
    ),
    "unknown_subscription": _case(
        [_HELLOS, request(4, 1)],
        [(1, "unknown_subscription")],
    ),
    "bad_demand": _case(
        [_HELLOS, subscribe(b"p", 1), on_subscribe(1), request(1, 0)],
        [(3, "bad_demand")],
    ),
    "duplicate_hello": _case(
        [_HELLOS, client_hello()],
        [(1, "duplicate_hello")],
    ),
    "duplicate_onsubscribe": _case(
        [_HELLOS, subscribe(b"p", 1), on_subscribe(1), on_subscribe(1)],
        [(3, "duplicate_onsubscribe")],
    ),
    "after_goodbye": _case(
        [_HELLOS, goodbye(b"bye"), subscribe(b"p", 1)],
        [(2, "after_goodbye"), (1, "goodbye_unanswered")],
    ),
}

CLEAN: dict[str, bytes] = {
    "conversation": CONVERSATION,
    # A version mismatch answered by goodbye: only the unsupported version's warning.
    "version_mismatch_answered": client_hello(1) + server_hello(0) + goodbye(b"version 0 only"),
    # Both sides on a later version: a warning each, no goodbye needed.
    "version_agreed": client_hello(1) + server_hello(1),
    # Ids reused after cancel, onComplete, onError: each one closed first.
    "id_reuse": b"".join(
        (
            _HELLOS,
            subscribe(b"p", 1, 1),
            on_subscribe(1),
            on_next(1, b"a"),
            cancel(1),
            subscribe(b"p", 1, 1),
            on_subscribe(1),
            on_complete(1),
            subscribe(b"p", 1),
            on_subscribe(1),
            on_error(1, b"e"),
            subscribe(b"p", 1),
        )
    ),
    # Unbounded demand (Long.MAX_VALUE) lets any number of elements through.
    "unbounded": _HELLOS
    + subscribe(b"p", 1, UNBOUNDED)
    + on_subscribe(1)
    + b"".join(on_next(1, bytes([i])) for i in range(20))
    + request(1, 5),
}
CLEAN_WARNINGS: dict[str, list[tuple[int, str]]] = {
    "version_mismatch_answered": [(0, "unsupported_version")],
    "version_agreed": [(0, "unsupported_version"), (3, "unsupported_version")],
}


# ---------------------------------------------------------------- decoding


def decode(chunks: Iterable[bytes], options: DissectOptions | None = None) -> list[Item]:
    return feed_all(DISSECTOR.stream(options or DissectOptions(), None), chunks)


def analyze(items: list[Item], sides: list[bool | None] | None = None) -> list[Problem]:
    """The analyzer's problems for decoded messages (one transcript unless
    `sides` gives each message's from_client)."""
    analyzer = DISSECTOR.analyzer(DissectOptions())
    assert analyzer is not None
    out: list[Problem] = []
    for k, m in enumerate(messages(items)):
        out += analyzer.observe(None if sides is None else sides[k], m)
    return out + analyzer.close()
