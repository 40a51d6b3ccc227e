"""The s-expression tree type and the atom conversions sexplib uses."""

from __future__ import annotations

import math
import re
import struct
from typing import Union

Sexp = Union[bytes, list["Sexp"]]


def float_atom(x: float) -> bytes:
    """sexplib's `sexp_of_float`: `%.15G` when it reads back to the same
    float, else `%.17G`.  glibc prints a NaN's sign, so OCaml does too."""
    if math.isnan(x):
        return b"-NAN" if math.copysign(1.0, x) < 0 else b"NAN"
    s = "%.15G" % x  # noqa: UP031 - C printf semantics, as OCaml
    if float(s) != x:
        s = "%.17G" % x  # noqa: UP031
    return s.encode("ascii")


# OCaml's conversions, as its runtime does them (runtime/floats.c
# caml_float_of_string, runtime/ints.c parse_intnat), not as Python's
# float() and int() do: those take spaces around the number, refuse
# `_1.5`, `nan(5)` and overflowing hex floats, and do not wrap `0x`
# integers.  ppx_sexp_conv reads every number of a message with them.

_C_SPACE = " \t\n\v\f\r"  # C's isspace, which strtod and strtol skip
# What glibc's strtod reads whole (after its leading spaces); Python's
# float() converts each form to the same double (both round correctly).
_STRTOD = re.compile(
    r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
    r"|(?i:inf(?:inity)?)|(?i:nan)(?:\(([0-9A-Za-z_]*)\))?)"
)
_HEX = "0123456789abcdefABCDEF"
_INT_MAX = 2**31 - 1  # C's int, for the hex exponent's saturation
_QUIET_NAN = 0x7FF8000000000000
_NAN_PAYLOAD = (1 << 51) - 1


def parse_float(text: str) -> float:
    """OCaml's `float_of_string`: `_` anywhere is dropped; then `[+-]0x...`
    by OCaml's own hex reader, anything else by C's strtod, which must
    read it all (leading spaces are skipped, trailing ones are not)."""
    t = text.replace("_", "")
    if not t:
        raise ValueError(text)
    i = 1 if t[0] in "+-" else 0
    if t[i : i + 2] in ("0x", "0X"):
        f = _float_of_hex(t[i + 2 :], text)
        return -f if t[0] == "-" else f
    m = _STRTOD.fullmatch(t.lstrip(_C_SPACE))
    if m is None:
        raise ValueError(text)
    body = m.group(0)
    negative = body.startswith("-")
    low = body.lstrip("+-").lower()
    if low.startswith("nan"):
        bits = _QUIET_NAN | (_nan_payload(m.group(1)) & _NAN_PAYLOAD)
        nan: float = struct.unpack("<d", struct.pack("<Q", bits))[0]
        return -nan if negative else nan
    if low.startswith("0x"):
        try:
            return float.fromhex(body)
        except OverflowError:  # strtod gives HUGE_VAL
            return -math.inf if negative else math.inf
    return float(body)


def _nan_payload(seq: str | None) -> int:
    """glibc's `nan(n-char-sequence)`: the sequence read as strtoull(.., 0)
    reads it; 0 when it is not a number."""
    if not seq:
        return 0
    try:
        if seq[:2] in ("0x", "0X"):
            return int(seq[2:], 16)
        if seq[0] == "0":
            return int(seq, 8)
        return int(seq, 10)
    except ValueError:
        return 0


def _float_of_hex(s: str, text: str) -> float:
    """runtime/floats.c caml_float_of_hex: at most 60 significant bits are
    kept (the rest rounded to odd), converted to a double, then scaled by
    ldexp: for a subnormal result that is two roundings, as OCaml's are."""
    m = n_bits = m_bits = x_bits = 0
    dec_point = -1
    exp = 0
    i = 0
    while i < len(s):
        c = s[i]
        i += 1
        if c == ".":
            if dec_point >= 0:
                raise ValueError(text)
            dec_point = n_bits
        elif c in "pP":
            e = _strtol_whole(s[i:], text)
            if e <= -_INT_MAX - 1:
                return 0.0
            if e >= _INT_MAX:
                return 0.0 if m == 0 else math.inf
            exp = e
            break
        else:
            d = _HEX.find(c)
            if d < 0:
                raise ValueError(text)
            d = d if d < 16 else d - 6
            n_bits += 4
            if d == 0 and m == 0:
                continue
            if m_bits < 60:
                m = (m << 4) + d
                m_bits += 4
            else:
                if d:
                    m |= 1
                x_bits += 4
    if n_bits == 0:
        raise ValueError(text)
    f = float(m)
    adj = x_bits + (dec_point - n_bits if dec_point >= 0 else 0)
    exp = max(-_INT_MAX - 1, min(_INT_MAX, exp + adj))
    if exp:
        try:
            f = math.ldexp(f, exp)
        except OverflowError:
            f = math.inf
    return f


def _strtol_whole(s: str, text: str) -> int:
    """C's strtol(s, &end, 10) that must read all of `s` (spaces before the
    number are skipped); clamped to a C long, as strtol does."""
    t = s.lstrip(_C_SPACE)
    if not t:
        raise ValueError(text)
    digits = t[1:] if t[0] in "+-" else t
    if not digits or not digits.isascii() or not digits.isdigit():
        raise ValueError(text)
    return max(-(2**63), min(2**63 - 1, int(t)))


def parse_int(text: str, bits: int | None = None) -> int:
    """OCaml's `int_of_string` (bits 63), `Int32.of_string` (32) and
    `Int64.of_string` (64), as runtime/ints.c parse_intnat reads them: a
    sign, then a decimal number, or 0x, 0o, 0b or 0u and an unsigned one
    (up to 2^bits - 1, wrapped to the signed value: `0xffffffff` is Int32
    -1); a digit first, then digits and `_`; no spaces.  `bits` None: the
    same forms without a width (the sibling protocols' texts)."""
    sign, p = (-1, 1) if text[:1] == "-" else (1, 1 if text[:1] == "+" else 0)
    base, signed = 10, True
    if text[p : p + 1] == "0" and text[p + 1 : p + 2] in ("x", "X", "o", "O", "b", "B", "u", "U"):
        base = {"x": 16, "o": 8, "b": 2, "u": 10}[text[p + 1].lower()]
        signed = False
        p += 2
    digits = text[p:]
    allowed = _HEX[: base + (6 if base == 16 else 0)]
    if not digits or digits[0] not in allowed or any(c not in allowed and c != "_" for c in digits):
        raise ValueError(text)
    res = int(digits.replace("_", ""), base)
    if bits is None:
        return sign * res
    if res >= 1 << 64:  # parse_intnat's overflow of its unsigned accumulator
        raise ValueError(text)
    if signed:
        if res > (1 << (bits - 1)) - (1 if sign > 0 else 0):
            raise ValueError(text)
    elif bits < 64 and res >= 1 << bits:
        raise ValueError(text)
    n = (sign * res) & ((1 << bits) - 1)
    return n - (1 << bits) if n >> (bits - 1) else n
