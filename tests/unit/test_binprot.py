"""bin_prot primitives (reference section 3), byte for byte.

Expected bytes and the accept/reject decisions were checked against the OCaml
bin_prot v0.15 reader and writer (`Bin_prot.Std`): e.g. `ff 05` is rejected
by OCaml (Neg_int8) and an int32 never takes the 8-byte `fc` code (Int32_code).
"""

from __future__ import annotations

import struct

import pytest

from ripple_cli.codec import binprot as bp
from ripple_cli.codec.errors import DecodeError, EncodeError
from ripple_cli.codec.schema import INT, STRING, ListOf
from ripple_cli.codec.values import compile_type


def h(s: str) -> bytes:
    return bytes.fromhex(s)


def written(writer, value) -> bytes:  # type: ignore[no-untyped-def]
    out = bytearray()
    writer(out, value)
    return bytes(out)


def read_all(reader, data: bytes):  # type: ignore[no-untyped-def]
    """Read one value that must use every byte."""
    value, end = reader(data, 0)
    assert end == len(data)
    return value


# ---------------------------------------------------------------- section 3 examples


@pytest.mark.parametrize(
    ("value", "hex_"),
    [
        (300, "fe 2c 01"),
        (-1, "ff ff"),
        (128, "fe 80 00"),
        (1700000000000000000, "fc 00 00 2a 36 fe 9c 97 17"),
    ],
)
def test_reference_int_examples(value: int, hex_: str) -> None:
    for writer, reader in ((bp.write_int, bp.read_int), (bp.write_int64, bp.read_int64)):
        if value > bp.INT_MAX:
            continue
        assert written(writer, value) == h(hex_)
        assert read_all(reader, h(hex_)) == value


def test_reference_float_example() -> None:
    assert written(bp.write_float, 101.25) == h("00 00 00 00 00 50 59 40")
    assert read_all(bp.read_float, h("00 00 00 00 00 50 59 40")) == 101.25


def test_reference_key_and_strings() -> None:
    assert written(bp.write_string, b"AAPL") == h("04 41 41 50 4c")
    assert read_all(bp.read_string, h("04 41 41 50 4c")) == b"AAPL"
    assert written(bp.write_string, b"") == h("00")
    assert written(bp.write_bool, True) == h("01")
    assert written(bp.write_bool, False) == h("00")


# ---------------------------------------------------------------- int boundaries

INT_CASES = [
    (0, "00"),
    (1, "01"),
    (0x7F, "7f"),
    (0x80, "fe 80 00"),
    (0xFF, "fe ff 00"),
    (0x7FFF, "fe ff 7f"),
    (0x8000, "fd 00 80 00 00"),
    (0x7FFFFFFF, "fd ff ff ff 7f"),
    (-1, "ff ff"),
    (-0x80, "ff 80"),
    (-0x81, "fe 7f ff"),
    (-0x8000, "fe 00 80"),
    (-0x8001, "fd ff 7f ff ff"),
    (-0x80000000, "fd 00 00 00 80"),
]
WIDE_CASES = [
    (0x80000000, "fc 00 00 00 80 00 00 00 00"),
    (-0x80000001, "fc ff ff ff 7f ff ff ff ff"),
    (bp.INT_MAX, "fc ff ff ff ff ff ff ff 3f"),
    (bp.INT_MIN, "fc 00 00 00 00 00 00 00 c0"),
]
INT64_ONLY = [
    (bp.INT_MAX + 1, "fc 00 00 00 00 00 00 00 40"),
    (bp.INT_MIN - 1, "fc ff ff ff ff ff ff ff bf"),
    (bp.INT64_MAX, "fc ff ff ff ff ff ff ff 7f"),
    (bp.INT64_MIN, "fc 00 00 00 00 00 00 00 80"),
]


@pytest.mark.parametrize(("value", "hex_"), INT_CASES)
def test_int_boundaries_all_three_kinds(value: int, hex_: str) -> None:
    for writer, reader in (
        (bp.write_int, bp.read_int),
        (bp.write_int32, bp.read_int32),
        (bp.write_int64, bp.read_int64),
    ):
        assert written(writer, value) == h(hex_), writer.__name__
        assert read_all(reader, h(hex_)) == value, reader.__name__


@pytest.mark.parametrize(("value", "hex_"), WIDE_CASES)
def test_wide_ints_int_and_int64(value: int, hex_: str) -> None:
    for writer, reader in ((bp.write_int, bp.read_int), (bp.write_int64, bp.read_int64)):
        assert written(writer, value) == h(hex_)
        assert read_all(reader, h(hex_)) == value
    with pytest.raises(EncodeError, match=f"^int32 {value} out of range$"):
        written(bp.write_int32, value)
    with pytest.raises(DecodeError) as e:
        bp.read_int32(h(hex_), 0)
    assert str(e.value) == "bad int32 code 0xfc at byte 0"


@pytest.mark.parametrize(("value", "hex_"), INT64_ONLY)
def test_int64_only_values(value: int, hex_: str) -> None:
    assert written(bp.write_int64, value) == h(hex_)
    assert read_all(bp.read_int64, h(hex_)) == value
    with pytest.raises(EncodeError, match=f"^int {value} out of range$"):
        written(bp.write_int, value)
    with pytest.raises(DecodeError) as e:
        bp.read_int(h(hex_), 0)
    assert str(e.value) == f"int {value} out of range at byte 0"


def test_int_range_limits_exact() -> None:
    assert (bp.INT_MIN, bp.INT_MAX) == (-(2**62), 2**62 - 1)
    assert (bp.INT32_MIN, bp.INT32_MAX) == (-(2**31), 2**31 - 1)
    assert (bp.INT64_MIN, bp.INT64_MAX) == (-(2**63), 2**63 - 1)
    for writer, lo, hi in (
        (bp.write_int, bp.INT_MIN, bp.INT_MAX),
        (bp.write_int32, bp.INT32_MIN, bp.INT32_MAX),
        (bp.write_int64, bp.INT64_MIN, bp.INT64_MAX),
    ):
        written(writer, lo)
        written(writer, hi)
        for bad in (lo - 1, hi + 1, 2**100, -(2**100)):
            with pytest.raises(EncodeError):
                written(writer, bad)


def test_int32_value_out_of_range_under_its_own_code_is_impossible() -> None:
    # every fd payload is a valid int32; an int32 never reads fc
    assert read_all(bp.read_int32, h("fd ff ff ff ff")) == -1
    assert read_all(bp.read_int32, h("fd 00 00 00 80")) == bp.INT32_MIN


def test_non_minimal_encodings_are_read_like_bin_prot() -> None:
    # bin_prot does not insist on the shortest code when reading
    assert read_all(bp.read_int, h("fe 05 00")) == 5
    assert read_all(bp.read_int, h("fd 05 00 00 00")) == 5
    assert read_all(bp.read_int, h("fc 05 00 00 00 00 00 00 00")) == 5
    assert read_all(bp.read_int64, h("fc 05 00 00 00 00 00 00 00")) == 5
    assert read_all(bp.read_nat0, h("fe 05 00")) == 5


@pytest.mark.parametrize("reader", [bp.read_int, bp.read_int32, bp.read_int64])
def test_neg_int8_code_holds_only_negatives(reader) -> None:  # type: ignore[no-untyped-def]
    assert read_all(reader, h("ff ff")) == -1
    assert read_all(reader, h("ff 80")) == -128
    for b in ("00", "05", "7f"):
        with pytest.raises(DecodeError) as e:
            reader(h("ff " + b), 0)
        assert str(e.value) == f"bad negative int8 {int(b, 16)} at byte 0"


@pytest.mark.parametrize("code", [*range(0x80, 0xFC), 0xFB])
def test_bad_int_codes(code: int) -> None:
    data = bytes([code]) + b"\0" * 8
    for reader in (bp.read_int, bp.read_int32, bp.read_int64, bp.read_int_any):
        with pytest.raises(DecodeError) as e:
            reader(data, 0)
        assert str(e.value) == f"bad integer code 0x{code:02x} at byte 0"


# ---------------------------------------------------------------- nat0

NAT0_CASES = [
    (0, "00"),
    (0x7F, "7f"),
    (0x80, "fe 80 00"),
    (0xFFFF, "fe ff ff"),
    (0x10000, "fd 00 00 01 00"),
    (0xFFFFFFFF, "fd ff ff ff ff"),
    (0x100000000, "fc 00 00 00 00 01 00 00 00"),
    (bp.INT_MAX, "fc ff ff ff ff ff ff ff 3f"),
]


@pytest.mark.parametrize(("value", "hex_"), NAT0_CASES)
def test_nat0_boundaries(value: int, hex_: str) -> None:
    assert written(bp.write_nat0, value) == h(hex_)
    assert read_all(bp.read_nat0, h(hex_)) == value


def test_nat0_limits() -> None:
    with pytest.raises(EncodeError, match=r"^negative length -1$"):
        written(bp.write_nat0, -1)
    with pytest.raises(EncodeError, match=rf"^length {bp.INT_MAX + 1} out of range$"):
        written(bp.write_nat0, bp.INT_MAX + 1)
    for hex_ in ("fc 00 00 00 00 00 00 00 40", "fc ff ff ff ff ff ff ff ff"):
        with pytest.raises(DecodeError) as e:
            bp.read_nat0(h(hex_), 0)
        n = struct.unpack("<Q", h(hex_)[1:])[0]
        assert str(e.value) == f"length {n} out of range at byte 0"


@pytest.mark.parametrize("code", [0xFF, 0x80, 0xFB, 0xC0])
def test_bad_nat0_codes(code: int) -> None:
    with pytest.raises(DecodeError) as e:
        bp.read_nat0(bytes([code, 0, 0, 0, 0, 0, 0, 0, 0]), 0)
    assert str(e.value) == f"bad length code 0x{code:02x} at byte 0"


# ---------------------------------------------------------------- truncation

TRUNCATABLE = [
    *[(bp.read_int, h(x)) for _, x in INT_CASES + WIDE_CASES],
    *[(bp.read_int32, h(x)) for _, x in INT_CASES],
    *[(bp.read_int64, h(x)) for _, x in INT_CASES + WIDE_CASES + INT64_ONLY],
    *[(bp.read_nat0, h(x)) for _, x in NAT0_CASES],
    (bp.read_float, h("00 00 00 00 00 50 59 40")),
    (bp.read_bool, h("01")),
    (bp.read_option_tag, h("01")),
    (bp.read_string, h("04 41 41 50 4c")),
    (bp.read_string, h("fe 03 00 61 62 63")),
    (bp.read_string, h("fd 01 00 00 00 61")),
    (compile_type(ListOf(INT)).read, h("02 01 fe 00 01")),
    (compile_type(ListOf(STRING)).read, h("02 01 61 00")),
]


@pytest.mark.parametrize(("reader", "data"), TRUNCATABLE)
def test_every_truncation_is_a_decode_error(reader, data: bytes) -> None:  # type: ignore[no-untyped-def]
    assert reader(data, 0)[1] == len(data)
    for cut in range(len(data)):
        with pytest.raises(DecodeError) as e:
            reader(data[:cut], 0)
        assert e.value.pos >= 0
    # and read from the middle of a larger buffer: same, relative to that buffer
    padded = b"\xaa\xbb" + data
    assert reader(padded, 2)[1] == len(padded)
    with pytest.raises(DecodeError):
        reader(padded[:-1], 2)


def test_truncation_messages_exact() -> None:
    cases = [
        (bp.read_int, b"", "truncated: need an integer at byte 0"),
        (bp.read_int, h("fe 01"), "truncated: need 2 bytes, 1 left at byte 1"),
        (bp.read_int64, h("fc 00 00"), "truncated: need 8 bytes, 2 left at byte 1"),
        (bp.read_nat0, b"", "truncated: need a length at byte 0"),
        (bp.read_float, h("00 00 00"), "truncated: need 8 bytes, 3 left at byte 0"),
        (bp.read_bool, b"", "truncated: need a bool at byte 0"),
        (bp.read_option_tag, b"", "truncated: need an option tag at byte 0"),
        (bp.read_string, h("05 61 62"), "truncated: string of 5 bytes, 2 left at byte 1"),
    ]
    for reader, data, msg in cases:
        with pytest.raises(DecodeError) as e:
            reader(data, 0)
        assert str(e.value) == msg


def test_bad_bool_and_option_tags() -> None:
    with pytest.raises(DecodeError) as e:
        bp.read_bool(h("02"), 0)
    assert str(e.value) == "bad bool 0x02 at byte 0"
    with pytest.raises(DecodeError) as e:
        bp.read_option_tag(h("00 ff"), 1)
    assert str(e.value) == "bad option tag 0xff at byte 1"
    with pytest.raises(DecodeError) as e:
        bp.read_tag(h("03"), 0, 3, "delta")
    assert str(e.value) == "bad delta tag 3 at byte 0"
    assert bp.read_tag(h("02"), 0, 3, "delta") == (2, 1)


# ---------------------------------------------------------------- counts before allocation


def test_list_count_larger_than_remaining_is_rejected_before_allocation() -> None:
    # count = INT_MAX: allocating first would never return
    data = h("fc ff ff ff ff ff ff ff 3f")
    with pytest.raises(DecodeError) as e:
        bp.read_count(data, 0)
    assert str(e.value) == f"list of {bp.INT_MAX} elements cannot fit in 0 bytes at byte 0"
    codec = compile_type(ListOf(INT))
    with pytest.raises(DecodeError, match="cannot fit"):
        codec.read(data + b"\x00" * 16, 0)
    with pytest.raises(DecodeError, match="cannot fit"):
        codec.skip(data, 0)
    # a count exactly equal to what is left passes the check
    assert codec.read(h("03 01 02 03"), 0) == ([1, 2, 3], 4)
    with pytest.raises(DecodeError) as e:
        codec.read(h("04 01 02 03"), 0)
    assert str(e.value) == "list of 4 elements cannot fit in 3 bytes at byte 0"


def test_huge_string_length_is_rejected_without_allocation() -> None:
    with pytest.raises(DecodeError) as e:
        bp.read_string(h("fc ff ff ff ff ff ff ff 3f 61"), 0)
    assert str(e.value) == f"truncated: string of {bp.INT_MAX} bytes, 1 left at byte 9"
    codec = compile_type(ListOf(STRING))
    with pytest.raises(DecodeError):
        codec.read(h("01 fd ff ff ff ff"), 0)


def test_float_bits_helpers() -> None:
    assert bp.float_bits(101.25) == 0x4059500000000000
    assert bp.float_bits(-0.0) == 0x8000000000000000
    assert bp.float_of_bits(0x7FF8000000000001) != bp.float_of_bits(0x7FF8000000000001)  # a NaN
    assert bp.float_bits(bp.float_of_bits(0xFFF0000000000001)) == 0xFFF0000000000001
    assert written(bp.write_float, bp.float_of_bits(0x7FF0000000000001)) == h("01 00 00 00 00 00 f0 7f")
