"""Every table at 60, 80, 120 and 200 columns, and in a pipe: golden files
under tests/golden/tables/ (RIPPLE_UPDATE_GOLDEN=1 rewrites them), and
what must hold at any width: no line wider than the terminal, no trailing
spaces, no cell cut to one character and an ellipsis, the numbers kept."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.cells import cell_len

from ripple_cli.capture.events import CaptureEvent
from ripple_cli.codec.problems import Problem
from ripple_cli.flow.inputs import Inputs
from ripple_cli.flow.pipeline import BaseSink, pump
from ripple_cli.protocols.base import LaneKind
from ripple_cli.protocols.item import Decoded
from ripple_cli.protocols.origin import Origin
from ripple_cli.render.base import View
from ripple_cli.render.columns import Column, fit, make_console
from ripple_cli.render.table import TableRenderer
from ripple_cli.tap import live
from ripple_cli.tap.live import LiveView
from ripple_cli.tap.stats import TapStats
from ripple_cli.terminal.environment import Environment
from tests.conftest import EXAMPLES, golden, run_cli
from tests.liveview import ViewFeed
from tests.replay.pcap import Connection, build_pcap

WIDTHS = (60, 80, 120, 200)
DEMO = EXAMPLES / "demo.ripple"
# A cell that is one character and the ellipsis: at the start of a line or
# after a gap between columns (two spaces, or a rule and a space).
CUT_TO_ONE = re.compile(r"(?:^|\s\s|│ )[^\s…]…")


def check_lines(text: str, width: int | None) -> None:
    for line in text.splitlines():
        if width is not None:
            assert cell_len(line) <= width, f"wider than {width}: {line!r}"
        assert line == line.rstrip(), f"trailing spaces: {line!r}"
        assert not CUT_TO_ONE.search(line), f"a cell cut to one character: {line!r}"


def table_golden(name: str, text: str, width: int | None) -> None:
    check_lines(text, width)
    golden(f"tables/{name}.{width or 'pipe'}", text.encode())


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Ripple connection and an HTTP one."""
    path = tmp_path_factory.mktemp("tables") / "two.pcap"
    conns = [
        Connection(DEMO.read_bytes(), client_port=40001, server_port=9000),
        Connection(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"HTTP/1.1 200 OK\r\n\r\n", 40003, 80),
    ]
    path.write_bytes(build_pcap(conns))
    return path


@pytest.mark.parametrize("width", WIDTHS)
def test_decode_table(width: int) -> None:
    r = run_cli(["decode", "-c", "30", str(DEMO)], tty=True, width=width)
    assert r.code == 0, r.stderr
    table_golden("decode", r.text, width)
    # The numbers stay at every width: the offsets and the seqs.
    rows = [line.split() for line in r.text.splitlines()[2:]]
    assert [row[1] for row in rows] == [str(n) for n in range(1, 31)]
    assert rows[2][0] == "764"


@pytest.mark.parametrize("width", WIDTHS)
def test_decode_table_of_a_capture_with_connections(capture: Path, width: int) -> None:
    r = run_cli(["decode", "-c", "12", "--show-connection", str(capture)], tty=True, width=width)
    assert r.code == 0, r.stderr
    table_golden("decode-capture", r.text, width)


def test_decode_table_in_a_pipe_uses_the_whole_line() -> None:
    r = run_cli(["decode", "-F", "table", "-c", "30", str(DEMO)], tty=False, width=120)
    table_golden("decode", r.text, None)
    assert max(len(line) for line in r.text.splitlines()) > 120
    assert "…" not in r.text  # nothing cut


@pytest.mark.parametrize("width", WIDTHS)
def test_list_streams(capture: Path, width: int) -> None:
    r = run_cli(["decode", "--list-streams", str(capture)], tty=True, width=width)
    assert r.code == 0, r.stderr
    table_golden("list-streams", r.text, width)
    head = r.text.splitlines()[0].split()
    assert {"stream", "msgs", "bytes", "problems"} <= set(head)
    assert " 300 " in r.text and " 37372 " in r.text


def test_list_streams_in_a_pipe(capture: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Named as typed, relative: the source column is as wide as the name,
    # which must not depend on where pytest keeps its temporary files.
    monkeypatch.chdir(capture.parent)
    r = run_cli(["decode", "--list-streams", "two.pcap", "two.pcap"], tty=False, width=60)
    table_golden("list-streams", r.text, None)
    assert "no protocol recognised in 27 bytes" in r.text


@pytest.mark.parametrize("width", [*WIDTHS, None])
def test_list_protocols(width: int | None) -> None:
    r = run_cli(["decode", "--list-protocols"], tty=width is not None, width=width or 60)
    table_golden("list-protocols", r.text, width)
    assert [line.split()[0] for line in r.text.splitlines()[1:] if not line.startswith(" ")][:2] == [
        "ripple",
        "lumberjack",
    ]


@pytest.mark.parametrize("width", [*WIDTHS, None])
def test_schema_show_table(width: int | None) -> None:
    r = run_cli(["schema", "show", "-F", "table", str(DEMO)], tty=width is not None, width=width or 60)
    assert r.code == 0, r.stderr
    table_golden("schema-show", r.text, width)


# ---------------------------------------------------------------- the tap's live view


def _live_view(capture: Path, width: int | None, lane: LaneKind | None = LaneKind.TABLE) -> tuple[LiveView, io.BytesIO]:
    """The tap's decoding thread's work (tap/session.py), on a capture."""
    out = io.BytesIO()
    env = Environment(
        stdin=io.BytesIO(),
        stdout=out,
        stderr=io.StringIO(),
        stdout_isatty=width is not None,
        stderr_isatty=False,
        environ={"NO_COLOR": "1"},
        width=width or 60,
    )
    stats = TapStats()
    view = LiveView(env, stats, title="listening on 127.0.0.1:19400, forwarding to 127.0.0.1:9000")
    inputs = Inputs(schemas=(str(EXAMPLES / "schemas"),))
    demux = inputs.demux("tap", lane=lane, progress=True)

    def events() -> Iterator[CaptureEvent]:
        for ev in inputs.events(str(capture), env):
            stats.event(ev)
            yield ev
            st = demux.streams.get(ev.stream)
            if ev.stream is not None and st is not None and st.progress is not None:
                stats.progress(ev.stream, st.progress, ev.time_ns)

    pump(events(), demux, ViewFeed(stats, view))
    return view, out


@pytest.mark.parametrize("width", WIDTHS)
def test_live_view(capture: Path, width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live.time, "time_ns", lambda: 1_700_000_005_000_000_000)  # the heartbeats' age
    view, out = _live_view(capture, width)
    view.console.print(view.render(max_rows=10))
    view.close()
    text = out.getvalue().decode()
    table_golden("live", text, width)
    # The same whether the fast lane or Python decodes.
    view, out = _live_view(capture, width, lane=None)
    view.console.print(view.render(max_rows=10))
    view.close()
    assert out.getvalue().decode() == text
    assert "co… from…" not in text
    # The demo's direction, live and in the final summary: its msgs, bytes and seq at every width.
    rows = [line for line in text.splitlines() if re.match(r"1 c2s .* 300 .*36\.5K +300\b", line)]
    assert len(rows) == 2, text


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.iterdir() if p.suffix in (".pcap", ".ripple")))
def test_the_live_view_is_the_same_on_the_fast_lane(example: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every example (damage, gaps, other protocols, many connections)
    draws the same live view, counters and latest messages, whether the
    fast lane or Python decodes its messages."""
    monkeypatch.setattr(live.time, "time_ns", lambda: 1_700_000_005_000_000_000)
    shown = []
    for lane in (LaneKind.TABLE, None):
        view, out = _live_view(EXAMPLES / example, 200, lane=lane)
        view.console.print(view.render(max_rows=40))
        view.close()
        shown.append(out.getvalue().decode())
    assert shown[0] == shown[1]
    assert "latest messages" in shown[0]


NARROW = (1, 5, 10, 20, 28, 40)


def _least_lines(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()]


@pytest.mark.parametrize("width", NARROW)
def test_a_table_is_never_narrower_than_the_columns_it_keeps(capture: Path, width: int) -> None:
    """Below the least width of what is never dropped (decode's offset and
    seq, a stream's id and counts), the lines go past the edge: rich would
    squeeze the columns, folding a header letter by letter and a number
    over two lines, or leave a row empty."""
    r = run_cli(["decode", "-c", "4", str(DEMO)], tty=True, width=width)
    assert r.code == 0, r.stderr
    lines = _least_lines(r.text)
    assert lines[0][:2] == ["offset", "seq"]
    assert [row[:2] for row in lines[2:]] == [["0", "1"], ["699", "2"], ["764", "3"], ["931", "4"]]
    r = run_cli(["decode", "--list-streams", str(capture)], tty=True, width=width)
    assert r.code == 0, r.stderr
    lines = _least_lines(r.text)
    assert lines[0][0] == "stream" and {"msgs", "bytes", "problems"} <= set(lines[0])
    assert [row[0] for row in lines[1:]] == ["1:c2s", "1:s2c", "2:c2s", "2:s2c"]
    assert any(row[0] == "1:c2s" and "300" in row and "37372" in row for row in lines)


@pytest.mark.parametrize("width", (20, 40))
def test_the_live_view_keeps_the_connection_on_a_narrow_terminal(
    capture: Path, width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The live view (redrawn in place: a line past the edge would wrap and
    throw its redrawing off) is cut at the edge; the final summary goes past
    it, as the other tables do.  Either way a row says which connection."""
    monkeypatch.setattr(live.time, "time_ns", lambda: 1_700_000_005_000_000_000)
    view, out = _live_view(capture, width)
    view.console.print(view.render(max_rows=10))
    drawn = out.getvalue().decode()
    assert all(cell_len(line) <= width for line in drawn.splitlines())
    view.close()
    summary = out.getvalue().decode()[len(drawn) :]
    assert any(line.split()[:2] == ["conn", "msgs"] for line in summary.splitlines())
    assert any(re.match(r"1 c2s +300 +36\.5K +300\b", line) for line in summary.splitlines()), summary


def test_a_number_header_wraps_at_spaces_rather_than_drop_a_column() -> None:
    columns = [Column("worker", keep=True, shrink=True, min_width=10), Column("last sequence_no", keep=True)]
    assert fit(columns, [12, 7], 20) == [10, 11]
    assert fit(columns, [12, 7], None) == [12, 16]


def test_the_least_important_column_goes_first() -> None:
    columns = [
        Column("a", keep=True),
        Column("b", priority=1),
        Column("c", priority=3, shrink=True, min_width=4),
        Column("d", priority=2),
    ]
    assert fit(columns, [5, 5, 20, 5], 100) == [5, 5, 20, 5]
    assert fit(columns, [5, 5, 20, 5], 30) == [5, 5, 9, 5]
    assert fit(columns, [5, 5, 20, 5], 22) == [5, None, 8, 5]
    assert fit(columns, [5, 5, 20, 5], 12) == [5, None, 5, None]
    assert fit(columns, [5, 5, 20, 5], 3) == [5, None, None, None]  # a number is never dropped


def test_a_column_may_not_be_cut_to_one_character() -> None:
    with pytest.raises(ValueError):
        Column("x", shrink=True, min_width=2)


def test_an_exported_columns_is_the_line_of_a_piped_table() -> None:
    """COLUMNS in the environment of a pipe (export COLUMNS, or COLUMNS=80
    ripple ... | less) is the width asked for: the table fits it as on a
    terminal of that width."""
    piped = run_cli(
        ["decode", "-F", "table", "-c", "30", str(DEMO)], tty=False, environ={"NO_COLOR": "1", "COLUMNS": "80"}
    )
    on_a_terminal = run_cli(["decode", "-c", "30", str(DEMO)], tty=True, width=80)
    assert piped.text == on_a_terminal.text
    for bad in ("", "0", "wide"):
        r = run_cli(
            ["decode", "-F", "table", "-c", "3", str(DEMO)], tty=False, environ={"NO_COLOR": "1", "COLUMNS": bad}
        )
        assert max(len(line) for line in r.text.splitlines()) > 120  # ignored: the whole line


def test_the_default_width_follows_shutils_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """Environment's width without importing shutil: COLUMNS when it is a
    positive number, else stdout's terminal, else 120, as
    shutil.get_terminal_size((120, 24)) says."""
    import os
    import shutil

    def both() -> tuple[int, int]:
        return Environment().width, shutil.get_terminal_size((120, 24)).columns

    for value in ("77", "1", "", "0", "-5", "wide", None):
        if value is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", value)
        mine, shutils = both()
        assert mine == shutils, value
    monkeypatch.setenv("COLUMNS", "77")
    assert Environment().width == 77
    monkeypatch.setenv("COLUMNS", "wide")
    monkeypatch.setattr(os, "get_terminal_size", lambda fd=0: os.terminal_size((93, 20)))
    assert both() == (93, 93)


def test_make_console_in_a_pipe_has_no_line_to_fit() -> None:
    env = Environment(stdin=io.BytesIO(), stdout=io.BytesIO(), stdout_isatty=False, width=80)
    console, stream = make_console(env)
    assert console.width > 10_000
    stream.detach()


class _PausingSink(BaseSink):
    """A pause (flush) after every item: the input's segmentation at its worst."""

    def __init__(self, renderer: TableRenderer) -> None:
        self.renderer = renderer

    def message(self, origin: Origin, msg: Decoded) -> None:
        self.renderer.message(origin, msg)
        self.renderer.flush()

    def problem(self, origin: Origin, problem: Problem) -> None:
        self.renderer.problem(origin, problem)
        self.renderer.flush()


def _table(live_input: bool, pausing: bool) -> str:
    out = io.BytesIO()
    env = Environment(stdin=io.BytesIO(), stdout=out, stdout_isatty=True, environ={"NO_COLOR": "1"}, width=80)
    renderer = TableRenderer(env, View(live=live_input))
    inputs = Inputs()
    sink: BaseSink = _PausingSink(renderer) if pausing else renderer  # type: ignore[assignment]
    pump(inputs.events(str(DEMO), env), inputs.demux("demo.ripple"), sink)
    renderer.close()
    return out.getvalue().decode()


def test_a_file_s_table_does_not_depend_on_where_its_input_paused() -> None:
    """The layout and widths are chosen on the first 200 rows whatever
    pauses the reading made: the same file gives the same table."""
    whole = _table(live_input=False, pausing=False)
    assert _table(live_input=False, pausing=True) == whole
    assert len(whole.splitlines()) == 2 + 300


def _shown_before_the_end(path: Path, live_input: bool) -> str:
    out = io.BytesIO()
    env = Environment(stdin=io.BytesIO(), stdout=out, stdout_isatty=True, environ={"NO_COLOR": "1"}, width=80)
    renderer = TableRenderer(env, View(live=live_input))
    inputs = Inputs()
    pump(inputs.events(str(path), env), inputs.demux(path.name), _PausingSink(renderer))
    return out.getvalue().decode()  # not closed: what a watcher sees while the input waits


def test_a_live_table_shows_rows_at_every_pause(tmp_path: Path) -> None:
    """From a pipe (or the tap) nothing waits for a batch: the first rows
    are out, fitted to what came, as soon as the input pauses; from a file
    they wait for the batch (or the end)."""
    path = tmp_path / "first-two.ripple"
    path.write_bytes(DEMO.read_bytes()[:764])  # the Handshake and the Schema_negotiation
    live_text = _shown_before_the_end(path, live_input=True)
    assert [line.split()[2:4] for line in live_text.splitlines()[2:]] == [
        ["16:13:20.000000", "Handshake"],
        ["16:13:20.033093", "Negotiation"],
    ]
    assert _shown_before_the_end(path, live_input=False) == ""


def test_a_capture_mixing_protocols_gets_the_protocols_layout(tmp_path: Path) -> None:
    """Ripple first, Lumberjack after: every row says its protocol, the
    Ripple ones their seq in the summary."""
    path = tmp_path / "mixed.pcap"
    conns = [
        Connection(DEMO.read_bytes()[:764], client_port=40001, server_port=9000),
        Connection((EXAMPLES / "v1.lj").read_bytes(), client_port=40002, server_port=5044),
    ]
    path.write_bytes(build_pcap(conns))
    r = run_cli(["decode", str(path)], tty=True, width=120)
    assert r.code == 0, r.stderr
    lines = r.text.splitlines()
    assert lines[0].split()[:5] == ["offset", "time", "(UTC)", "protocol", "type"]
    protocols = [line.split()[2] for line in lines[2:]]
    assert protocols[:2] == ["ripple", "ripple"] and set(protocols[2:]) == {"lumberjack"}, r.text
    assert lines[2].split()[3:6] == ["Handshake", "#1", "worker"], r.text
    assert lines[3].split()[3:6] == ["Schema_negotiation", "#2", "ok"], r.text


def test_an_extra_column_goes_before_any_other_is_cut() -> None:
    """An `extra` column (a Community ID) is shown only in room to spare:
    dropped before a text column is cut, whatever its priority; a flex
    column's cut does not count; in a pipe it is whole like the rest."""
    columns = [
        Column("name", priority=5, shrink=True, min_width=4),
        Column("cid", extra=True),
        Column("n", keep=True, justify="right"),
        Column("summary", priority=6, shrink=True, flex=True, min_width=8),
    ]
    content = [10, 30, 3, 40]
    assert fit(columns, content, None) == [10, 30, 3, 40]
    assert fit(columns, content, 10 + 30 + 3 + 8 + 6) == [10, 30, 3, 8]  # summary cut: the extra stays
    assert fit(columns, content, 10 + 30 + 3 + 8 + 5) == [10, None, 3, 39]  # name would be cut: the extra goes
    assert fit(columns, content, 20) == [5, None, 3, 8]


def _deltas(seqs: range) -> bytes:
    """A Handshake (seq 1) and Deltas of twenty-character keys, one a seq:
    the text columns hold enough to leave the numbers no room to spare."""
    from tests.unit.test_framing import VWAP, delta, handshake

    return handshake(1) + b"".join(delta(seq, VWAP.write_key(b"SYMBOL-%013d" % seq)) for seq in seqs)


def test_a_number_outgrowing_its_column_gets_a_new_header_not_a_second_line(tmp_path: Path) -> None:
    """Fitted to the first batch (seq up to 200), the seq column is three
    wide; seq 1000 comes in a later batch: the columns are fitted again,
    under a new header, and every row stays one line whole (it was `100`
    with the `0` folded onto a line of its own)."""
    path = tmp_path / "deltas.ripple"
    path.write_bytes(_deltas(range(2, 1101)))
    for tty, environ in ((True, {"NO_COLOR": "1"}), (False, {"NO_COLOR": "1", "COLUMNS": "80"})):
        r = run_cli(["decode", "-F", "table", str(path)], tty=tty, environ=environ, width=80)
        assert r.code == 0, r.stderr
        check_lines(r.text, 80)
        lines = r.text.splitlines()
        headers = [i for i, line in enumerate(lines) if line.split()[:2] == ["offset", "seq"]]
        assert headers == [0, 2 + 800], headers  # the batch of rows 801-1000 holds seq 1000
        assert lines[0].index("seq") + 3 < lines[802].index("seq") + 3  # a column wider by a digit
        rows = [line.split() for i, line in enumerate(lines) if i not in (0, 1, 802, 803)]
        assert [row[1] for row in rows] == [str(seq) for seq in range(1, 1101)]
        offsets = [int(row[0]) for row in rows]
        assert offsets == sorted(offsets) and len(set(offsets)) == 1100


def test_a_piped_table_s_columns_only_widen() -> None:
    """Without a line to fit, a later batch's wider number widens its
    column (every cell whole), under the one header."""
    r = run_cli(["decode", "-F", "table", "-"], stdin=_deltas(range(2, 1101)))
    assert r.code == 0, r.stderr
    lines = r.text.splitlines()
    assert len(lines) == 2 + 1100 and lines[0].startswith("offset")
    assert [line.split()[1] for line in lines[2:]] == [str(seq) for seq in range(1, 1101)]
