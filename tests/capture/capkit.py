"""What the capture tests share besides their fixture: the `Capture` the
`lo_capture` fixture (conftest.py) returns and the payloads conversations
send.  Imported as `tests.capture.capkit`, never `conftest` by name: with
several conftest.py files in one run, `import conftest` finds whichever was
loaded last (tests/interop's, say), and collection fails."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from livecap import DEMO, Exchange


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
