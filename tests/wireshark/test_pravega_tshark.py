"""The Pravega dissector of `ripple wireshark --protocol pravega` in the real
tshark, against `ripple decode --format jsonl`: the golden transcripts of
the test suite (the Java client's simple and batched appends, the Rust
client's, reads, conditional appends, error replies) sent over real TCP in
small pieces and captured with tcpdump, found by the heuristic (a Hello
first); and the bundled examples/pravega.pcap on port 12345."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from ripple_cli.protocols.pravega.text import _value_json
from ripple_cli.protocols.pravega.wire import KINDS_BY_NAME, Kind, MString
from tests.capture.livecap import capture_conversation
from tests.wireshark import tsharkkit as kit
from tests.wireshark.tsharkkit import REPO, Envelope, dissector, envelopes, jsonl, port_of, tshark

GOLDEN = REPO / "tests" / "golden" / "protocols" / "pravega"
CLEAN = ("java-simple", "java-batching", "rust", "reads", "conditional", "errors")
WRITER = "6f1c2b3a-0000-4000-8000-00000000a001"  # examples/pravega.pcap's
SCALARS = {n for n, k in KINDS_BY_NAME.items() if k in (Kind.I32, Kind.I64, Kind.BOOL, Kind.UUID, Kind.UTF)}

# `ripple decode -Y` expressions on examples/pravega.pcap, and the display filters on the same fields.
BUNDLED_FILTERS = {
    'type == "SegmentRead"': 'pravega.type == "SegmentRead"',
    "request_id == 2": "pravega.request_id == 2",
    f'writer_id == "{WRITER}"': f"pravega.writer_id == {WRITER}",
    'segment == "examples/trades/0.#epoch.0"': 'pravega.segment == "examples/trades/0.#epoch.0"',
    "data.event_count == 2": "pravega.data.event_count == 2",
    "at_tail == true": "pravega.at_tail == 1",
    "high_version == 17": "pravega.high_version == 17",
}


@pytest.fixture(scope="module")
def lua(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return dissector("pravega", tmp_path_factory)


def _data(d: dict[str, Any]) -> dict[str, Any]:
    return {"length": d["length"], "event_count": d["event_count"], "records": [r["kind"] for r in d["records"]]}


def expected(pcap: Path, *args: str) -> dict[tuple[int, int], list[dict[str, Any]]]:
    out: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for d in jsonl(pcap, *args):
        if "problem" in d:
            continue  # a transcript's rule breaks (its notes): the messages are still compared
        row = {k: v for k, v in d.items() if k in SCALARS or k in ("type", "type_code")}
        # A boolean byte other than 0 and 1 (ripple shows it): true, as Java reads it and tshark shows it.
        row.update({k: bool(v) for k, v in row.items() if KINDS_BY_NAME.get(k) is Kind.BOOL})
        if isinstance(d.get("data"), dict):
            row["data"] = _data(d["data"])
        out.setdefault((port_of(d["src"]), port_of(d["dst"])), []).append(row)
    return out


def shown(e: Envelope) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for f in e.node:
        name = f.get("name", "").removeprefix("pravega.")
        kind = KINDS_BY_NAME.get(name)
        if name in ("type", "type_code"):
            row[name] = f.get("show") if name == "type" else int(f.get("show", ""))
        elif name == "data" and any(k.get("name") == "pravega.data.length" for k in f):
            kids = list(f)
            length = int(next(k.get("show", "") for k in kids if k.get("name") == "pravega.data.length"))
            records = [k.get("show") for k in kids if k.get("name") == "pravega.record"]
            row["data"] = {"length": length, "event_count": records.count("Event"), "records": records}
        elif name in SCALARS:
            show = f.get("show", "")
            if kind is Kind.UTF:
                row[name] = _value_json(kind, MString.of_raw(bytes.fromhex(f.get("value", ""))))
            elif kind is Kind.BOOL:
                row[name] = show in ("1", "True")
            elif kind is Kind.UUID:
                row[name] = str(uuid.UUID(show))
            else:
                row[name] = int(show)
    return row


def dissected(lua: Path, pcap: Path, *args: str) -> dict[tuple[int, int], list[dict[str, Any]]]:
    out: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for e in envelopes(tshark(lua, pcap, *args, "-T", "pdml"), "pravega"):
        out.setdefault(e.ports, []).append(shown(e))
    return out


def test_golden_transcripts_over_tcp(lua: Path, tmp_path: Path) -> None:
    path = tmp_path / "pravega.pcap"
    streams = [((GOLDEN / f"{name}.bin").read_bytes(), b"") for name in CLEAN]
    capture_conversation(path, streams, seed=9, max_write=60)
    want = expected(path)
    assert len(want) == len(CLEAN)
    assert sum(len(v) for v in want.values()) > 40
    (port,) = {dst for _src, dst in want}
    assert dissected(lua, path, "-o", f"pravega.port:{port}") == want
    # Records begun in an earlier message (a block's PartialEvent, a cut read) are joined as ripple joins them.
    kinds = {k for rows in want.values() for r in rows if "data" in r for k in r["data"]["records"]}
    assert {"Continuation", "PartialEvent"} <= kinds
    n = kit.assert_info_is_table(lua, path, "pravega", "-o", f"pravega.port:{port}", decode_as={port: "pravega"})
    assert n == sum(len(v) for v in want.values())
    filters = {
        "data.event_count == 1": "pravega.data.event_count == 1",
        'type == "AppendBlockEnd"': 'pravega.type == "AppendBlockEnd"',
        "num_events == 2": "pravega.num_events == 2",
    }
    decode = ("--decode-as", f"{port}=pravega")
    kit.assert_same_selection(lua, path, "pravega", filters, "-o", f"pravega.port:{port}", decode=decode)
    # Without the port, the heuristic finds the connections that open with a Hello.
    hello_first = {k: v for k, v in want.items() if v[0]["type"] == "Hello"}
    assert 0 < len(hello_first) < len(want)
    assert dissected(lua, path) == hello_first


def test_bundled_capture_on_the_pravega_port(lua: Path) -> None:
    pcap = REPO / "examples" / "pravega.pcap"
    want = expected(pcap)
    assert dissected(lua, pcap) == want
    assert kit.assert_info_is_table(lua, pcap, "pravega") == sum(len(v) for v in want.values())
    kit.assert_same_selection(lua, pcap, "pravega", BUNDLED_FILTERS)


def test_odd_commands_over_tcp(lua: Path, tmp_path: Path) -> None:
    """Padding, commands shown raw, optional trailing fields, strings that
    are not plain UTF-8: the same fields and the same Info as ripple."""
    path = tmp_path / "odd.pcap"
    names = ("raw", "optional", "strings")
    capture_conversation(path, [((GOLDEN / f"{n}.bin").read_bytes(), b"") for n in names], seed=13, max_write=50)
    (port,) = {dst for _src, dst in expected(path)}
    decode = ("--decode-as", f"{port}=pravega")
    want = expected(path, *decode)
    assert len(want) == len(names)
    assert dissected(lua, path, "-o", f"pravega.port:{port}") == want
    n = kit.assert_info_is_table(lua, path, "pravega", "-o", f"pravega.port:{port}", decode_as={port: "pravega"})
    assert n == sum(len(v) for v in want.values())
    filters = {"length == 5": "pravega.length == 5", 'type == "Padding"': 'pravega.type == "Padding"'}
    kit.assert_same_selection(lua, path, "pravega", filters, "-o", f"pravega.port:{port}", decode=decode)
