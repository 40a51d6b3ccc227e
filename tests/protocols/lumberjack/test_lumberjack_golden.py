"""Golden fixtures of Lumberjack (tests/golden/protocols/lumberjack/*.hex),
real writers' bytes among them: bytes -> text and JSON (exact lines,
problems included) -> bytes again, in every chunking.

RIPPLE_UPDATE_GOLDEN=1 rewrites the expected .sexp and .jsonl files."""

from __future__ import annotations

from pathlib import Path

import pytest
from ljkit import DISSECTOR, GOLDEN, decode, expanded

from ripple_cli.protocols.base import DissectOptions, ProtoMessage
from ripple_cli.sexp.parse import parse_many
from tests.protocols.dissector_kit import (
    assert_encodes_back,
    assert_every_chunking_alike,
    assert_golden_items,
    messages,
    problems,
    read_hex,
)

FIXTURES = sorted(GOLDEN.glob("*.hex"))
DAMAGED = {"damaged"}  # fixtures with bytes that are no frame


def test_there_are_fixtures() -> None:
    assert [p.stem for p in FIXTURES] == [
        "acks",
        "bad-zlib",
        "damaged",
        "nested",
        "odd",
        "v1-compressed",
        "v1-protocol",
        "v2-client",
        "v2-json",
    ]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_text_and_json_are_the_golden_ones(path: Path) -> None:
    assert_golden_items("protocols/lumberjack", path.stem, decode(read_hex(path)))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_each_text_encodes_to_its_bytes(path: Path) -> None:
    """Outer frames give back the stream (damage aside); a frame from inside
    a C frame gives its own bytes: the C frame's inflated frames, in order,
    nested ones after the C frame holding them."""
    data = read_hex(path)
    items = decode(data)
    assert_encodes_back(DISSECTOR, items, data)
    rebuilt = b""
    inner: dict[int, list[bytes]] = {}
    for msg in messages(items):
        encoded = DISSECTOR.encode(msg.text)
        if "in_compressed" in msg.fields:
            assert msg.size == 0 and msg.offset == msg.fields["in_compressed"]
            inner.setdefault(msg.offset, []).append(encoded)
        else:
            rebuilt += encoded
    if path.stem not in DAMAGED:
        assert rebuilt == data
    if not problems(items):
        for offset, frames in inner.items():
            (c_frame,) = [m for m in messages(items) if m.offset == offset and m.size]
            assert frames == expanded(data[offset : offset + c_frame.size])


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_every_chunking_decodes_the_same(path: Path) -> None:
    assert_every_chunking_alike(lambda: DISSECTOR.stream(DissectOptions(), None), read_hex(path), seed=path.stem)


def test_golden_text_reads_back_whole() -> None:
    """The .sexp files as a whole parse, and each line encodes."""
    for path in GOLDEN.glob("*.sexp"):
        for sexp in parse_many(path.read_bytes()):
            assert DISSECTOR.encode(sexp)


def test_the_real_client_batches_as_captured() -> None:
    """lumberjack-client's bytes: W 3 then C(J 1..3), W 1 then C(J 1), pako's zlib."""
    items = decode(read_hex(GOLDEN / "v2-client.hex"))
    assert problems(items) == []
    got = [(m.type, m.offset, m.fields.get("seq"), m.fields.get("count")) for m in messages(items)]
    assert got == [
        ("Window", 0, None, 3),
        ("Compressed", 6, None, None),
        ("Json", 6, 1, None),
        ("Json", 6, 2, None),
        ("Json", 6, 3, None),
        ("Window", 96, None, 1),
        ("Compressed", 102, None, None),
        ("Json", 102, 1, None),
    ]
    c = messages(items)[1]
    assert isinstance(c, ProtoMessage) and c.line.startswith(b'(lumberjack(Compressed((version 2)(zlib"x\\156')
