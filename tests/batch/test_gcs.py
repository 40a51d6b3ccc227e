"""Inputs and outputs by gs:// against a real GCS-compatible server
(gcp-storage-emulator, of the test extra, on 127.0.0.1, started once for
this module), reached as Google's own clients reach an emulator: through
CLOUD_STORAGE_EMULATOR_ENDPOINT or STORAGE_EMULATOR_HOST, nothing else.
The runs are in-process (PySpark hidden); the Spark runs by URL go through
the same filesystem layer, tested on S3 (test_s3.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from tests.batch.s3server import stop_server
from tests.batch.standalone import wait_for
from tests.batch.test_s3 import check_typed, renamed, typed_files, typed_inputs
from tests.batch.test_spark_export import in_process_rows, table_rows
from tests.batch.test_without_spark import HIDE
from tests.conftest import ROOT
from tests.tap.tapkit import free_port

BUCKET = "ripple-gcs"


class GcsServer:
    def __init__(self, log: Path) -> None:
        port = free_port()
        self.endpoint = f"http://127.0.0.1:{port}"
        emulator = Path(sys.executable).parent / "gcp-storage-emulator"
        args = ["start", "--host", "127.0.0.1", "--port", str(port), "--in-memory", f"--default-bucket={BUCKET}"]
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                [str(emulator), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        wait_for(f"the GCS emulator on port {port}", self._answers, timeout=60, procs=[self.proc])

    def _answers(self) -> bool | None:
        try:
            with urllib.request.urlopen(f"{self.endpoint}/storage/v1/b", timeout=5):
                return True
        except (urllib.error.URLError, ConnectionError):
            return None

    def fs(self) -> pafs.GcsFileSystem:
        return pafs.GcsFileSystem(
            anonymous=True, scheme="http", endpoint_override=self.endpoint.removeprefix("http://")
        )

    def stop(self) -> None:
        stop_server(self.proc)


@pytest.fixture(scope="module")
def gcs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GcsServer]:
    server = GcsServer(tmp_path_factory.mktemp("gcs") / "emulator.log")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def gcs_inputs(gcs: GcsServer, mixed_dir: Path) -> str:
    """mixed_dir (raw streams, a pcap, a connection rotated over two pcaps,
    a hidden file) under gs://BUCKET/day1/."""
    pafs.copy_files(
        str(mixed_dir), f"{BUCKET}/day1", source_filesystem=pafs.LocalFileSystem(), destination_filesystem=gcs.fs()
    )
    return f"{BUCKET}/day1"


def _ripple(variable: str, value: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    """ripple in a process of its own, in-process (PySpark hidden), with one
    emulator variable and no AWS or Google settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GOOGLE_", "CLOUDSDK_"))}
    env = {k: v for k, v in env.items() if k not in ("CLOUD_STORAGE_EMULATOR_ENDPOINT", "STORAGE_EMULATOR_HOST")}
    env[variable] = value
    code = HIDE.format(hidden=("pyspark",))
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600
    )


def _fetched_rows(gcs: GcsServer, where: str) -> list[tuple[object, ...]]:
    local = Path(tempfile.mkdtemp(prefix="gcs-table-"))
    try:
        pafs.copy_files(
            where, str(local / "t"), source_filesystem=gcs.fs(), destination_filesystem=pafs.LocalFileSystem()
        )
        return table_rows(local / "t")
    finally:
        shutil.rmtree(local)


def test_export_from_gcs_to_gcs(gcs: GcsServer, gcs_inputs: str, mixed_dir: Path) -> None:
    """A prefix read and the table written by gs://, the emulator named by
    CLOUD_STORAGE_EMULATOR_ENDPOINT (google-cloud-cpp's variable): the rows
    of the same files read locally."""
    args = ["export", "--split-size", "8192", f"gs://{gcs_inputs}", "-o", f"gs://{BUCKET}/out"]
    done = _ripple("CLOUD_STORAGE_EMULATOR_ENDPOINT", gcs.endpoint, args)
    assert done.returncode == 0, done.stderr
    assert f"1,198 messages, 4 problems -> gs://{BUCKET}/out (parquet, partitioned by event_hour; in-process" in (
        done.stderr
    )
    expected = renamed(in_process_rows([str(mixed_dir)], 8192), mixed_dir, f"gs://{gcs_inputs}")
    assert len(expected) == 1202
    assert _fetched_rows(gcs, f"{BUCKET}/out") == expected


def test_stats_and_a_glob_from_gcs(gcs: GcsServer, gcs_inputs: str, mixed_dir: Path, tmp_path: Path) -> None:
    """STORAGE_EMULATOR_HOST as host:port (the Python and Java clients'
    form); a glob of the rotated pair; the figures those of the local files."""
    host = gcs.endpoint.removeprefix("http://")
    glob = f"{gcs_inputs}/caps/rot-*.pcap"
    remote = _ripple("STORAGE_EMULATOR_HOST", host, ["stats", "-q", "-F", "json", f"gs://{glob}"])
    assert remote.returncode == 0, remote.stderr
    here = tmp_path / "here"
    shutil.copytree(mixed_dir, here / gcs_inputs)
    local = subprocess.run(
        [sys.executable, "-c", HIDE.format(hidden=("pyspark",)), "stats", "-q", "-F", "json", glob],
        capture_output=True,
        text=True,
        cwd=here,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=600,
    )
    assert local.returncode == 0, local.stderr
    assert json.loads(remote.stdout) == json.loads(local.stdout)


def test_typed_tables_to_gcs(gcs: GcsServer, mixed_dir: Path, tmp_path: Path) -> None:
    """export --tables to a bucket's prefix: the part files, schemas and rows
    written to a local directory (objects under their final names)."""
    args = ["export", "--tables", "--split-size", "8192", *typed_inputs(mixed_dir)]
    local = tmp_path / "local"
    here = _ripple("STORAGE_EMULATOR_HOST", gcs.endpoint, [*args, "-o", str(local)])
    assert here.returncode == 0, here.stderr
    there = _ripple("STORAGE_EMULATOR_HOST", gcs.endpoint, [*args, "-o", f"gs://{BUCKET}/typed"])
    assert there.returncode == 0, there.stderr
    check_typed(typed_files(gcs.fs(), f"{BUCKET}/typed"), typed_files(pafs.LocalFileSystem(), str(local)))
    assert _fetched_rows(gcs, f"{BUCKET}/typed/messages") == table_rows(local / "messages")


def _no_credentials(tmp_path: Path, args: list[str], **extra: str) -> subprocess.CompletedProcess[str]:
    """ripple with no Google settings at all: no emulator, no key file, a
    HOME without gcloud's file, no metadata server named."""
    product = Path("/sys/class/dmi/id/product_name")
    if product.is_file() and product.read_text().startswith("Google"):
        pytest.skip("a Google Cloud machine: its metadata server gives credentials")
    drop = ("AWS_", "GOOGLE_", "CLOUDSDK_", "GCE_METADATA_", "CLOUD_STORAGE_EMULATOR_ENDPOINT", "STORAGE_EMULATOR_HOST")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(HOME=str(tmp_path), **extra)
    code = HIDE.format(hidden=("pyspark",))
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )


def test_no_credentials_is_one_line_at_once(tmp_path: Path) -> None:
    """Without credentials a gs:// URL fails at once, exit 3, rather than
    wait minutes on a metadata server that is not there (the timeout above
    would fail the test)."""
    done = _no_credentials(tmp_path, ["export", "examples/demo.ripple", "-o", "gs://bucket/out"])
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr.splitlines() == [
        "ripple: gs://: no Google Cloud credentials (set GOOGLE_APPLICATION_CREDENTIALS to a key file, run"
        " `gcloud auth application-default login`, or set STORAGE_EMULATOR_HOST for an emulator)"
    ]
    missing = tmp_path / "key.json"
    done = _no_credentials(tmp_path, ["stats", "gs://bucket/day1/"], GOOGLE_APPLICATION_CREDENTIALS=str(missing))
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr.splitlines() == [
        f"ripple: gs://: GOOGLE_APPLICATION_CREDENTIALS names {missing}, which is not a file"
    ]
