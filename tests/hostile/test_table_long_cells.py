"""Item 6 of issue 15: a worker id or key of megabytes in `decode -F
table`.  Every cell is cut with an ellipsis at its width, on a line that
fits (COLUMNS, a terminal) and in a pipe (at MAX_CELL characters): the
rows are the same whatever the length beyond, and printing a message of
16 MiB as a table takes bounded memory."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.cells import cell_len

from ripple_cli.render.columns import MAX_CELL
from tests.hostile.bombs import run_limited

MAX_RSS_KB = 512 * 1024
SIZES = (1_000_000, 15_000_000)  # a worker id and a key of 1 MB, and of 15 MB (messages of up to 16 MiB)


def session(n: int) -> str:
    """A Handshake and a Heartbeat from a worker whose id is n characters,
    and a Delta whose key is n characters, as `ripple encode` reads them."""
    w, k = "w" * n, "k" * n
    return f"""((seq 1) (time_ns 1700000000000000000) (schema ripple.handshake/v1)
 (msg (Handshake ((source_worker_id {w})
   (output_schemas ((vwap ((name vwap) (version 2) (key String)
       (fields (((name price) (typ Float) (default ()))))))))
   (protocol_version 1)))))
((seq 2) (time_ns 1700000000000000050) (schema vwap/v2)
 (msg (Delta ((source_output vwap) (key {k}) (delta (Set ((price 100)))) (sequence_no 1) (watermark_ns ())))))
((seq 4) (time_ns 1700000000000000200) (schema ripple.heartbeat/v1)
 (msg (Heartbeat ((worker_id {w}) (timestamp_ns 1700000000000000200) (load 0.5)))))
"""


@pytest.fixture(scope="module")
def streams(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    out = {}
    for n in SIZES:
        d = tmp_path_factory.mktemp(f"long{n}")
        (d / "s.sexp").write_text(session(n))
        r = run_limited(["encode", "-o", str(d / "s.ripple"), str(d / "s.sexp")])
        assert (r.code, r.stderr) == (0, "")
        out[n] = d / "s.ripple"
    return out


def _rows(stdout: bytes) -> list[str]:
    return stdout.decode("utf-8").splitlines()


@pytest.mark.parametrize("pure", [False, True], ids=["fast", "pure"])
def test_a_pipe_cuts_a_long_cell_at_max_cell(streams: dict[int, Path], pure: bool) -> None:
    tables = []
    for n, path in streams.items():
        r = run_limited(["decode", "-F", "table", str(path)], pure=pure)
        assert (r.code, r.stderr) == (0, "")
        assert r.maxrss_kb < MAX_RSS_KB
        lines = _rows(r.stdout)
        assert len(lines) == 5  # header, rule, three rows: no cell wraps
        assert all(cell_len(x) <= 2 * MAX_CELL + 200 for x in lines)
        delta = lines[3]
        assert f"{n + 91}    2  22:13:20.000000  Delta" in delta
        assert "k" * (MAX_CELL - 1) + "…" in delta and "k" * MAX_CELL not in delta
        for heartbeat in (lines[2], lines[4]):
            assert heartbeat.endswith("worker " + "w" * (MAX_CELL - 8) + "…")
        # Beyond MAX_CELL the length changes nothing but the offsets.
        rows = [lines[0], *lines[2:]]  # the rule is as wide as the offsets
        tables.append([x.replace(str(n + 91), "D").replace(str(2 * n + 181), "H").strip() for x in rows])
    assert tables[0] == tables[1]


@pytest.mark.parametrize("pure", [False, True], ids=["fast", "pure"])
def test_a_line_that_fits_keeps_every_row_on_it(streams: dict[int, Path], pure: bool) -> None:
    for n, path in streams.items():
        r = run_limited(["decode", "-F", "table", str(path)], pure=pure, env={"COLUMNS": "100"})
        assert (r.code, r.stderr) == (0, "")
        assert r.maxrss_kb < MAX_RSS_KB
        lines = _rows(r.stdout)
        assert len(lines) == 5  # header, rule, three rows: no cell wraps
        assert re.fullmatch(r" *0    1  22:13:20\.000000  Handshake  ripple\.… +worker w+…", lines[2])
        assert re.fullmatch(
            rf" *{n + 91}    2  22:13:20\.000000  Delta +vwap/v2 +vwap +k+…  #1 Set price=100", lines[3]
        )
        assert re.fullmatch(rf" *{2 * n + 181}    4  22:13:20\.000000  Heartbeat  ripple\.… +worker w+…", lines[4])
        assert max(cell_len(x) for x in lines) == 100


@pytest.mark.parametrize("pure", [False, True], ids=["fast", "pure"])
@pytest.mark.parametrize(
    ("tail", "kept"),
    [
        ("\x1b", ""),  # \027: the cut fell after \02
        ("é", ""),  # \195\169 (a key shows bytes as sexp does): after \19
        ("a\x1b", "a"),  # after \0
        ("ab\x1b", "ab"),  # after its backslash
        ("\u2028", ""),  # \u{2028}: after \u{
        ("a\u2028", "a"),  # after \u
        ("abc\x07", "abc"),  # the escape starts past the cut: the text before it stays
    ],
)
def test_a_cut_never_splits_an_escape(tmp_path: Path, pure: bool, tail: str, kept: str) -> None:
    """A key cut at MAX_CELL characters in the middle of an escape showed
    its first characters (`\\2…` for the byte 228, which reads as byte 2):
    the cut now falls before the escape.  The key shows quoted, as sexp
    does: `"`, then MAX_CELL - 5 k's, then the first 3 characters of the
    tail's escaped form are what the cut keeps."""
    key = "k" * (MAX_CELL - 5) + tail
    quoted = '"' + key.replace("\x1b", "\\027").replace("\x07", "\\007") + '"'
    (tmp_path / "s.sexp").write_text(session(1).replace("(key k)", f"(key {quoted})"))
    r = run_limited(["encode", "-o", str(tmp_path / "s.ripple"), str(tmp_path / "s.sexp")])
    assert (r.code, r.stderr) == (0, "")
    r = run_limited(["decode", "-F", "table", str(tmp_path / "s.ripple")], pure=pure)
    assert (r.code, r.stderr) == (0, "")
    delta = _rows(r.stdout)[3]
    assert '"' + "k" * (MAX_CELL - 5) + kept + "…  #1" in delta
