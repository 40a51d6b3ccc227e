"""The C fast lane's tables (opcodes, program header, problem records) are
layout.py's: the extension built here says so, and one that does not is
refused (ripple runs pure) with one line on stderr."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import cast

import pytest

from ripple_cli.codec.fast import _load, checked, layout
from ripple_cli.codec.fast.layout import LAYOUT
from ripple_cli.codec.fast.program import program_words
from ripple_cli.codec.schema import INT, STRING, Field, Schema


def _built() -> ModuleType:
    try:
        return importlib.import_module("ripple_cli.codec.fast._speedups")
    except ImportError:
        pytest.skip("the C extension is not built here")


def test_the_built_extension_has_layout_py_tables() -> None:
    accel = _built()
    assert accel.LAYOUT == LAYOUT
    kinds = (accel.REC_SEQ_ORDER, accel.REC_BEFORE_SCHEMA, accel.REC_DUPLICATE, accel.REC_GAP)
    assert kinds == (layout.REC_SEQ_ORDER, layout.REC_BEFORE_SCHEMA, layout.REC_DUPLICATE, layout.REC_GAP)
    assert checked(accel) is accel


def test_layout_py_is_consistent() -> None:
    assert sorted(layout.OPCODES.values()) == list(range(1, len(layout.OPCODES) + 1))
    assert layout.REC_WORDS == len(layout.REC_FIELDS) == 6
    assert (layout.PROG_KEY, layout.PROG_ROW, layout.PROG_CTORS) == (0, 1, 2) == tuple(range(layout.HEADER_WORDS))
    code, _atoms, _json, _names = program_words(Schema(b"s", 1, STRING, (Field(b"n", INT),)))
    words = len(code) // cast(int, LAYOUT["program_word_bytes"])
    assert words == layout.HEADER_WORDS + 1 + 2 + 2 + 1  # STRING key, RECORD 1 (name, INT)


def _mismatched(table: dict[str, object]) -> list[tuple[str, dict[str, object]]]:
    """Tables that differ from `table` in one way each."""
    opcodes = dict(cast(dict[str, int], table["opcodes"]))
    opcodes["ENUM"] += 1
    kinds = dict(cast(dict[str, int], table["record_kinds"]))
    kinds["GAP"], kinds["DUPLICATE"] = kinds["DUPLICATE"], kinds["GAP"]
    fields = cast(tuple[str, ...], table["record_fields"])
    return [
        ("opcodes", {**table, "opcodes": opcodes}),
        ("record_kinds", {**table, "record_kinds": kinds}),
        ("record_fields", {**table, "record_fields": fields[::-1]}),
        ("record_word_bytes", {**table, "record_word_bytes": 4}),
        ("program_header", {**table, "program_header": ("row", "key", "ctors")}),
    ]


@pytest.mark.parametrize("what", ["opcodes", "record_kinds", "record_fields", "record_word_bytes", "program_header"])
def test_a_module_with_other_tables_is_refused_in_one_line(what: str, capsys: pytest.CaptureFixture[str]) -> None:
    fake = ModuleType("fake_speedups")
    fake.LAYOUT = dict(_mismatched(LAYOUT))[what]  # type: ignore[attr-defined]
    assert checked(fake) is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ripple: warning: ") and f"({what})" in err


def test_a_module_without_a_table_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert checked(ModuleType("fake_speedups")) is None
    assert "(no LAYOUT)" in capsys.readouterr().err


def test_layout_py_changed_without_a_rebuild_refuses_the_built_extension(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The loader itself: the extension, imported, is not used (the pure
    lane is) when layout.py says otherwise."""
    _built()
    monkeypatch.delenv("RIPPLE_PURE", raising=False)
    monkeypatch.setattr(layout, "LAYOUT", dict(_mismatched(LAYOUT))["opcodes"])
    _load.cache_clear()
    try:
        assert _load() is None
        assert "(opcodes)" in capsys.readouterr().err
    finally:
        monkeypatch.undo()
        _load.cache_clear()
    assert _load() is not None
