"""Real loopback captures shared by the capture tests: made once per run.
`Capture` and `payloads` live in capkit.py (tests import them from there)."""

from __future__ import annotations

import pytest
from livecap import Exchange, closed, converse, listener, tcpdump

from tests.capture.capkit import Capture, payloads


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
