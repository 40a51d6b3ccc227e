"""Printing: sexplib's `Sexp.to_string` (machine form) and `to_string_hum`."""

from __future__ import annotations

from ripple_cli.sexp.tree import Sexp

_ALWAYS = frozenset(b'"();\\') | frozenset(range(0, 33)) | frozenset(range(127, 256))


def must_escape(atom: bytes) -> bool:
    """sexplib0's `must_escape`: empty, a special or non-printable byte, or a
    block-comment delimiter `#|` / `|#` anywhere."""
    if not atom:
        return True
    if not _ALWAYS.isdisjoint(atom):
        return True
    return b"#|" in atom or b"|#" in atom


def _escaped_table() -> list[bytes]:
    # OCaml's String.escaped, byte by byte.
    table = []
    for b in range(256):
        if b == 0x22:
            table.append(b'\\"')
        elif b == 0x5C:
            table.append(b"\\\\")
        elif b == 0x0A:
            table.append(b"\\n")
        elif b == 0x09:
            table.append(b"\\t")
        elif b == 0x0D:
            table.append(b"\\r")
        elif b == 0x08:
            table.append(b"\\b")
        elif 0x20 <= b <= 0x7E:
            table.append(bytes([b]))
        else:
            table.append(b"\\%03d" % b)
    return table


_ESCAPED = _escaped_table()
_PLAIN = frozenset(range(0x20, 0x7F)) - frozenset(b'"\\')


def quote(atom: bytes) -> bytes:
    if _PLAIN.issuperset(atom):
        return b'"' + atom + b'"'
    return b'"' + b"".join([_ESCAPED[b] for b in atom]) + b'"'


def atom_text(atom: bytes) -> bytes:
    return quote(atom) if must_escape(atom) else atom


def to_string(sexp: Sexp) -> bytes:
    """The one-line machine form.  A space separates two atoms only where
    both are unquoted, as in sexplib's `to_buffer_mach`."""
    out: list[bytes] = []
    _mach(sexp, out, False)
    return b"".join(out)


def _mach(sexp: Sexp, out: list[bytes], may_need_space: bool) -> bool:
    if isinstance(sexp, bytes):
        if must_escape(sexp):
            out.append(quote(sexp))
            return False
        if may_need_space:
            out.append(b" ")
        out.append(sexp)
        return True
    if not sexp:
        out.append(b"()")
        return False
    out.append(b"(")
    need = False
    for item in sexp:
        need = _mach(item, out, need)
    out.append(b")")
    return False


def to_string_hum(sexp: Sexp, indent: int = 1, margin: int = 78) -> bytes:
    """The indented form; see `hum.py` for the layout rules."""
    from ripple_cli.sexp.hum import render_hum

    return render_hum(sexp, indent=indent, margin=margin)
