"""Printing: sexplib's `Sexp.to_string` (machine form) and `to_string_hum`."""

from __future__ import annotations

from ripple_cli.sexp.atoms import atom_text, must_escape, quote
from ripple_cli.sexp.hum import render_hum
from ripple_cli.sexp.tree import Sexp

__all__ = ["atom_text", "must_escape", "quote", "to_string", "to_string_hum"]


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
    return render_hum(sexp, indent=indent, margin=margin)
