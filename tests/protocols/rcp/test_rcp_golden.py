"""Golden fixtures of rstmdb RCP, one file per message type
(tests/golden/protocols/rcp/*.hex): bytes -> text and JSON (exact lines,
problems included) -> bytes again, in every chunking.

RIPPLE_UPDATE_GOLDEN=1 rewrites the expected .sexp and .jsonl files."""

from __future__ import annotations

from pathlib import Path

import pytest
from rcpkit import DISSECTOR, GOLDEN, decode

from ripple_cli.protocols.base import DissectOptions
from tests.protocols.dissector_kit import (
    assert_encodes_back,
    assert_every_chunking_alike,
    assert_golden_items,
    messages,
    read_hex,
)

FIXTURES = sorted(GOLDEN.glob("*.hex"))
DAMAGED = {"damaged"}  # fixtures with bytes that are no message


def test_there_are_fixtures() -> None:
    assert len(FIXTURES) == 16


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_text_and_json_are_the_golden_ones(path: Path) -> None:
    assert_golden_items("protocols/rcp", path.stem, decode(read_hex(path)))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_each_text_encodes_to_its_bytes(path: Path) -> None:
    data = read_hex(path)
    items = decode(data)
    assert_encodes_back(DISSECTOR, items, data)
    if path.stem not in DAMAGED:
        assert b"".join(DISSECTOR.encode(m.text) for m in messages(items)) == data


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_every_chunking_decodes_the_same(path: Path) -> None:
    assert_every_chunking_alike(lambda: DISSECTOR.stream(DissectOptions(), None), read_hex(path), seed=path.stem)
