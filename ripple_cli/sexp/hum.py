"""sexplib's `Sexp.to_string_hum`, byte for byte.

sexplib lays the indented form out with OCaml's Format module (a hov
"structural" box per list, a space break between elements, margin 78).  To
match its line breaks exactly this is a port of the parts of Format that
sexplib uses (OCaml 4.13 stdlib format.ml: the token queue, the scan stack
that measures boxes and breaks, and the box/break decisions), not an
approximation of its look.
"""

from __future__ import annotations

import io
from collections import deque
from collections.abc import Iterator
from typing import Any

from ripple_cli.sexp.atoms import _ESCAPED, must_escape, quote
from ripple_cli.sexp.tree import Sexp

_UNKNOWN = -1
_INFINITY = 1000000010

# token kinds
_TEXT, _BEGIN, _END, _BREAK, _NEWLINE = range(5)
# box types
_HOV, _BOX, _FITS = range(3)


class _Token:
    __slots__ = ("arg", "kind", "length", "size")

    def __init__(self, size: int, kind: int, arg: Any, length: int) -> None:
        self.size = size
        self.kind = kind
        self.arg = arg
        self.length = length


class _Formatter:
    def __init__(self, margin: int = 78, min_space_left: int = 10) -> None:
        self.margin = margin
        self.max_indent = margin - min_space_left
        self.space_left = margin
        self.current_indent = 0
        self.is_new_line = True
        self.left_total = 1
        self.right_total = 1
        self.curr_depth = 1
        sys_tok = _Token(_UNKNOWN, _BEGIN, (0, _HOV), 0)
        self.queue: deque[_Token] = deque([sys_tok])
        self.scan_stack: list[tuple[int, _Token]] = []
        self._init_scan_stack()
        self.scan_stack.append((1, sys_tok))
        self.format_stack: list[tuple[int, int]] = []
        # One growing text rather than a list of its pieces: a piece is a
        # few bytes, and a list of them cost some 25 times the text (a
        # Handshake of 100,000 schemas: 17 MB of text, over 400 MB).
        self.out = io.StringIO()

    def _init_scan_stack(self) -> None:
        self.scan_stack = [(-1, _Token(_UNKNOWN, _TEXT, "", 0))]

    # -- output
    def _newline_indent(self, offset: int, width: int) -> None:
        self.out.write("\n")
        self.is_new_line = True
        indent = self.margin - width + offset
        real = min(self.max_indent, indent)
        self.current_indent = real
        self.space_left = self.margin - real
        self.out.write(" " * real)

    def _same_line(self, width: int) -> None:
        self.space_left -= width
        self.out.write(" " * width)

    def _force_break_line(self) -> None:
        if not self.format_stack:
            self.out.write("\n")
            return
        box_type, width = self.format_stack[-1]
        if width > self.space_left and box_type != _FITS:
            self._newline_indent(0, width)

    def _format(self, size: int, tok: _Token) -> None:
        kind = tok.kind
        if kind == _TEXT:
            self.space_left -= size
            self.out.write(tok.arg)
            self.is_new_line = False
        elif kind == _BEGIN:
            off, ty = tok.arg
            if self.margin - self.space_left > self.max_indent:
                self._force_break_line()
            width = self.space_left - off
            self.format_stack.append((ty if size > self.space_left else _FITS, width))
        elif kind == _END:
            if self.format_stack:
                self.format_stack.pop()
        elif kind == _NEWLINE:
            if self.format_stack:
                self._newline_indent(0, self.format_stack[-1][1])
            else:
                self.out.write("\n")
        elif kind == _BREAK:
            if not self.format_stack:
                return
            fits_width, off = tok.arg
            box_type, width = self.format_stack[-1]
            if box_type == _HOV:
                if size > self.space_left:
                    self._newline_indent(off, width)
                else:
                    self._same_line(fits_width)
            elif box_type == _BOX:
                if self.is_new_line:
                    self._same_line(fits_width)
                elif size > self.space_left or self.current_indent > self.margin - width + off:
                    self._newline_indent(off, width)
                else:
                    self._same_line(fits_width)
            else:
                self._same_line(fits_width)

    # -- the queue and the scan stack
    def _advance_left(self) -> None:
        q = self.queue
        while q:
            tok = q[0]
            if tok.size >= 0 or self.right_total - self.left_total >= self.space_left:
                q.popleft()
                self._format(tok.size if tok.size >= 0 else _INFINITY, tok)
                self.left_total += tok.length
            else:
                return

    def _enqueue(self, tok: _Token) -> None:
        self.right_total += tok.length
        self.queue.append(tok)

    def _set_size(self, is_break: bool) -> None:
        left_total, tok = self.scan_stack[-1]
        if left_total < self.left_total:
            self._init_scan_stack()
            return
        if (tok.kind == _BREAK and is_break) or (tok.kind == _BEGIN and not is_break):
            tok.size = self.right_total + tok.size
            self.scan_stack.pop()

    def _scan_push(self, set_break: bool, tok: _Token) -> None:
        self._enqueue(tok)
        if set_break:
            self._set_size(True)
        self.scan_stack.append((self.right_total, tok))

    # -- the Format calls sexplib makes
    def open_box(self, indent: int) -> None:
        self.curr_depth += 1
        self._scan_push(False, _Token(-self.right_total, _BEGIN, (indent, _BOX), 0))

    def close_box(self) -> None:
        if self.curr_depth > 1:
            self._enqueue(_Token(0, _END, None, 0))
            self._set_size(True)
            self._set_size(False)
            self.curr_depth -= 1

    def string(self, s: str) -> None:
        self._enqueue(_Token(len(s), _TEXT, s, len(s)))
        self._advance_left()

    def space(self) -> None:
        self._scan_push(True, _Token(-self.right_total, _BREAK, (1, 0), 1))

    def force_newline(self) -> None:
        self._enqueue(_Token(0, _NEWLINE, None, 0))
        self._advance_left()

    def flush(self) -> str:
        while self.curr_depth > 1:
            self.close_box()
        self.right_total = _INFINITY
        self._advance_left()
        return self.out.getvalue()


def _escaped(b: bytes) -> str:
    return "".join(_ESCAPED[c].decode("latin-1") for c in b)


def _atom(f: _Formatter, atom: bytes) -> None:
    if not must_escape(atom):
        f.string(atom.decode("latin-1"))
        return
    nl = atom.find(b"\n")
    if nl < 0 or nl == len(atom) - 1:
        f.string(quote(atom).decode("latin-1"))
        return
    # A multi-line string: one source line per line, continued with `\`.
    f.open_box(0)
    f.string(' "')
    lines = atom.split(b"\n")
    for i, line in enumerate(lines):
        f.string(_escaped(line))
        if i < len(lines) - 1:
            f.string("\\")
            f.force_newline()
            f.string("\\n")
    f.string('"')
    f.close_box()


_DONE = object()


def _pp(f: _Formatter, sexp: Sexp, indent: int) -> None:
    # An explicit stack: deep lists must not hit Python's recursion limit.
    # Lists are walked by iterator, so that a node made as it is walked
    # (codec/text.py's lazy Handshake schemas) is never built whole.
    stack: list[Iterator[Sexp]] = []
    node: Any = sexp
    while True:
        if node is not None:
            if isinstance(node, bytes):
                _atom(f, node)
            else:
                items = iter(node)
                first = next(items, _DONE)
                if first is _DONE:
                    f.string("()")
                else:
                    f.open_box(indent)
                    f.string("(")
                    stack.append(items)
                    node = first
                    continue
        if not stack:
            return
        node = next(stack[-1], _DONE)
        if node is not _DONE:
            f.space()
        else:
            stack.pop()
            f.string(")")
            f.close_box()
            node = None


def render_hum(sexp: Sexp, indent: int = 1, margin: int = 78) -> bytes:
    if isinstance(sexp, bytes) and b"\n" not in sexp:
        return quote(sexp) if must_escape(sexp) else sexp
    f = _Formatter(margin)
    _pp(f, sexp, indent)
    return f.flush().encode("latin-1")
