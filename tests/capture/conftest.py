"""Real loopback captures shared by the capture tests: made once per run."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import pytest
from livecap import DEMO, Exchange, closed, converse, listener, tcpdump


@dataclass
class Capture:
    path: Path
    exchanges: list[Exchange]
    server_port: int


def payloads(n: int, seed: int) -> list[tuple[bytes, bytes]]:
    """Client bytes: the bundled Ripple stream, then parts of it; server
    bytes: random, a few kilobytes."""
    rng = random.Random(seed)
    out = []
    for k in range(n):
        sent = DEMO if k == 0 else DEMO[rng.randrange(0, 20000) :][: rng.randrange(1000, 15000)]
        out.append((sent, rng.randbytes(rng.randrange(2000, 9000))))
    return out


@pytest.fixture(scope="session")
def lo_capture(tmp_path_factory: pytest.TempPathFactory) -> Capture:
    """Three concurrent connections on 127.0.0.1, captured by `tcpdump -i lo`
    (Ethernet, microseconds)."""
    path = tmp_path_factory.mktemp("lo") / "lo.pcap"
    exchanges: list[Exchange] = []
    until = closed(lambda: [e.client_port for e in exchanges])
    with listener() as srv:
        port = srv.getsockname()[1]
        with tcpdump(path, f"tcp port {port}", until=until):
            exchanges += converse(srv, payloads(3, seed=7), seed=7)
    return Capture(path, exchanges, port)
