"""render/columns.py's PlainRows against rich: a row it writes is the line
rich draws for it in `table(columns, widths, header=False)` (no colour),
byte for byte, for any cells (spaces at either end, wide and zero-width
characters, cells longer than their column) at any widths; a row it does
not copy, it says so (None) and rich draws it."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text
from ripple_strategies import prop

from ripple_cli.render.columns import UNBOUNDED, Column, PlainRows, Trimmed, table

_pieces = st.sampled_from(["a", "Z", "0", " ", "  ", "-", "é", "漢", "字", "\u0301", "😀", "…", "x y", "(k 1)"])
cells = st.lists(_pieces, max_size=12).map("".join)


@st.composite
def columns_and_widths(draw: st.DrawFn) -> tuple[list[Column], list[int | None]]:
    n = draw(st.integers(1, 6))
    columns, widths = [], []
    for i in range(n):
        kind = draw(st.sampled_from(["number", "cut", "flex", "wrap"]))
        justify = draw(st.sampled_from(["left", "right"])) if kind == "number" else "left"
        columns.append(
            Column(
                f"c{i}",
                keep=kind == "number",
                shrink=kind == "cut",
                flex=kind == "flex",
                wrap=kind == "wrap",
                min_width=3,
                justify=justify,
            )
        )
        widths.append(draw(st.one_of(st.none(), st.integers(1, 14))))
    if all(w is None for w in widths):
        widths[0] = 5
    return columns, widths


def rich_line(columns: list[Column], widths: list[int | None], row: list[str]) -> str:
    out = io.StringIO()
    console = Console(
        file=out, force_terminal=False, no_color=True, color_system=None, width=UNBOUNDED, highlight=False, emoji=False
    )
    t = table(columns, widths, header=False)
    t.add_row(*(Text(x) for x, w in zip(row, widths, strict=True) if w is not None))
    console.print(Trimmed(t))
    return out.getvalue()


@prop(600)
@given(st.data())
def test_plain_rows_are_the_lines_rich_draws(data: st.DataObject) -> None:
    columns, widths = data.draw(columns_and_widths())
    plain = PlainRows(columns, widths)
    for _ in range(3):
        row = [data.draw(cells) for _ in columns]
        line = plain.line(row)
        if line is not None:
            assert line + "\n" == rich_line(columns, widths, row)


@prop(200)
@given(st.data())
def test_plain_rows_take_the_common_rows(data: st.DataObject) -> None:
    """ASCII cells within their widths (what a stream's table mostly is),
    or cut with an ellipsis, are always written without rich."""
    columns, widths = data.draw(columns_and_widths())
    ascii_cells = st.text(st.sampled_from("ab0 -()#="), max_size=20)
    row = []
    for c, w in zip(columns, widths, strict=True):
        x = data.draw(ascii_cells)
        if c.shrink or c.flex:  # may run past its width (then it is cut), but not with spaces rich crops first
            x = x.rstrip() if len(x) > (w or 20) and (w or 20) > 1 else x[: w or 20]
        else:
            x = x[: w or 20]
        row.append(x.rstrip() if c.justify == "right" else x)
    line = PlainRows(columns, widths).line(row)
    assert line is not None
    assert line + "\n" == rich_line(columns, widths, row)


@prop(300)
@given(st.data())
def test_a_batch_of_rows_is_its_rows_one_by_one(data: st.DataObject) -> None:
    columns, widths = data.draw(columns_and_widths())
    plain = PlainRows(columns, widths)
    ascii_cells = st.text(st.sampled_from("ab0 -"), max_size=16)
    rows = data.draw(st.lists(st.lists(st.one_of(ascii_cells, cells), min_size=len(columns), max_size=len(columns))))
    assert plain.lines(rows) == [plain.line(row) for row in rows]
