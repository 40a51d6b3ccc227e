"""Golden fixtures of rstmdb RCP, one file per message type
(tests/golden/protocols/rcp/*.hex): bytes -> text and JSON (exact lines,
problems included) -> bytes again, in every chunking.

RIPPLE_UPDATE_GOLDEN=1 rewrites the expected .sexp and .jsonl files."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from rcpkit import DISSECTOR, GOLDEN, bytewise, decode, jsonl, messages, read_hex, split, texts

from ripple_cli.sexp.parse import parse_one
from tests.conftest import golden

FIXTURES = sorted(GOLDEN.glob("*.hex"))
DAMAGED = {"damaged"}  # fixtures with bytes that are no message


def test_there_are_fixtures() -> None:
    assert len(FIXTURES) == 16


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_text_and_json_are_the_golden_ones(path: Path) -> None:
    items = decode(read_hex(path))
    golden(f"protocols/rcp/{path.stem}.sexp", b"".join(line + b"\n" for line in texts(items)))
    golden(f"protocols/rcp/{path.stem}.jsonl", jsonl(items))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_each_text_encodes_to_its_bytes(path: Path) -> None:
    data = read_hex(path)
    items = decode(data)
    rebuilt = b""
    for msg in messages(items):
        encoded = DISSECTOR.encode(parse_one(msg.line))
        assert encoded == data[msg.offset : msg.offset + msg.size]
        assert DISSECTOR.encode(parse_one(msg.hum)) == encoded
        rebuilt += encoded
    if path.stem not in DAMAGED:
        assert rebuilt == data


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_every_chunking_decodes_the_same(path: Path) -> None:
    data = read_hex(path)
    whole = jsonl(decode(data))
    assert jsonl(decode(data, pieces=bytewise(data))) == whole
    rng = random.Random(path.stem)
    for _ in range(20):
        assert jsonl(decode(data, pieces=split(data, rng, rng.choice((3, 17, 200))))) == whole
