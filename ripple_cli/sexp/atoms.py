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


_PIECE = 1 << 16  # bytes escaped per join


def quote(atom: bytes) -> bytes:
    if _PLAIN.issuperset(atom):
        return b'"' + atom + b'"'
    if len(atom) <= _PIECE:
        return b'"' + b"".join([_ESCAPED[b] for b in atom]) + b'"'
    # Piece by piece: bytes.join holds an 80-byte buffer view per part, so
    # one join over a 16 MiB atom took 1.3 GB, where the pieces take the
    # size of the output and 5 MB.
    out = bytearray(b'"')
    for at in range(0, len(atom), _PIECE):
        out += b"".join([_ESCAPED[b] for b in atom[at : at + _PIECE]])
    out += b'"'
    return bytes(out)


def atom_text(atom: bytes) -> bytes:
    return quote(atom) if must_escape(atom) else atom


def escape_lines(s: str) -> str:
    """`escape_text` line by line: the newlines of a message that has
    several lines stay, what does not print within a line is escaped."""
    return s if s.isprintable() else "\n".join(escape_text(line) for line in s.split("\n"))


def escape_text(s: str) -> str:
    """`s` safe to print on one line: what the sexp form escapes is escaped
    the same way.  A byte that was not UTF-8 (kept as a surrogate by
    surrogateescape) and a control byte are `\\ddd` (OCaml's
    String.escaped: ESC is `\\027`, a newline `\\n`); any other character
    that does not print (another lone surrogate, U+2028, a bidi override)
    is `\\u{XXXX}`.  Printable text, non-ASCII letters too, is unchanged."""
    if s.isprintable():
        return s
    out = []
    for c in s:
        if c.isprintable():
            out.append(c)
            continue
        n = ord(c)
        if n < 0x80:
            out.append(_ESCAPED[n].decode("ascii"))
        elif 0xDC80 <= n <= 0xDCFF:
            out.append(f"\\{n - 0xDC00:03d}")
        else:
            out.append(f"\\u{{{n:04X}}}")
    return "".join(out)
