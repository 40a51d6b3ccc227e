"""The CLI with the C fast lane and without it (RIPPLE_PURE=1) gives the
same output, byte for byte, exit status included; and the golden tests
pass on the pure path too (the rest of tests/cli runs with the lane when
it is built, or the whole suite can be run under RIPPLE_PURE=1)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ripple_cli.codec.fast import speedups
from ripple_cli.protocols.ripple.lane import Lane
from tests.cli import test_golden as golden_tests
from tests.conftest import EXAMPLES, Result, run_cli
from tests.replay.pcap import Connection, build_pcap

DEMO = EXAMPLES / "demo.ripple"
SCHEMAS = str(EXAMPLES / "schemas")
MORE_SCHEMAS = str(EXAMPLES / "more-schemas")
FAST = speedups() is not None


@pytest.fixture
def pure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIPPLE_PURE", "1")
    assert speedups() is None


# ---------------------------------------------------------------- golden tests, pure


def test_golden_decode_sexp_pure(pure: None) -> None:
    golden_tests.test_decode_sexp_equals_ocaml_text()


def test_golden_decode_damaged_pure(pure: None, tmp_path: Path) -> None:
    golden_tests.test_decode_damaged_sexp(tmp_path)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_golden_verify_damaged_pure(pure: None, tmp_path: Path, fmt: str) -> None:
    golden_tests.test_verify_damaged(tmp_path, fmt)


def test_golden_verify_clean_pure(pure: None) -> None:
    golden_tests.test_verify_clean_with_schemas()
    golden_tests.test_verify_without_the_undeclared_schema()


def test_golden_formats_pure(pure: None) -> None:
    golden_tests.test_decode_formats("jsonl")


# ---------------------------------------------------------------- both ways, the same


def _inputs(tmp: Path) -> dict[str, Path]:
    demo = DEMO.read_bytes()
    damaged = golden_tests.damaged_demo(tmp)
    flagged = bytearray(demo)
    flagged[764 + 6] = 1  # reserved flags on the first Delta: a warning (its CRC is now wrong too)
    # Many chunks (the reader's are 1 MiB): the demo over and over, so that
    # seqs go backwards and every Delta's sequence_no repeats.
    big = tmp / "big.ripple"
    big.write_bytes(demo * 40 + damaged.read_bytes() * 3)
    flagged_path = tmp / "flagged.ripple"
    flagged_path.write_bytes(bytes(flagged))
    capture = tmp / "two.pcap"
    capture.write_bytes(
        build_pcap([Connection(demo, b"", 40001), Connection(damaged.read_bytes()[:20000], b"", 40002)], gap_s=0.001)
    )
    # Ripple beside Lumberjack: the table's protocols layout
    mixed = tmp / "mixed.pcap"
    lumberjack = (EXAMPLES / "v1.lj").read_bytes()
    mixed.write_bytes(build_pcap([Connection(lumberjack, b"", 40003, 5044), Connection(demo, b"", 40001)], gap_s=0.001))
    return {"demo": DEMO, "damaged": damaged, "flagged": flagged_path, "big": big, "capture": capture, "mixed": mixed}


COMMANDS = [
    ["decode"],
    ["decode", "--schemas", SCHEMAS],
    ["decode", "--raw"],
    ["decode", "-c", "7"],
    ["decode", "-c", "12345"],
    ["decode", "--list-streams"],
    ["decode", "--format", "jsonl", "-c", "50"],
    ["decode", "--format", "json", "--raw"],
    ["decode", "--format", "hum", "-c", "20"],
    ["decode", "--format", "table"],
    ["decode", "--format", "table", "--show-connection", "--raw", "-c", "250"],
    ["decode", "--format", "table", "--type", "Delta", "--output", "vwap"],
    ["decode", "-Y", 'type == Delta and key == "AAPL"'],
    ["decode", "-Y", 'output in {"vwap", "book"} and field.price > 300', "-F", "jsonl"],
    ["decode", "--type", "Heartbeat", "--type", "Checkpoint_request", "-c", "9"],
    ["decode", "-Y", "not type == Delta or seq < 10"],
    ["verify"],
    ["verify", "--schemas", MORE_SCHEMAS],
    ["verify", "--format", "json", "--strict"],
    ["verify", "-Y", "type == Delta"],
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _inputs(tmp_path_factory.mktemp("inputs"))


@pytest.fixture
def lane_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many envelopes the lane consumed, call by call."""
    calls: list[int] = []
    run = Lane.run

    def spy(self: Lane) -> object:
        batch = run(self)
        calls.append(batch.messages if batch is not None else 0)
        return batch

    monkeypatch.setattr(Lane, "run", spy)
    yield calls


def _both(args: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[Result, Result]:
    fast = run_cli(args)
    with monkeypatch.context() as m:
        m.setenv("RIPPLE_PURE", "1")
        pure = run_cli(args)
    return fast, pure


@pytest.mark.skipif(not FAST, reason="the C fast lane is off (not built here, or RIPPLE_PURE)")
@pytest.mark.parametrize("name", ["demo", "damaged", "flagged", "big", "capture", "mixed"])
@pytest.mark.parametrize("cmd", COMMANDS, ids=" ".join)
def test_fast_and_pure_agree(
    inputs: dict[str, Path], name: str, cmd: list[str], monkeypatch: pytest.MonkeyPatch, lane_calls: list[int]
) -> None:
    fast, pure = _both([*cmd, str(inputs[name])], monkeypatch)
    assert fast.code == pure.code
    assert fast.stderr == pure.stderr
    assert fast.stdout == pure.stdout
    # the lane ran, and only in the fast run (it is off under verify -Y, for
    # the form it does not write (hum), and for a selection that narrows
    # nothing it can test (a `not`, an `or` of other fields)
    if cmd[0] == "verify":
        uses_lane = "-Y" not in cmd
    else:
        uses_lane = "hum" not in cmd and "not type == Delta or seq < 10" not in cmd
    assert (sum(lane_calls) > 0) == uses_lane


@pytest.mark.skipif(not FAST, reason="the C fast lane is off (not built here, or RIPPLE_PURE)")
def test_fast_and_pure_agree_on_stdin(inputs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    data = inputs["big"].read_bytes()
    fast = run_cli(["decode", "-"], stdin=data)
    with monkeypatch.context() as m:
        m.setenv("RIPPLE_PURE", "1")
        pure = run_cli(["decode", "-"], stdin=data)
    assert (fast.code, fast.stdout, fast.stderr) == (pure.code, pure.stdout, pure.stderr)


def test_ripple_pure_turns_the_lane_off(pure: None, lane_calls: list[int]) -> None:
    r = run_cli(["verify", str(DEMO)])
    assert r.code == 1
    assert lane_calls == []


@pytest.mark.skipif(not FAST, reason="the C fast lane is off (not built here, or RIPPLE_PURE)")
@pytest.mark.parametrize("name", ["demo", "damaged", "capture"])
def test_export_and_stats_agree(
    inputs: dict[str, Path], name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The batch rows, in-process (below the size threshold), and the stats
    figures: the same from both lanes (the pure lane's suites leave the
    Spark tests to the first pass)."""
    fast, pure = _both(["stats", "-q", "-F", "json", str(inputs[name])], monkeypatch)
    assert (fast.code, fast.stdout, fast.stderr) == (pure.code, pure.stdout, pure.stderr)
    import pyarrow.parquet as pq

    rows, tables = {}, {}
    for lane in ("fast", "pure"):
        with monkeypatch.context() as m:
            if lane == "pure":
                m.setenv("RIPPLE_PURE", "1")
            r = run_cli(["export", "-q", "-F", "jsonl", str(inputs[name]), "-o", str(tmp_path / f"{lane}.jsonl")])
            assert r.code == 0, r.stderr
            r = run_cli(["export", "-q", "--tables", str(inputs[name]), "-o", str(tmp_path / lane)])
            assert r.code == 0, r.stderr
        rows[lane] = sorted(
            p.read_bytes()
            for p in (tmp_path / f"{lane}.jsonl").rglob("*")
            if p.is_file() and p.name.startswith("part-")
        )
        out = tmp_path / lane
        tables[lane] = {str(p.relative_to(out)): pq.read_table(p).to_pylist() for p in sorted(out.rglob("*.parquet"))}
    assert rows["fast"] == rows["pure"] and rows["fast"]
    assert tables["fast"] == tables["pure"] and tables["fast"]


# ---------------------------------------------------------------- selections, at random

# Tests the lane reads a condition from (type, output, key equalities and
# sets, text and number literals) and tests it cannot (other fields,
# inequalities, `contains`), to be combined with and, or, not, parentheses:
# whatever the filter, the lane may pass over only what it cannot choose,
# and writes the chosen lines itself only when the filter is exactly its
# conditions.  The demo's keys: AAPL, MSFT... (vwap), ((symbol V)(venue
# BATS)) (book), numbers (trades, positions), raw bytes (orders, undeclared).
_TESTS = [
    "type == Delta",
    "type == Heartbeat",
    "type in {Delta, Checkpoint_ack}",
    "type != Delta",
    'output == "vwap"',
    'output in {"book", "trades"}',
    'output != "vwap"',
    'key == "BRK.B"',
    'key == "((symbol V)(venue BATS))"',
    'key in {"MSFT", "V", "0x0c4f52442d3334363934343839"}',
    "key == 7075368050",
    'key contains "A"',
    "seq > 150",
    "field.price > 300",
    "delta == patch",
]


def _filters() -> st.SearchStrategy[str]:
    def combine(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(inner, st.sampled_from([" and ", " or ", " && ", " || "]), inner).map("".join),
            inner.map(lambda f: f"not {f}"),
            inner.map(lambda f: f"({f})"),
        )

    return st.recursive(st.sampled_from(_TESTS), combine, max_leaves=4)


@pytest.mark.skipif(not FAST, reason="the C fast lane is off (not built here, or RIPPLE_PURE)")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_filters(), st.sampled_from(["sexp", "jsonl"]), st.sampled_from(["demo", "capture"]))
def test_any_filter_chooses_as_the_pure_lane(
    inputs: dict[str, Path], monkeypatch: pytest.MonkeyPatch, text: str, fmt: str, name: str
) -> None:
    fast, pure = _both(["decode", "-F", fmt, "-Y", text, str(inputs[name])], monkeypatch)
    assert (fast.code, fast.stderr, fast.stdout) == (pure.code, pure.stderr, pure.stdout)
