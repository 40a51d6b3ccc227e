"""Printing: sexplib's `Sexp.to_string` (machine form) and `to_string_hum`."""

from __future__ import annotations

from ripple_cli.sexp.atoms import atom_text, must_escape, quote
from ripple_cli.sexp.hum import render_hum
from ripple_cli.sexp.tree import Sexp

__all__ = ["atom_text", "must_escape", "quote", "to_string", "to_string_hum"]


def to_string(sexp: Sexp) -> bytes:
    """The one-line machine form.  A space separates two atoms only where
    both are unquoted, as in sexplib's `to_buffer_mach`.  Written into one
    buffer as it goes: a list of the pieces held them all (several times
    the line) until the end."""
    out = bytearray()
    _mach(sexp, out, False)
    return bytes(out)


def _mach(sexp: Sexp, out: bytearray, may_need_space: bool) -> bool:
    if isinstance(sexp, bytes):
        if must_escape(sexp):
            out += quote(sexp)
            return False
        if may_need_space:
            out += b" "
        out += sexp
        return True
    if not sexp:
        out += b"()"
        return False
    out += b"("
    need = False
    for item in sexp:
        need = _mach(item, out, need)
    out += b")"
    return False


def to_string_hum(sexp: Sexp, indent: int = 1, margin: int = 78) -> bytes:
    """The indented form; see `hum.py` for the layout rules."""
    return render_hum(sexp, indent=indent, margin=margin)
