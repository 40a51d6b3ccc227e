"""Item 5 of issue 15: a Handshake may declare any number of schemas; what
that costs is reading them (a schema is compiled when a Delta first needs
it), and compiled schemas shared across connections are a bounded cache of
the most recently used, not every schema the process ever saw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ripple_cli.capture.events import StreamData
from ripple_cli.codec.registry import SchemaRegistry
from ripple_cli.codec.schema import INT, Field, Schema
from ripple_cli.flow.demux import Demux
from ripple_cli.flow.protocol_choice import RIPPLE, ProtocolChoice
from ripple_cli.protocols.base import DissectOptions
from tests.hostile.bombs import many_schemas, run_limited


def _schema(i: int) -> Schema:
    return Schema(b"s%d" % i, 1, INT, (Field(b"x", INT),))


def test_the_shared_cache_keeps_the_most_recently_used() -> None:
    root = SchemaRegistry(cache_size=3)
    children = [root.child() for _ in range(10)]
    for i, reg in enumerate(children):
        reg.declare([(b"out", _schema(i))])
        assert root.compiled() == min(i, 3)
        assert reg.get(_schema(i).fingerprint) is not None
    assert root.compiled() == 3
    # what a registry compiled stays its own, whatever the cache evicted
    assert children[0].get(_schema(0).fingerprint) is children[0].get(_schema(0).fingerprint)


def test_declared_schemas_are_compiled_only_when_used() -> None:
    registry = SchemaRegistry()
    demux = Demux("x", ProtocolChoice(protocol=RIPPLE, options=DissectOptions(registry=registry)))
    out = demux.feed(StreamData(None, many_schemas(5_000), None)) + demux.finish()
    assert [type(item).__name__ for _, item in out] == ["Message", "Message"]
    assert registry.compiled() == 1  # the one schema a Delta used


@pytest.mark.parametrize("pure", [False, True], ids=["fast", "pure"])
def test_a_handshake_of_100000_schemas_stays_small(tmp_path: Path, pure: bool) -> None:
    path = tmp_path / "many.ripple"
    path.write_bytes(many_schemas(100_000))
    r = run_limited(["verify", str(path)], pure=pure)
    assert (r.code, r.stderr) == (0, "")
    assert r.maxrss_kb < 256 * 1024


@pytest.mark.parametrize("fmt", ["sexp", "jsonl"])
@pytest.mark.parametrize("pure", [False, True], ids=["fast", "pure"])
def test_printing_a_handshake_of_100000_schemas_stays_small(tmp_path: Path, pure: bool, fmt: str) -> None:
    """Items 5 and 6: the schemas are read when asked for and written as
    they come, never held all at once as objects (600,000 of them) or as
    one tree or JSON document of them all; the memory is that of the
    text (12 and 20 MB here; 16 MiB of schemas print in about 210 MB)."""
    path = tmp_path / "many.ripple"
    path.write_bytes(many_schemas(100_000))
    r = run_limited(["decode", "-F", fmt, str(path)], pure=pure)
    assert (r.code, r.stderr) == (0, "")
    first, delta = r.stdout.splitlines()
    if fmt == "sexp":
        assert first.startswith(b"((seq 1)(time_ns 0)(schema ripple.handshake/v1)(msg(Handshake((source_worker_id w)")
        assert first.count(b"((name s") == 100_000
        assert delta.startswith(b"((seq 2)")
    else:
        hs = json.loads(first)["msg"]
        assert len(hs["output_schemas"]) == 100_000
        assert hs["output_schemas"][-1]["schema"]["fingerprint"] == "s99999/v1"
        assert json.loads(delta)["seq"] == 2
    assert r.maxrss_kb < 128 * 1024, f"{r.maxrss_kb >> 10} MB"
