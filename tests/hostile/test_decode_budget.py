"""Item 1 of issue 15: a list of zero-width elements (records of no fields,
nested lists of them) may not decode into more elements than its buffer
has bytes.  The bomb is a problem of the message, worded alike by both
lanes, and costs no more than its size."""

from __future__ import annotations

from pathlib import Path

import pytest

from ripple_cli.codec.delta import CompiledSchema
from ripple_cli.codec.errors import DecodeError
from ripple_cli.codec.schema import INT, Field, ListOf, OptionOf, RecordOf, Schema
from tests.hostile.bombs import EMPTY, claiming_headers, nested_list_bomb, run_limited

MAX_RSS_KB = 512 * 1024


@pytest.mark.parametrize("pure", [False, True], ids=["fast", "pure"])
@pytest.mark.parametrize("size", [8_000, 100_000])
def test_nested_empty_lists_are_one_problem(tmp_path: Path, pure: bool, size: int) -> None:
    path = tmp_path / "bomb.ripple"
    path.write_bytes(nested_list_bomb(size))
    for args in (["decode", str(path)], ["decode", "-F", "json", str(path)], ["verify", str(path)]):
        r = run_limited(args, pure=pure)
        assert r.code == 1, (args, r.stderr)
        assert r.maxrss_kb < MAX_RSS_KB
        if args[1] == "-F":  # JSON: the problem is a record of the output
            assert b"empty elements over the decode budget" in r.stdout
        elif args[0] == "decode":
            [line] = r.stderr.splitlines()
            assert line.startswith(f"ripple: {path}: error: offset 87: Delta does not decode with schema bomb/v1: ")
            assert "empty elements over the decode budget" in line


def test_both_lanes_word_it_alike(tmp_path: Path) -> None:
    path = tmp_path / "bomb.ripple"
    path.write_bytes(nested_list_bomb(4_000))
    fast, pure = (run_limited(["decode", str(path)], pure=p) for p in (False, True))
    assert fast.stderr == pure.stderr
    assert fast.stderr == (
        f"ripple: {path}: error: offset 87: Delta does not decode with schema bomb/v1: "
        "list of 3995 empty elements over the decode budget (7 of 4005 left) at byte 7\n"
    )


def _schema(*fields: Field) -> CompiledSchema:
    return CompiledSchema(Schema(b"s", 1, INT, fields))


def test_empty_elements_within_the_budget_decode() -> None:
    s = _schema(Field(b"a", ListOf(EMPTY)), Field(b"b", OptionOf(ListOf(ListOf(RecordOf((Field(b"e", EMPTY),)))))))
    row = bytearray([0, 3, 1, 2, 1, 0])  # Set, a = 3 empties, b = Some [[{e={}}]; []]
    assert s.read_delta(bytes(row)).row == {"a": [{}, {}, {}], "b": ([[{"e": {}}], []],)}  # type: ignore[attr-defined]
    s.validate(b"\x00", bytes(row))


def test_empty_elements_need_no_bytes_after_their_count() -> None:
    """What encode writes for [{}; {}] at the end of a row, its count and
    nothing after: the count is held to the budget, not to the bytes left."""
    s = _schema(Field(b"a", ListOf(EMPTY)))
    row = bytes([0, 2])  # Set, a = 2 empties
    delta = s.read_delta(row)
    assert delta.row == {"a": [{}, {}]}  # type: ignore[attr-defined]
    s.validate(b"\x00", row)
    assert s.write_delta(delta) == row
    over = r"^list of 3 empty elements over the decode budget \(2 of 2 left\) at byte 1$"
    with pytest.raises(DecodeError, match=over):
        s.read_delta(bytes([0, 3]))


def test_the_budget_is_every_empty_element_of_the_buffer() -> None:
    s = _schema(Field(b"a", ListOf(ListOf(EMPTY))))
    ok = bytes([0, 4, 3, 2, 1, 0])  # 3 + 2 + 1 empties in a 6-byte buffer
    assert s.read_delta(ok).row == {"a": [[{}] * 3, [{}] * 2, [{}], []]}  # type: ignore[attr-defined]
    s.validate(b"\x00", ok)
    over = bytes([0, 5, 4, 3, 2, 1, 0])  # 4 + 3 + 2 + 1 in 7 bytes: each count fits what is left, the sum does not
    for decode in (s.read_delta, lambda d: s.validate(b"\x00", d)):
        with pytest.raises(
            DecodeError, match=r"^list of 2 empty elements over the decode budget \(0 of 7 left\) at byte 4$"
        ):
            decode(over)
    # the budget is the buffer's own: the same bytes read again start afresh
    with pytest.raises(DecodeError) as e:
        s.read_delta(over)
    assert e.value.pos == 4


@pytest.mark.parametrize("pure", [False, True], ids=["fast", "pure"])
def test_headers_claiming_large_payloads_are_one_damaged_region(tmp_path: Path, pure: bool) -> None:
    """Item 7: resync over them stays linear; the intact message after them is found."""
    path = tmp_path / "claims.ripple"
    data = claiming_headers(512 << 10)
    path.write_bytes(data)
    r = run_limited(["verify", str(path)], pure=pure)
    assert r.code == 1
    assert r.maxrss_kb < MAX_RSS_KB
    assert r.stdout.decode().splitlines()[-2:] == [
        f"  error: offset 0: bad_magic: bad magic 00 52 49 50 (expected 52 49 50 50, RIPP); "
        f"skipped {len(data) - 74} bytes to offset {len(data) - 74}",
        "verify: 1 stream, 1 message, 1 problem",
    ]
