"""Inputs for the batch pipeline's tests, and one embedded Spark (local[2])
for the whole session: a Spark session costs seconds to start, so the
commands run in-process reuse it (job.start_session)."""

from __future__ import annotations

import io
import shutil
from collections.abc import Iterator
from pathlib import Path

import dpkt  # type: ignore[import-untyped, unused-ignore]
import pytest

from tests.batch.s3server import S3Server, start_s3
from tests.batch.standalone import Standalone, start_standalone
from tests.replay.pcap import Connection, build_pcap

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "examples" / "demo.ripple"
# The example's Schema_negotiation answer (offset 699, 65 bytes): what the
# server side of a capture says.
NEGOTIATION = DEMO.read_bytes()[699:764]


def damaged_demo() -> bytes:
    """The example stream with a CRC broken, garbage in the middle and a
    truncated tail: every kind of framing problem, with intact messages
    around them."""
    data = bytearray(DEMO.read_bytes())
    data[1000] ^= 0xFF  # inside the envelope at 931: CRC mismatch
    data[1701:1705] = b"\x00gar"  # the magic at 1701: bad magic
    return bytes(data[:20000]) + b"garbage between envelopes" + bytes(data[20000:-40])


def split_pcap(pcap: bytes, at: int) -> tuple[bytes, bytes]:
    """A capture cut in two after packet `at`, as tcpdump -C rotates."""
    packets = list(dpkt.pcap.Reader(io.BytesIO(pcap)))
    outs = []
    for part in (packets[:at], packets[at:]):
        buf = io.BytesIO()
        w = dpkt.pcap.Writer(buf, nano=True)
        for ts, frame in part:
            w.writepkt(frame, ts=ts)
        outs.append(buf.getvalue())
    return outs[0], outs[1]


@pytest.fixture(scope="session")
def mixed_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Raw streams, a pcap, and a connection rotated over two pcaps, in
    nested directories, with a hidden file that is skipped."""
    d = tmp_path_factory.mktemp("mixed")
    shutil.copy(DEMO, d / "demo.ripple")
    (d / "damaged.ripple").write_bytes(damaged_demo())
    (d / "caps").mkdir()
    demo = DEMO.read_bytes()
    (d / "caps" / "one.pcap").write_bytes(
        build_pcap([Connection(demo, NEGOTIATION, client_port=41000), Connection(b"not ripple at all" * 20)])
    )
    whole = build_pcap([Connection(demo, NEGOTIATION, client_port=42000)], t0=1.8e9)
    first, second = split_pcap(whole, 15)
    (d / "caps" / "rot-1.pcap").write_bytes(first)
    (d / "caps" / "rot-2.pcap").write_bytes(second)
    (d / ".hidden").write_bytes(b"skipped")
    return d


@pytest.fixture(scope="session")
def unrotated_pcap(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The rotated connection as one capture."""
    p = tmp_path_factory.mktemp("whole") / "rot-1.pcap"
    p.write_bytes(build_pcap([Connection(DEMO.read_bytes(), NEGOTIATION, client_port=42000)], t0=1.8e9))
    return p


# The fixtures that start a JVM: a test using one (or a fixture that does)
# is marked `jvm` (pyproject.toml), as are the tests that start Spark in a
# child of their own.
JVM_FIXTURES = ("spark", "standalone")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if any(f in JVM_FIXTURES for f in getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.jvm)


@pytest.fixture(scope="session")
def spark(s3: S3Server) -> Iterator[object]:
    """Its executors have the S3 server's settings in their environment, as
    a user's have theirs (spark.executorEnv.*): tests/batch/test_s3.py."""
    from ripple_cli.batch import job

    session = job.start_session(
        "local[2]",
        [
            ("spark.driver.memory", "1g"),
            ("spark.sql.shuffle.partitions", "4"),
            ("spark.default.parallelism", "2"),
            ("spark.ui.enabled", "false"),
            *((f"spark.executorEnv.{k}", v) for k, v in s3.env.items()),
        ],
    )
    yield session.spark
    session.stop()


@pytest.fixture(scope="session")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    """A standalone master and two workers (separate JVMs from the PySpark
    distribution), started once for the session and stopped at its end."""
    cluster = start_standalone(tmp_path_factory.mktemp("standalone"))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A real S3-compatible server on 127.0.0.1 (moto's server mode), started
    once for the session and stopped at its end."""
    server = start_s3(tmp_path_factory.mktemp("s3") / "moto.log")
    try:
        yield server
    finally:
        server.stop()
