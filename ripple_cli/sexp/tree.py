"""The s-expression tree type and the atom conversions sexplib uses."""

from __future__ import annotations

import math
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


def parse_float(text: str) -> float:
    """OCaml's `float_of_string`: decimal, hex (`0x1p3`), `nan`, `inf`, `_`."""
    t = text.replace("_", "")
    low = t.lower()
    sign = -1.0 if low.startswith("-") else 1.0
    body = low.lstrip("+-")
    if body in ("nan",):
        return math.copysign(math.nan, sign)
    if body in ("inf", "infinity"):
        return sign * math.inf
    if body.startswith("0x"):
        return float.fromhex(t)
    if not body or body[0] not in "0123456789.":
        raise ValueError(text)
    return float(t)


def parse_int(text: str) -> int:
    """OCaml's `int_of_string`: decimal (leading zeros allowed), 0x, 0o, 0b, `_`."""
    t = text.replace("_", "")
    if not t or t[0] == "_":
        raise ValueError(text)
    try:
        return int(t, 10)
    except ValueError:
        return int(t, 0)
