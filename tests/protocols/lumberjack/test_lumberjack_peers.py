"""Real writers from npm talking to a reader written here, on 127.0.0.1:
lumberjack-client 1.0.3 (v2, plain TCP, C frames from pako) and
lumberjack-protocol 1.0.7 (v1 over TLS, certificate from openssl).  What
the reader received decodes, in every chunking, to exactly the events sent,
field by field; the acks it sent decode to what it sent (and what the
writer got); the connection's rules find nothing wrong."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from ljkit import DISSECTOR, decode, events
from peerkit import HOSTNAME, Reader, js_strings, require_peers, self_signed, send

from ripple_cli.protocols.base import DissectOptions, ProtoMessage
from ripple_cli.protocols.lumberjack.analysis import LumberjackAnalyzer
from ripple_cli.protocols.lumberjack.stream import LumberjackStream
from ripple_cli.sexp.parse import parse_one
from tests.protocols.dissector_kit import messages, problems, split

QUEUED: list[dict[str, Any]] = [
    {"message": "hello one", "@timestamp": "2026-11-22T05:00:00.000Z"},
    {"message": "two", "n": 2, "f": -1.5, "ok": True, "none": None},
    {"message": "caf\u00e9 \u2603 \U0001f600", "tags": ["a", "b"], "nested": {"x": [1, {"y": None}]}},
]
LATER: list[dict[str, Any]] = [{"message": "after connect"}, {"message": "last", "level": "warn"}]


@pytest.fixture(autouse=True)
def _peers() -> None:
    require_peers()


def analyze(transcript: list[tuple[bool, bytes]]) -> list[str]:
    """The connection's rules over what the reader saw, in its order."""
    streams = {side: LumberjackStream(DissectOptions(), side) for side in (True, False)}
    analyzer = LumberjackAnalyzer()
    found = []
    for side, data in transcript:
        for item in streams[side].feed(data):
            assert isinstance(item, ProtoMessage), item
            found += analyzer.observe(side, item)
    return [f"{p.kind}: {p.detail}" for p in found + analyzer.close()]


def test_lumberjack_client_v2_events_and_acks() -> None:
    reader = Reader(style="count")
    got_acks = send("client", reader.port, QUEUED, LATER)
    reader.join()
    assert got_acks == []  # lumberjack-client never reads acks

    # The reader's own reading agrees with what was sent (the harness works).
    expected = [(i + 1, e) for i, e in enumerate(QUEUED)] + [(1, e) for e in LATER]
    assert reader.events == expected

    data = bytes(reader.received)
    items = decode(data, from_client=True)
    assert problems(items) == []
    assert events(items) == expected
    # One batch of 3 in a C frame, then one batch per later event, all compressed by pako.
    types = [(m.type, m.fields.get("count"), "in_compressed" in m.fields) for m in messages(items)]
    assert (
        types
        == [
            ("Window", 3, False),
            ("Compressed", None, False),
            ("Json", None, True),
            ("Json", None, True),
            ("Json", None, True),
        ]
        + [("Window", 1, False), ("Compressed", None, False), ("Json", None, True)] * 2
    )
    compressed = [m for m in messages(items) if m.type == "Compressed"]
    assert all(m.line.startswith(b'(lumberjack(Compressed((version 2)(zlib"x\\156') for m in compressed)
    rebuilt = b"".join(DISSECTOR.encode(parse_one(m.line)) for m in messages(items) if "in_compressed" not in m.fields)
    assert rebuilt == data
    rng = random.Random(5)
    for _ in range(10):
        assert decode(data, pieces=split(data, rng, 7), from_client=True) == items

    acks = decode(bytes(reader.sent), from_client=False)
    assert problems(acks) == []
    assert [(m.fields["seq"], m.fields["keepalive"], m.fields["version"]) for m in messages(acks)] == [
        (0, True, 2),
        (3, False, 2),
        (0, True, 2),
        (1, False, 2),
        (0, True, 2),
        (1, False, 2),
    ]
    assert analyze(reader.transcript) == []


def test_lumberjack_protocol_v1_over_tls(tmp_path: Path) -> None:
    reader = Reader(style="eager", tls=self_signed(tmp_path))
    queued = [{"line": "first line", "offset": 0}, {"line": "second", "file": "/var/log/x.log"}]
    queued += [{"line": "caf\u00e9", "n": 42}, {"line": "fourth", "skip": None}]
    later = [{"line": "fifth"}, {"line": "sixth", "host": "given-host"}]
    got_acks = send("protocol", reader.port, queued, later, window=3)
    reader.join()

    # lumberjack-protocol adds the host when none is given and sends strings.
    sent = [js_strings({**e, "host": e.get("host", HOSTNAME)}) for e in queued + later]
    expected = [(i + 1, e) for i, e in enumerate(sent)]
    assert reader.events == expected

    items = decode(bytes(reader.received), from_client=True)
    assert problems(items) == []
    assert events(items) == expected
    msgs = messages(items)
    assert (msgs[0].type, msgs[0].fields["count"], msgs[0].fields["version"]) == ("Window", 3, 1)
    assert {m.type for m in msgs[1:]} == {"Data"} and {m.fields["version"] for m in msgs} == {1}
    # Pairs in the writer's order (the text keeps them as sent).
    assert msgs[1].line == (
        b'(lumberjack(Data((version 1)(seq 1)(pairs((line"first line")(offset 0)(host ' + HOSTNAME.encode() + b"))))))"
    )

    acks = decode(bytes(reader.sent), from_client=False)
    assert [m.fields["seq"] for m in messages(acks)] == reader.acks == got_acks
    assert reader.acks[-1] == 6 and 4 in reader.acks  # the writer waited for both
    assert {m.fields["version"] for m in messages(acks)} == {1}
    assert analyze(reader.transcript) == []
