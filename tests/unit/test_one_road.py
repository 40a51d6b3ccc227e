"""The one road's parts, each on its own: Ripple as a dissector like the
others, the message contract, the pipeline's sink calls, the format
registry (a format registered from the tests alone reaches `decode`)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from ripple_cli.capture.events import CaptureEvent, StreamData, StreamEnd, StreamStart
from ripple_cli.codec.problems import Problem
from ripple_cli.flow.demux import Demux
from ripple_cli.flow.pipeline import BaseSink, Enough, pump
from ripple_cli.flow.protocol_choice import ProtocolChoice
from ripple_cli.protocols import registry
from ripple_cli.protocols.base import Detection, DissectOptions, LaneKind
from ripple_cli.protocols.item import Decoded, Run
from ripple_cli.protocols.origin import Origin
from ripple_cli.render import FORMATS, View, make_renderer
from ripple_cli.render.base import NoRuns
from ripple_cli.sexp.parse import parse_many
from ripple_cli.sources.schema_files import load_registry
from ripple_cli.terminal.environment import Environment
from tests.conftest import EXAMPLES, ROOT, run_cli

DEMO = (EXAMPLES / "demo.ripple").read_bytes()


def raw_events(data: bytes, chunk: int = 4096) -> Iterator[CaptureEvent]:
    yield StreamStart(None, None, True)
    for i in range(0, len(data), chunk):
        yield StreamData(None, data[i : i + chunk], None)
    yield StreamEnd(None, None, "end of input")


class Collect(BaseSink):
    def __init__(self, takes_runs: bool = False, stop_after: int | None = None) -> None:
        self.takes_runs = takes_runs
        self.stop_after = stop_after
        self.calls: list[str] = []
        self.messages: list[Decoded] = []

    def message(self, origin: Origin, msg: Decoded) -> None:
        self.calls.append("message")
        self.messages.append(msg)
        if self.stop_after is not None and len(self.messages) >= self.stop_after:
            raise Enough

    def problem(self, origin: Origin, problem: Problem) -> None:
        self.calls.append("problem")

    def run(self, origin: Origin, run: Run) -> None:
        self.calls.append(f"run {run.messages}")


def ripple_demux(**dissect: object) -> Demux:
    return Demux("demo", ProtocolChoice("ripple", options=DissectOptions(**dissect)))  # type: ignore[arg-type]


# ------------------------------------------------------------------ Ripple


def test_ripple_is_registered_and_detected_like_the_others() -> None:
    ripple = registry.get("ripple")
    assert registry.all_dissectors()[0] is ripple
    assert ripple.detect(DEMO[:4096]) is Detection.YES
    assert ripple.detect(b"GET / HTTP/1.1\r\n") is Detection.MORE
    assert ripple.detect(b"x" * (2 << 20)) is Detection.NO


def test_ripple_stream_dissector_gives_the_canonical_lines() -> None:
    stream = registry.get("ripple").stream(DissectOptions(), None)
    items = stream.feed(DEMO[:5000]) + stream.feed(DEMO[5000:]) + stream.finish()
    golden = (
        (ROOT / "tests" / "golden" / "demo.sexp").read_bytes() if (ROOT / "tests/golden/demo.sexp").exists() else None
    )
    lines = b"".join(m.line + b"\n" for m in items if not isinstance(m, Problem))  # type: ignore[union-attr]
    assert lines == run_cli(["decode", str(EXAMPLES / "demo.ripple")]).stdout
    if golden is not None:
        assert lines == golden


def test_ripple_encode_is_real_and_an_encoder_keeps_the_handshakes_schemas() -> None:
    text = run_cli(["decode", str(EXAMPLES / "demo.ripple")]).stdout
    sexps = parse_many(text)
    ripple = registry.get("ripple")
    assert ripple.encode(sexps[0]) == DEMO[: len(ripple.encode(sexps[0]))]  # the Handshake alone
    encoder = ripple.encoder(DissectOptions(registry=load_registry([str(EXAMPLES / "more-schemas")])))
    assert b"".join(encoder.encode(s) or b"" for s in sexps) == DEMO


def test_the_stream_rules_come_with_the_ripple_dissector() -> None:
    demo_then_again = DEMO + DEMO  # every seq and sequence_no again: out of order, duplicates
    sink = Collect()
    pump(raw_events(demo_then_again), ripple_demux(rules=True), sink)
    assert sink.calls.count("message") == 600
    plain = Collect()
    pump(raw_events(demo_then_again), ripple_demux(), plain)
    assert plain.calls.count("problem") == 0
    assert sink.calls.count("problem") > 300


# ------------------------------------------------------------------ pipeline


def test_a_sink_that_takes_runs_gets_them_and_counts_match() -> None:
    from ripple_cli.codec.fast import speedups

    runs = Collect(takes_runs=True)
    demux = ripple_demux(lane=LaneKind.SEXP)
    pump(raw_events(DEMO, chunk=1 << 20), demux, runs)
    st = demux.streams[None]
    assert st.messages == 300 and st.bytes == len(DEMO)
    if speedups() is not None:
        assert any(c.startswith("run ") for c in runs.calls)
    ones = Collect()
    pump(raw_events(DEMO), ripple_demux(), ones)
    assert ones.calls == ["message"] * 300


def test_enough_stops_the_input() -> None:
    sink = Collect(stop_after=3)
    assert pump(raw_events(DEMO, chunk=100), ripple_demux(), sink) is False
    assert len(sink.messages) == 3


def test_every_message_offers_the_contract() -> None:
    sink = Collect()
    pump(raw_events(DEMO), ripple_demux(registry=load_registry([str(EXAMPLES / "more-schemas")])), sink)
    for m in sink.messages:
        assert m.protocol == "ripple"
        assert m.line.startswith(b"((seq ") and m.hum.startswith(b"((seq ")
        assert m.to_json({"source": "demo"})["type"] == m.type
        cells = m.cells()
        assert cells.seq is not None and cells.summary
        assert (m.output is None) == (m.type != "Delta")


# ------------------------------------------------------------------ formats


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_every_registered_format_makes_a_renderer(fmt: str) -> None:
    out = io.BytesIO()
    env = Environment(stdin=io.BytesIO(), stdout=out, stderr=io.StringIO(), stdout_isatty=False, environ={})
    r = make_renderer(fmt, env, View())
    assert r.lane is None or isinstance(r.lane, LaneKind)
    r.close()


def test_every_format_is_in_the_manual_and_in_decode_help() -> None:
    man = (ROOT / "man" / "ripple-decode.1").read_text()
    help_text = subprocess.run(
        [sys.executable, "-m", "ripple_cli", "decode", "--help"], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    for fmt in FORMATS:
        assert f".B {fmt}" in man or f".BR {fmt} ," in man, fmt
        assert fmt in help_text


def test_a_format_registered_from_the_tests_reaches_decode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(FORMATS, "types", "tests.unit.test_one_road:types_renderer")
    r = run_cli(["decode", "-F", "types", "-c", "3", str(EXAMPLES / "demo.ripple")])
    assert r.stdout == b"Handshake\nSchema_negotiation\nDelta\n"


class TypesRenderer(NoRuns):
    """One line per message: its type (a format defined by the tests)."""

    def __init__(self, env: Environment) -> None:
        self.env = env

    def message(self, origin: Origin, msg: Decoded) -> None:
        self.env.stdout.write(msg.type.encode() + b"\n")

    def problem(self, origin: Origin, problem: Problem) -> None:
        pass

    def flush(self) -> None:
        self.env.stdout.flush()

    def close(self) -> None:
        self.env.stdout.flush()


def types_renderer(env: Environment, view: View) -> TypesRenderer:
    return TypesRenderer(env)


def test_json_view_of_a_ripple_message_is_the_json_format() -> None:
    r = run_cli(["decode", "-F", "jsonl", "-c", "1", str(EXAMPLES / "demo.ripple")])
    first = json.loads(r.stdout.splitlines()[0])
    sink = Collect(stop_after=1)
    pump(raw_events(DEMO), ripple_demux(), sink)
    assert sink.messages[0].to_json({"source": str(EXAMPLES / "demo.ripple")}) == first
