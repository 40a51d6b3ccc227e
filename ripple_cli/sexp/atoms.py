"""Atoms as sexplib writes them: when an atom must be quoted, and how
(OCaml's String.escaped).  Shared by the one-line and the indented printer."""

from __future__ import annotations

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
