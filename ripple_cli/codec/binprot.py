"""bin_prot, the binary encoding of the OCaml workers (reference section 3).

Readers take `(buf, pos)` and return `(value, new_pos)`; writers append to a
`bytearray`.  Strings stay `bytes`: bin_prot strings are byte strings and
the canonical text must round-trip every byte.

Ranges follow the 64-bit OCaml runtime: `int` is 63-bit, `int32` and
`int64` are what their names say.  A value outside its type's range is a
decode error on read and an encode error on write.
"""

from __future__ import annotations

import struct

from ripple_cli.codec.errors import DecodeError, EncodeError

INT_MIN = -(1 << 62)
INT_MAX = (1 << 62) - 1
INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

# Prefix bytes of the variable-length integer codes.
CODE_NEG_INT8 = 0xFF
CODE_INT16 = 0xFE
CODE_INT32 = 0xFD
CODE_INT64 = 0xFC

_u16 = struct.Struct("<H")
_u32 = struct.Struct("<I")
_u64 = struct.Struct("<Q")
_i8 = struct.Struct("<b")
_i16 = struct.Struct("<h")
_i32 = struct.Struct("<i")
_i64 = struct.Struct("<q")
_f64 = struct.Struct("<d")

RANGES = {
    "int": (INT_MIN, INT_MAX),
    "int32": (INT32_MIN, INT32_MAX),
    "int64": (INT64_MIN, INT64_MAX),
}


def _need(buf: bytes, pos: int, n: int) -> None:
    if pos + n > len(buf):
        raise DecodeError(f"truncated: need {n} bytes, {len(buf) - pos} left", pos)


def read_nat0(buf: bytes, pos: int) -> tuple[int, int]:
    """A length or count: never negative, at most the 63-bit int range."""
    if pos >= len(buf):
        raise DecodeError("truncated: need a length", pos)
    code = buf[pos]
    if code < 0x80:
        return code, pos + 1
    if code == CODE_INT16:
        _need(buf, pos + 1, 2)
        return _u16.unpack_from(buf, pos + 1)[0], pos + 3
    if code == CODE_INT32:
        _need(buf, pos + 1, 4)
        return _u32.unpack_from(buf, pos + 1)[0], pos + 5
    if code == CODE_INT64:
        _need(buf, pos + 1, 8)
        n = _u64.unpack_from(buf, pos + 1)[0]
        if n > INT_MAX:
            raise DecodeError(f"length {n} out of range", pos)
        return n, pos + 9
    raise DecodeError(f"bad length code 0x{code:02x}", pos)


def read_int_any(buf: bytes, pos: int) -> tuple[int, int]:
    """The shared variable-length signed integer code, without a range check."""
    if pos >= len(buf):
        raise DecodeError("truncated: need an integer", pos)
    code = buf[pos]
    if code < 0x80:
        return code, pos + 1
    if code == CODE_NEG_INT8:
        _need(buf, pos + 1, 1)
        n = _i8.unpack_from(buf, pos + 1)[0]
        if n >= 0:  # bin_prot's Neg_int8: the one-byte code is for negatives only
            raise DecodeError(f"bad negative int8 {n}", pos)
        return n, pos + 2
    if code == CODE_INT16:
        _need(buf, pos + 1, 2)
        return _i16.unpack_from(buf, pos + 1)[0], pos + 3
    if code == CODE_INT32:
        _need(buf, pos + 1, 4)
        return _i32.unpack_from(buf, pos + 1)[0], pos + 5
    if code == CODE_INT64:
        _need(buf, pos + 1, 8)
        return _i64.unpack_from(buf, pos + 1)[0], pos + 9
    raise DecodeError(f"bad integer code 0x{code:02x}", pos)


def _ranged_reader(kind: str):  # type: ignore[no-untyped-def]
    lo, hi = RANGES[kind]

    def read(buf: bytes, pos: int) -> tuple[int, int]:
        n, end = read_int_any(buf, pos)
        if n < lo or n > hi:
            raise DecodeError(f"{kind} {n} out of range", pos)
        return n, end

    read.__name__ = f"read_{kind}"
    return read


read_int = _ranged_reader("int")
_read_int32_ranged = _ranged_reader("int32")


def read_int32(buf: bytes, pos: int) -> tuple[int, int]:
    """bin_prot's int32 reader has no 8-byte code (Int32_code on 0xfc)."""
    if pos < len(buf) and buf[pos] == CODE_INT64:
        raise DecodeError("bad int32 code 0xfc", pos)
    n: int
    n, end = _read_int32_ranged(buf, pos)
    return n, end


read_int64 = read_int_any  # every 8-byte value is a valid int64


def read_float(buf: bytes, pos: int) -> tuple[float, int]:
    _need(buf, pos, 8)
    return _f64.unpack_from(buf, pos)[0], pos + 8


def read_bool(buf: bytes, pos: int) -> tuple[bool, int]:
    if pos >= len(buf):
        raise DecodeError("truncated: need a bool", pos)
    b = buf[pos]
    if b > 1:
        raise DecodeError(f"bad bool 0x{b:02x}", pos)
    return b == 1, pos + 1


def read_string(buf: bytes, pos: int) -> tuple[bytes, int]:
    n, pos = read_nat0(buf, pos)
    if pos + n > len(buf):
        raise DecodeError(f"truncated: string of {n} bytes, {len(buf) - pos} left", pos)
    return bytes(buf[pos : pos + n]), pos + n


def read_count(buf: bytes, pos: int) -> tuple[int, int]:
    """A list length.  Every element takes at least one byte, so a count
    larger than what is left is rejected before anything is allocated."""
    n, end = read_nat0(buf, pos)
    if n > len(buf) - end:
        raise DecodeError(f"list of {n} elements cannot fit in {len(buf) - end} bytes", pos)
    return n, end


def read_tag(buf: bytes, pos: int, count: int, what: str) -> tuple[int, int]:
    """A variant's constructor index (one byte: fewer than 256 constructors)."""
    if pos >= len(buf):
        raise DecodeError(f"truncated: need the {what} tag", pos)
    t = buf[pos]
    if t >= count:
        raise DecodeError(f"bad {what} tag {t}", pos)
    return t, pos + 1


def read_option_tag(buf: bytes, pos: int) -> tuple[bool, int]:
    if pos >= len(buf):
        raise DecodeError("truncated: need an option tag", pos)
    b = buf[pos]
    if b > 1:
        raise DecodeError(f"bad option tag 0x{b:02x}", pos)
    return b == 1, pos + 1


# ---------------------------------------------------------------- writers


def write_nat0(out: bytearray, n: int) -> None:
    if n < 0x80:
        if n < 0:
            raise EncodeError(f"negative length {n}")
        out.append(n)
    elif n < 0x10000:
        out.append(CODE_INT16)
        out += _u16.pack(n)
    elif n < 0x100000000:
        out.append(CODE_INT32)
        out += _u32.pack(n)
    else:
        if n > INT_MAX:
            raise EncodeError(f"length {n} out of range")
        out.append(CODE_INT64)
        out += _u64.pack(n)


def write_int_any(out: bytearray, n: int) -> None:
    if 0 <= n < 0x80:
        out.append(n)
    elif -0x80 <= n < 0:
        out.append(CODE_NEG_INT8)
        out += _i8.pack(n)
    elif -0x8000 <= n < 0x8000:
        out.append(CODE_INT16)
        out += _i16.pack(n)
    elif INT32_MIN <= n <= INT32_MAX:
        out.append(CODE_INT32)
        out += _i32.pack(n)
    elif INT64_MIN <= n <= INT64_MAX:
        out.append(CODE_INT64)
        out += _i64.pack(n)
    else:
        raise EncodeError(f"integer {n} out of range")


def _ranged_writer(kind: str):  # type: ignore[no-untyped-def]
    lo, hi = RANGES[kind]

    def write(out: bytearray, n: int) -> None:
        if n < lo or n > hi:
            raise EncodeError(f"{kind} {n} out of range")
        write_int_any(out, n)

    write.__name__ = f"write_{kind}"
    return write


write_int = _ranged_writer("int")
write_int32 = _ranged_writer("int32")
write_int64 = _ranged_writer("int64")


def write_float(out: bytearray, x: float) -> None:
    out += _f64.pack(x)


def write_bool(out: bytearray, b: bool) -> None:
    out.append(1 if b else 0)


def write_string(out: bytearray, s: bytes) -> None:
    write_nat0(out, len(s))
    out += s


def float_bits(x: float) -> int:
    bits: int = _u64.unpack(_f64.pack(x))[0]
    return bits


def float_of_bits(bits: int) -> float:
    x: float = _f64.unpack(_u64.pack(bits))[0]
    return x
