"""ripple's readers of message text against OCaml's own: numbers as
float_of_string, int_of_string, Int32.of_string and Int64.of_string read
them (what ppx_sexp_conv calls for every number of a message), and quoted
strings as sexplib's Sexp.of_string reads their escapes.  Thousands of forms, most
of them malformed on purpose: each is read the same, or refused by both."""

from __future__ import annotations

import random
import struct
import subprocess

from ripple_cli.sexp import to_string
from ripple_cli.sexp.parse import SexpSyntaxError, iter_sexps
from ripple_cli.sexp.tree import parse_float, parse_int
from tests.interop.ocamlkit import OcamlTools

_NUMBER_PIECES = [
    *"0197_xXobuUpPeE.+- \taAfFgni()",
    "nan",
    "inf",
    "infinity",
    "0x",
    "0b",
    "0o",
    "0u",
    "ffffffff",
    "7fffffffffffffff",
    "8000000000000000",
    "4611686018427387903",
    "4611686018427387904",
    "2147483647",
    "2147483648",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "1074",
    "1075",
    "1023",
    "1024",
    "-1074",
    "-1075",
    "1.fffffffffffff8",
    "1.fffffffffffff",
    "e308",
    "e-324",
    "0000000000000000001",
]

_NUMBER_CASES = [
    "1.5",
    " 1.5",
    "1.5 ",
    "\t1.5",
    "_1.5",
    "1_000.5",
    "0x1p1024",
    "0x1.fffffffffffff8p1023",
    "0x1p-1074",
    "0x1p-1075",
    "0x1.8p-1074",
    "0x123456789abcdef123p-1100",
    "0x1p99999999999999999999",
    "0x0p99999999999",
    "0x1p 3",
    "0x_1p3",
    " 0x1p3",
    "-nan",
    " nan",
    "nan(123)",
    "nan(0x10)",
    "nan(017)",
    "nan(zz)",
    "nan()",
    "-Infinity",
    "1e400",
    "5",
    " 5",
    "5 ",
    "_1",
    "0x_1",
    "0b_1",
    "0x1_",
    "1__2",
    "0xffffffffffffffff",
    "0x4000000000000000",
    "0x7fffffffffffffff",
    "0u18446744073709551615",
    "0xffffffff",
    "-0x1",
    "-0xffffffffffffffff",
    "-2147483649",
    "+-5",
    "",
]


def _number_cases() -> list[str]:
    rnd = random.Random(5)
    cases = dict.fromkeys(_NUMBER_CASES)
    while len(cases) < 6000:
        cases.setdefault("".join(rnd.choice(_NUMBER_PIECES) for _ in range(rnd.randint(1, 5))))
    return list(cases)


def _ripple_number(text: str) -> str:
    def conv(f) -> str:  # type: ignore[no-untyped-def]
        try:
            return str(f())
        except ValueError:
            return "ERR"

    return " ".join(
        (
            conv(lambda: format(struct.unpack("<Q", struct.pack("<d", parse_float(text)))[0], "x")),
            conv(lambda: parse_int(text, 63)),
            conv(lambda: parse_int(text, 32)),
            conv(lambda: parse_int(text, 64)),
        )
    )


def test_numbers_are_read_as_ocaml_reads_them(ocaml_tools: OcamlTools) -> None:
    cases = _number_cases()
    out = subprocess.run(
        [str(ocaml_tools.read_tool), "num"],
        input="".join(c + "\n" for c in cases),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert len(out) == len(cases)
    differ = [(c, o, _ripple_number(c)) for c, o in zip(cases, out, strict=True) if _ripple_number(c) != o]
    assert differ == [], f"{len(differ)} forms read differently (text, OCaml, ripple): {differ[:10]}"


_STRING_PIECES = [
    "\\\\",
    "\\ ",
    "\\x4",
    "\\x41",
    "\\xg",
    "\\xF",
    "\\0",
    "\\00",
    "\\000",
    "\\123",
    "\\25",
    "\\256",
    "\\q",
    "\\n",
    "\\t",
    "\\b",
    "\\r",
    '\\"',
    "\\'",
    "\\\t",
    "\\o123",
    "\\u{41}",
    "\\\r",  # a backslash before a CR that no LF follows: sexplib drops the backslash
    "\r",
    "a",
    " ",
    "x",
    "4",
    "1",
    "9",
    "f",
]


def _ripple_string(text: bytes) -> bytes:
    try:
        (atom,) = (s for _, s in iter_sexps(text))
    except SexpSyntaxError:
        return b"ERR"
    return to_string(atom)


def test_quoted_strings_are_read_as_sexplib_reads_them(ocaml_tools: OcamlTools) -> None:
    """As Sexp.of_string (parsexp) reads them, which is how the workers
    read text: an unknown escape (`\\q`, `\\ `) is kept as written, an
    unfinished `\\DDD` or `\\xHH` and one above 255 are errors.  (The old
    ocamllex reader, Sexp.scan_sexp, keeps those as written too.)"""
    rnd = random.Random(7)
    texts = list(
        dict.fromkeys(
            ('"' + "".join(rnd.choice(_STRING_PIECES) for _ in range(rnd.randint(1, 5))) + '"').encode()
            for _ in range(4000)
        )
    )
    out = subprocess.run(
        [str(ocaml_tools.read_tool), "sexp"], input=b"".join(t + b"\n" for t in texts), capture_output=True, check=True
    ).stdout.splitlines()
    ocaml = [b"ERR" if o.startswith(b"ERR ") else o for o in out]
    assert len(ocaml) == len(texts)
    assert b"ERR" in ocaml and len(set(ocaml)) > 1000  # both kinds, and many forms
    differ = [(t, o, _ripple_string(t)) for t, o in zip(texts, ocaml, strict=True) if _ripple_string(t) != o]
    assert differ == [], f"{len(differ)} strings read differently (text, sexplib, ripple): {differ[:10]}"
