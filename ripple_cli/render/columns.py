"""Columns that fit a line: what every table of ripple is made of.

A table says what its columns are (`Column`: a name, a priority, whether it
may be cut and how far, whether it is a number that is never dropped) and
`fit` chooses their widths for a line:

- on a terminal (`Environment.stdout_isatty`), the line is `env.width`:
  while the narrowest form of the columns is wider, the least important
  column that may go goes (lowest `priority` first, the rightmost of
  equals); the numbers (`keep`) never go.  The room left grows the most
  important columns first, up to their content (or their `max_width`), and
  what is still left goes to the `flex` column (a summary), for rows still
  to come.  A column that may be cut is never cut below `min_width` (at
  least two characters and the ellipsis), a number never below its
  content: its header wraps at spaces instead.  An `extra` column (a
  Community ID) is shown only in room to spare: it goes before any other
  column but the flex one would be cut.
- in a pipe (or a file) there is no line to fit: every column is as wide as
  its content, nothing dropped, and only a cell longer than MAX_CELL
  characters (a key of a megabyte) is cut, with an ellipsis.

rich draws the table (`table`), and `Trimmed` takes the trailing spaces
off every line it prints.

Cells hold what came off the wire (a worker id, a key, a string field):
what does not print in one (ESC[2J, ESC]0;title BEL, a byte that is not
UTF-8) is escaped here, as the sexp form escapes it, for every table
(`measure` and `kept` see the same escaped cell), so that no byte of the
input reaches the terminal as a control.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from operator import le
from typing import Literal

from rich import box as boxes
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from ripple_cli.sexp.atoms import escape_text
from ripple_cli.terminal.environment import Environment

Justify = Literal["left", "right"]
Cell = str | Text

# The line of a pipe: as long as a row is.  (rich wants a number.)
UNBOUNDED = 1_000_000
# The most characters a cell shows, in a pipe too: a worker id or key of
# a megabyte is cut with an ellipsis, as on a terminal, before it is
# escaped or measured, not padded into every row of its column.
MAX_CELL = 4096


@dataclass(frozen=True)
class Column:
    name: str
    priority: int = 0  # on a narrow line the lowest go first
    keep: bool = False  # never dropped: the numbers (counts, bytes, offsets, seq)
    shrink: bool = False  # may be cut, with an ellipsis, down to min_width
    wrap: bool = False  # may wrap onto more lines, down to min_width
    min_width: int = 8
    max_width: int | None = None  # on a terminal, room beyond this goes to others first
    flex: bool = False  # on a terminal, takes the room that is left
    at_least: int = 0  # on a terminal, the width its content may grow to in rows to come
    extra: bool = False  # on a terminal, dropped rather than any other (but a flex one) cut
    justify: Justify = "left"

    def __post_init__(self) -> None:
        if (self.shrink or self.wrap) and self.min_width < 3:
            raise ValueError(f"column {self.name}: a cell cut below 3 columns shows one character")


def make_console(env: Environment) -> tuple[Console, io.TextIOWrapper]:
    """A rich console on env.stdout: as wide as `line_width` says, or
    unbounded; colour as `env.color` says."""
    stream = io.TextIOWrapper(env.stdout, encoding="utf-8", errors="replace", write_through=True)
    console = Console(
        file=stream,
        force_terminal=env.stdout_isatty or env.color,
        no_color=not env.color,
        color_system="auto" if env.color else None,
        width=line_width(env) or UNBOUNDED,
        highlight=False,
        emoji=False,
    )
    return console, stream


def line_width(env: Environment) -> int | None:
    """The line a table fits: the terminal's width; in a pipe, COLUMNS when
    it is exported (the user said how wide, as `ls -C` takes it), else none:
    every cell whole, for grep and less -S."""
    if env.stdout_isatty:
        return max(env.width, 1)
    columns = env.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


def cell(text: str, style: str = "") -> Text:
    """A cell of what came off the wire, escaped before rich sees it (rich
    drops BEL, CR and a few others from a Text, and keeps ESC), at most
    MAX_CELL characters."""
    return Text(_escaped(text), style=style)


def escaped(text: str) -> str:
    """A cell's text as `cell` shows it (what does not print escaped, at
    most MAX_CELL characters), for the rows `PlainRows` writes."""
    return _escaped(text)


def _escaped(text: str) -> str:
    return cut(escape_text(text[: MAX_CELL + 1]))  # the cut first: the text may be megabytes long


# The start of an escape (`\\228`, `\\u{E4}`) left at the end of a cut cell:
# it would read as another character (`\\2` as byte 2), so it goes too.
_PARTIAL_ESCAPE = re.compile(r"\\(?:[0-9]{0,2}|u(?:\{[0-9A-F]{0,6})?)\Z")


def cut(shown: str) -> str:
    """An escaped cell at most MAX_CELL characters long (escaped cells
    joined make one: the cut of the whole is the same), cut before an
    escape the cut would split (tableout.h cuts the same)."""
    if len(shown) <= MAX_CELL:
        return shown
    kept = shown[: MAX_CELL - 1]
    partial = _PARTIAL_ESCAPE.search(kept)
    return (kept if partial is None else kept[: partial.start()]) + "…"


def shown(cell: Cell) -> Text:
    """The cell as a table shows it: what does not print, escaped; a string
    as plain text (rich would read `[/x]` in it as markup, and fail); at
    most MAX_CELL characters."""
    if isinstance(cell, Text):
        plain = cell.plain
        return cell if len(plain) <= MAX_CELL and plain.isprintable() else Text(_escaped(plain), style=cell.style)
    return Text(_escaped(cell))


def _plain(cell: Cell) -> str:
    return shown(cell).plain


def measure(columns: Sequence[Column], rows: Iterable[Sequence[Cell]]) -> list[int]:
    """Each column's widest cell (headers not counted)."""
    widest = [0] * len(columns)
    for row in rows:
        for i, cell in enumerate(row[: len(columns)]):
            lines = _plain(cell).splitlines() or [""]
            widest[i] = max(widest[i], *(cell_len(x) for x in lines))
    return widest


def fit(
    columns: Sequence[Column], content: Sequence[int], width: int | None, gap: int = 2, more: bool = True
) -> list[int | None]:
    """Each column's width (None: dropped), for cells as wide as `content`
    on a line of `width` columns (None: a pipe), `gap` columns between two;
    `more`: rows are still to come (room is kept for their at_least)."""
    widths = _fit(columns, content, width, gap, more)
    # The extra columns go one at a time (the lowest priority first, the
    # last of equal ones first) while any other column is cut.
    extras = sorted((i for i, c in enumerate(columns) if c.extra), key=lambda i: (columns[i].priority, -i))

    def cut(i: int) -> bool:
        c, w = columns[i], widths[i]
        whole = min(max(cell_len(c.name), content[i]), c.max_width or UNBOUNDED)
        return w is None or (not c.flex and w < whole)

    gone: set[int] = set()
    for extra in extras:
        if not any(cut(i) for i, c in enumerate(columns) if not c.extra):
            break
        gone.add(extra)
        rest = [i for i in range(len(columns)) if i not in gone]
        fitted = _fit([columns[i] for i in rest], [content[i] for i in rest], width, gap, more)
        widths = [None] * len(columns)
        for i, w in zip(rest, fitted, strict=True):
            widths[i] = w
    return widths


def _fit(
    columns: Sequence[Column], content: Sequence[int], width: int | None, gap: int = 2, more: bool = True
) -> list[int | None]:
    natural = [max(cell_len(c.name), n) for c, n in zip(columns, content, strict=True)]
    if width is None:
        return list(natural)
    if not more:
        columns = [replace(c, at_least=0) for c in columns]
    natural = [max(n, c.at_least) for c, n in zip(columns, natural, strict=True)]
    floor = []
    for c, n, cells in zip(columns, natural, content, strict=True):
        if c.shrink or c.wrap:
            floor.append(min(n, c.min_width))
        else:  # a number: its content whole, its header wrapped at spaces
            floor.append(max(cells, *(cell_len(w) for w in c.name.split())))

    alive = list(range(len(columns)))

    def total() -> int:
        return sum(widths[i] for i in alive) + gap * (len(alive) - 1)

    widths = dict(enumerate(floor))
    while total() > width:
        droppable = [i for i in alive if not columns[i].keep]
        if not droppable:
            break  # only numbers left: the line is what they need
        alive.remove(min(droppable, key=lambda i: (columns[i].priority, -i)))
    spare = width - total()
    # Room left: first each column, most important first, to its content
    # (up to its max_width); then the numbers to what they may grow to;
    # then all to a flex column, or else each column to its whole content.
    by_priority = sorted(alive, key=lambda i: (-columns[i].priority, i))
    flex = [i for i in by_priority if columns[i].flex]

    def grow(i: int, to: int) -> None:
        nonlocal spare
        add = max(0, min(spare, to - widths[i]))
        widths[i] += add
        spare -= add

    for i in by_priority:
        c = columns[i]
        if not c.flex:
            # A text column's at_least counts here: the cells it will hold
            # (the longest type name, say) are known before they come.
            ahead = 0 if c.keep else c.at_least
            grow(i, min(max(content[i], cell_len(c.name), ahead), c.max_width or UNBOUNDED))
    for i in by_priority:
        if columns[i].keep:
            grow(i, natural[i])
    for i in flex or by_priority:
        grow(i, UNBOUNDED if flex else natural[i])
    return [widths[i] if i in alive else None for i in range(len(columns))]


GAP = {"plain": 2, "ruled": 3}


def table(
    columns: Sequence[Column],
    widths: Sequence[int | None],
    *,
    style: Literal["plain", "ruled"] = "plain",
    header: bool = True,
    rule: bool = True,
    title: str | None = None,
    caption: str | None = None,
) -> Table:
    """An empty rich table of the columns `fit` kept, at their widths; rows
    go in through `add_row` with every column's cell (`kept` picks them)."""
    if style == "ruled":
        t = Table(box=boxes.HEAVY_HEAD, show_edge=False, pad_edge=False, padding=(0, 1))
    else:
        t = Table(
            box=boxes.SIMPLE_HEAD if rule else None,
            show_edge=False,
            pad_edge=False,
            padding=(0, 1),
            collapse_padding=rule,  # a gap of two columns either way
        )
    t.show_header = header
    if title is not None:
        t.title, t.title_justify = Text(escape_text(title)), "left"
    if caption is not None:
        t.caption, t.caption_justify = Text(escape_text(caption)), "left"
    for c, w in zip(columns, widths, strict=True):
        if w is None:
            continue
        cut = c.shrink or c.flex
        t.add_column(
            c.name,
            justify=c.justify,
            width=w,
            no_wrap=cut,
            overflow="ellipsis" if cut else "fold",
        )
    return t


def kept(row: Sequence[Cell], widths: Sequence[int | None]) -> list[Text]:
    """The cells of a row whose columns `fit` kept, as shown."""
    return [shown(cell) for cell, w in zip(row, widths, strict=True) if w is not None]


class PlainRows:
    """Rows of `table(columns, widths, header=False)` written as rich draws
    them, without rich, where no colour is wanted: a rich table takes about
    600 us a row of nine cells (measured: 65 s for 100,000 rows) and these
    lines about 2 us.  `line` gives None for a row it does not copy (a cell
    rich folds onto more lines, or cuts where characters are wide or
    trailing spaces go first): draw that one with rich, the lines are the
    same (tests/property/test_prop_table_rows.py holds them equal)."""

    def __init__(self, columns: Sequence[Column], widths: Sequence[int | None]) -> None:
        # Per kept column: its index, width, right-justified, may be cut with an ellipsis.
        self._spec = [
            (i, w, c.justify == "right", c.shrink or c.flex)
            for i, (c, w) in enumerate(zip(columns, widths, strict=True))
            if w is not None
        ]
        # The common row (ASCII, every cell within its width, no right-justified
        # cell ending in a space rich would strip) is one str.format.
        fields = [f"{{{i}:{'>' if right else '<'}{w}}}" for i, w, right, _cut in self._spec]
        if self._spec and not self._spec[-1][2]:
            fields[-1] = f"{{{self._spec[-1][0]}}}"  # the last, left-justified, is not padded: the end is trimmed
        self._format = "  ".join(fields)
        self._limits = [UNBOUNDED if w is None else w for w in widths]
        self._right = [i for i, _w, right, _cut in self._spec if right]

    def lines(self, rows: Sequence[Sequence[str]]) -> list[str | None]:
        """`line` of each row; a batch of common rows (every cell ASCII,
        within its width) is checked column by column, then formatted."""
        columns = list(zip(*rows, strict=True))
        common = bool(columns) and "".join(map("".join, columns)).isascii()
        for i, w, right, _cut in self._spec if common else ():
            column = columns[i]
            if max(map(len, column)) > w or (right and any(x[-1:].isspace() for x in column)):
                common = False
                break
        if common:
            fmt = self._format.format
            return [fmt(*row).rstrip(" ") for row in rows]
        return [self.line(row) for row in rows]

    def line(self, row: Sequence[str]) -> str | None:
        """The line of a row of escaped cells (`escaped`), one per column,
        or None."""
        if "".join(row).isascii() and all(map(le, map(len, row), self._limits)):
            for i in self._right:
                if row[i][-1:].isspace():
                    break
            else:
                return self._format.format(*row).rstrip(" ")
        parts = []
        for i, w, right, cut in self._spec:
            text = row[i]
            if right:
                text = text.rstrip()  # rich's right justification strips the end
            ascii = text.isascii()
            n = len(text) if ascii else cell_len(text)
            if n > w:
                # rich crops trailing spaces first, and sizes wide characters by cells
                if not cut or not ascii or w < 2 or text[-1].isspace():
                    return None
                text, n = text[: w - 1] + "…", w
            parts.append(" " * (w - n) + text if right else text + " " * (w - n))
        return "  ".join(parts).rstrip(" ")


def plain_widths(rows: Iterable[Sequence[str]], n: int) -> list[int]:
    """`measure` for rows of escaped cells (`escaped`): each column's widest."""
    widest = [0] * n
    for i, column in enumerate(list(zip(*rows, strict=True))[:n]):
        if "".join(column).isascii():
            widest[i] = max(map(len, column))
        else:
            widest[i] = max(map(cell_len, column))
    return widest


def fitted_table(
    env: Environment,
    columns: Sequence[Column],
    rows: Sequence[Sequence[Cell]],
    *,
    style: Literal["plain", "ruled"] = "plain",
    rule: bool = True,
    title: str | None = None,
    caption: str | None = None,
    empty: Sequence[Cell] | None = None,
) -> Table:
    """A whole table, its rows known: fitted to the line and filled."""
    content = measure(columns, [*rows, *([empty] if empty is not None and not rows else [])])
    widths = fit(columns, content, line_width(env), GAP[style], more=False)
    t = table(columns, widths, style=style, rule=rule, title=title, caption=caption)
    for row in rows or ([empty] if empty is not None else []):
        t.add_row(*kept(row, widths))
    return t


def _rstrip(line: list[Segment]) -> list[Segment]:
    line = list(line)
    while line:
        seg = line[-1]
        if seg.control:
            break
        text = seg.text.rstrip(" ")
        if text:
            line[-1] = Segment(text, seg.style, seg.control)
            break
        line.pop()
    return line


class Trimmed:
    """A renderable printed without the spaces at the end of its lines, and
    never narrower than its least width: on a line narrower than the
    columns `fit` keeps (the numbers are never dropped), rich would squeeze
    them, folding a header letter by letter and a number over lines.  The
    lines go past the edge instead, as a pipe's do; `crop` cuts them at the
    edge (a live view, whose redrawing counts lines, must not wrap)."""

    def __init__(self, renderable: RenderableType, crop: bool = False) -> None:
        self.renderable = renderable
        self.crop = crop

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        edge = options.max_width
        least = Measurement.get(console, options.update_width(UNBOUNDED), self.renderable).minimum
        wide = options.update_width(max(edge, least))
        for line in console.render_lines(self.renderable, wide, pad=False):
            if self.crop and least > edge:
                line = Segment.adjust_line_length(line, edge, pad=False)
            yield from _rstrip(line)
            yield Segment.line()
