"""Reading s-expression text as sexplib's parser does.

Our own parser rather than sexpdata: sexpdata turns atoms into Python
strings and numbers and does not know OCaml's decimal `\\DDD` escapes, so
byte strings would not come back exact.

Supported: atoms, quoted strings with OCaml escapes (`\\n \\t \\b \\r \\\\
\\" \\' \\DDD \\xHH`, backslash-newline continuation), `;` line comments,
`#| |#` block comments (nested), and `#;` s-expression comments.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ripple_cli.sexp.tree import Sexp

# Lists nest at most this deep: deeper text is refused with a syntax error
# rather than exhausting Python's stack (the reader recurses).  A schema's
# types nest at most 64 deep (codec/schema.py), which a message's text
# needs about twice over: 256 leaves room for every valid input.
MAX_DEPTH = 256


class SexpSyntaxError(ValueError):
    """`incomplete` is set when more text could still complete the input."""

    def __init__(self, message: str, pos: int, text: bytes, incomplete: bool = False) -> None:
        line = text.count(b"\n", 0, pos) + 1
        col = pos - (text.rfind(b"\n", 0, pos) + 1) + 1
        super().__init__(f"line {line}, column {col}: {message}")
        self.message = message
        self.pos = pos
        self.line = line
        self.column = col
        self.incomplete = incomplete

    def with_line(self, line: int) -> SexpSyntaxError:
        """The same error, its line counted from the start of the whole input."""
        self.args = (f"line {line}, column {self.column}: {self.message}",)
        self.line = line
        return self


_WS = frozenset(b" \t\n\r\x0c")
_ATOM_END = frozenset(b' \t\n\r\x0c()";')
_SIMPLE_ESC = {
    ord("n"): 10,
    ord("t"): 9,
    ord("b"): 8,
    ord("r"): 13,
    ord("\\"): 92,
    ord('"'): 34,
    ord("'"): 39,
}


class _Reader:
    def __init__(self, text: bytes, final: bool = True) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0  # lists open around the reader
        # False when more text may follow (SexpStream): a comment that runs
        # to the end of the text may then still go on.
        self.final = final

    def error(self, message: str, pos: int | None = None, incomplete: bool = False) -> SexpSyntaxError:
        return SexpSyntaxError(message, self.pos if pos is None else pos, self.text, incomplete)

    def skip_space(self) -> None:
        text = self.text
        n = len(text)
        # "#;" comments out the next s-expression, and "#;#;a b" both a and
        # b: they are counted, not recursed into (a line of 10,000 "#;"
        # would otherwise overflow Python's stack).
        pending = 0
        while True:
            while self.pos < n:
                c = text[self.pos]
                if c in _WS:
                    self.pos += 1
                elif c == 0x3B:  # ;
                    nl = text.find(b"\n", self.pos)
                    if nl < 0 and not self.final:
                        raise self.error("unterminated line comment", incomplete=True)
                    self.pos = n if nl < 0 else nl + 1
                elif text.startswith(b"#|", self.pos):
                    self.skip_block_comment()
                elif text.startswith(b"#;", self.pos):
                    self.pos += 2
                    pending += 1
                else:
                    break
            if not pending:
                return
            commented = self.datum()  # the commented-out s-expression
            pending -= 1
            if isinstance(commented, bytes) and self.pos >= n and not self.final:
                raise self.error("an atom cut by the end of the text", incomplete=True)

    def skip_block_comment(self) -> None:
        start = self.pos
        depth = 0
        text = self.text
        while self.pos < len(text):
            if text.startswith(b"#|", self.pos):
                depth += 1
                self.pos += 2
            elif text.startswith(b"|#", self.pos):
                depth -= 1
                self.pos += 2
                if depth == 0:
                    return
            elif text[self.pos] == 0x22:  # strings inside comments are skipped whole
                self.read_quoted()
            else:
                self.pos += 1
        raise self.error("unterminated block comment", start, incomplete=True)

    def read(self) -> Sexp:
        self.skip_space()
        return self.datum()

    def datum(self) -> Sexp:
        """The s-expression that starts here (no space or comment first)."""
        text = self.text
        if self.pos >= len(text):
            raise self.error("unexpected end of input", incomplete=True)
        c = text[self.pos]
        if c == 0x28:  # (
            return self.read_list()
        if c == 0x29:
            raise self.error("unexpected ')'")
        if c == 0x22:
            return self.read_quoted()
        return self.read_atom()

    def read_list(self) -> list[Sexp]:
        start = self.pos
        if self.depth >= MAX_DEPTH:
            raise self.error(f"lists nested more than {MAX_DEPTH} deep")
        self.pos += 1
        items: list[Sexp] = []
        # Recursion, bounded by MAX_DEPTH.
        self.depth += 1
        while True:
            self.skip_space()
            if self.pos >= len(self.text):
                raise self.error("unclosed '('", start, incomplete=True)
            if self.text[self.pos] == 0x29:
                self.pos += 1
                self.depth -= 1
                return items
            items.append(self.read())

    def read_atom(self) -> bytes:
        text = self.text
        start = self.pos
        n = len(text)
        i = start
        while i < n and text[i] not in _ATOM_END:
            if text[i] == 0x7C and i + 1 < n and text[i + 1] == 0x23:  # |#
                raise self.error("unexpected '|#'", i)
            if text[i] == 0x23 and i + 1 < n and text[i + 1] == 0x7C and i > start:  # #| inside an atom
                raise self.error("unexpected '#|' inside an atom", i)
            i += 1
        self.pos = i
        return bytes(text[start:i])

    def read_quoted(self) -> bytes:
        text = self.text
        start = self.pos
        i = start + 1
        n = len(text)
        out = bytearray()
        while True:
            j = i
            while j < n and text[j] != 0x22 and text[j] != 0x5C:
                j += 1
            out += text[i:j]
            if j >= n:
                raise self.error("unterminated string", start, incomplete=True)
            if text[j] == 0x22:
                self.pos = j + 1
                return bytes(out)
            # backslash escape
            if j + 1 >= n:
                raise self.error("unterminated string", start, incomplete=True)
            e = text[j + 1]
            if e in _SIMPLE_ESC:
                out.append(_SIMPLE_ESC[e])
                i = j + 2
            elif 0x30 <= e <= 0x39:
                digits = text[j + 1 : j + 4]
                if j + 4 > n and digits.isdigit():  # cut by the end of this chunk
                    raise self.error("unterminated string", start, incomplete=True)
                if len(digits) != 3 or not digits.isdigit():
                    raise self.error("bad escape: \\DDD needs three decimal digits", j)
                v = int(digits)
                if v > 255:
                    raise self.error(f"bad escape: \\{digits.decode()} is above 255", j)
                out.append(v)
                i = j + 4
            elif e == 0x78:  # \xHH
                hx = text[j + 2 : j + 4]
                if j + 4 > n:
                    raise self.error("unterminated string", start, incomplete=True)
                # int(hx, 16) alone would also take " f", "+f" or "f ".
                if len(hx) != 2 or not all(c in b"0123456789abcdefABCDEF" for c in hx):
                    raise self.error("bad escape: \\x needs two hex digits", j)
                out.append(int(hx, 16))
                i = j + 4
            elif e == 0x0D and j + 2 >= n:
                raise self.error("unterminated string", start, incomplete=True)
            elif e == 0x0A or (e == 0x0D and text[j + 2 : j + 3] == b"\n"):
                # Line continuation: skip the newline and the next line's blanks.
                i = j + (3 if e == 0x0D else 2)
                while i < n and text[i] in b" \t":
                    i += 1
            elif e == 0x0D:
                # A CR that no LF follows: parsexp keeps the CR and drops the
                # backslash (it is not an unknown escape, kept as written).
                out.append(0x0D)
                i = j + 2
            else:
                # sexplib keeps an unknown escape as written.
                out.append(0x5C)
                out.append(e)
                i = j + 2


def iter_sexps(text: bytes) -> Iterator[tuple[int, Sexp]]:
    """Every top-level s-expression with its starting offset."""
    r = _Reader(text)
    while True:
        r.skip_space()
        if r.pos >= len(text):
            return
        start = r.pos
        yield start, r.read()


class SexpStream:
    """Top-level s-expressions from text that arrives in chunks, each with
    the line it starts on.  Holds only the unfinished tail."""

    def __init__(self) -> None:
        self._buf = b""
        self._line = 1  # line number of _buf's first byte
        self._col = 0  # bytes of that line before _buf's first byte
        self._ends = _Ends()

    def feed(self, data: bytes) -> list[tuple[int, Sexp]]:
        self._buf += data
        # Parsing starts over at the unfinished expression each time: only
        # once the new bytes may have finished one, or one long expression
        # arriving in many chunks is parsed again for each (quadratic).
        if not self._ends.scan(data):
            return []
        out = self._take(final=False)
        self._ends = _Ends()
        self._ends.scan(self._buf)  # what is left: the start of the next expression
        return out

    def finish(self) -> list[tuple[int, Sexp]]:
        return self._take(final=True)

    def _take(self, final: bool) -> list[tuple[int, Sexp]]:
        r = _Reader(self._buf, final)
        out: list[tuple[int, Sexp]] = []
        done = 0
        line, counted = self._line, 0  # the line at byte `counted`: newlines counted once, not per item
        try:
            while True:
                r.skip_space()
                if r.pos >= len(self._buf):
                    done = r.pos
                    break
                start = r.pos
                value = r.read()
                if isinstance(value, bytes) and r.pos >= len(self._buf) and not final:
                    break  # an atom cut by the chunk boundary: wait for the rest
                line += self._buf.count(b"\n", counted, start)
                counted = start
                out.append((line, value))
                done = r.pos
        except SexpSyntaxError as e:
            # Before the end, what came before the error is returned first
            # and the next call (at the latest `finish`) parses from there
            # again and raises it: every chunking gives the same values
            # before the same error.
            if not (e.incomplete and not final) and (final or not out):
                e_line = self._line + self._buf.count(b"\n", 0, e.pos)
                err = SexpSyntaxError(e.message, e.pos, self._buf)
                if e_line == self._line:
                    err.column += self._col
                raise err.with_line(e_line) from None
        nl = self._buf.rfind(b"\n", 0, done)
        self._col = self._col + done if nl < 0 else done - (nl + 1)
        self._line += self._buf.count(b"\n", 0, done)
        self._buf = self._buf[done:]
        return out


_NESTED = re.compile(rb'[()"]|#[|;]|;')  # inside a list: what changes the depth or the state
_TOP = re.compile(rb'[()"]|#[|;]|;|[^\s()";#|]')  # at the top, an atom's first byte too
_IN_STRING = re.compile(rb'["\\]')
_IN_BLOCK = re.compile(rb"\|#|#\|")


class _Ends:
    """Follows parentheses, strings and comments over the bytes as they come,
    to tell whether a top-level expression may have ended in them.  It may
    say so when none has (a parse finds out), never the other way round for
    the text `encode` reads; `finish` parses whatever is left anyway."""

    def __init__(self) -> None:
        self.depth = 0
        self.state = 0  # 0 normal, 1 in a string, 2 in a line comment, 3 in a block comment
        self.escape = False  # in a string, after a backslash
        self.blocks = 0  # nested block comments

    def scan(self, data: bytes) -> bool:
        ended = False
        i, n = 0, len(data)
        while i < n:
            if self.state == 1:
                if self.escape:
                    self.escape, i = False, i + 1
                    continue
                m = _IN_STRING.search(data, i)
                if m is None:
                    return ended
                i = m.end()
                if m.group() == b"\\":
                    self.escape = True
                else:
                    self.state = 0
                    ended = ended or self.depth == 0  # a top-level string
            elif self.state == 2:
                j = data.find(b"\n", i)
                if j < 0:
                    return ended
                self.state, i = 0, j + 1
            elif self.state == 3:
                m = _IN_BLOCK.search(data, i)
                if m is None:
                    return ended
                i = m.end()
                self.blocks += 1 if m.group() == b"#|" else -1
                if self.blocks == 0:
                    self.state = 0
            else:
                m = (_NESTED if self.depth else _TOP).search(data, i)
                if m is None:
                    return ended
                i, c = m.end(), m.group()
                if c == b"(":
                    self.depth += 1
                elif c == b")":
                    self.depth -= 1
                    if self.depth <= 0:
                        self.depth, ended = 0, True
                elif c == b'"':
                    self.state = 1
                elif c == b";":
                    self.state = 2
                elif c == b"#|":
                    self.state, self.blocks = 3, 1
                elif c == b"#;":
                    pass  # comments out the next expression, which is still counted
                elif self.depth == 0:
                    ended = True  # a top-level atom: rare, parsed at once
        return ended


def parse_many(text: bytes) -> list[Sexp]:
    return [s for _, s in iter_sexps(text)]


def parse_one(text: bytes) -> Sexp:
    items = parse_many(text)
    if len(items) != 1:
        raise SexpSyntaxError(f"expected one s-expression, found {len(items)}", 0, text)
    return items[0]
