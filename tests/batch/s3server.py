"""A real S3-compatible server for the tests: moto's server mode (the
`moto[server]` package of the test extra) on a free port of 127.0.0.1,
started once per session.  ripple reaches it as a user reaches any S3
endpoint, through the standard AWS variables (S3Server.env)."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pyarrow.fs as pafs

from tests.batch.standalone import wait_for
from tests.tap.tapkit import free_port

# Any key does for moto; what matters is that ripple takes them from the
# standard variables.
ACCESS_KEY = "AKIATESTRIPPLE000001"
SECRET_KEY = "ripple-test-secret"
REGION = "us-east-1"


@dataclass
class S3Server:
    endpoint: str
    proc: subprocess.Popen[bytes]

    @property
    def env(self) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
        }

    def fs(self) -> pafs.S3FileSystem:
        return pafs.S3FileSystem(
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            region=REGION,
            endpoint_override=self.endpoint,
            allow_bucket_creation=True,
            allow_bucket_deletion=True,
        )

    def bucket(self, name: str) -> None:
        if self.fs().get_file_info(name).type == pafs.FileType.NotFound:
            self.fs().create_dir(name)

    def upload(self, local: Path, where: str) -> None:
        """A local directory's files (hidden ones too) under bucket/prefix `where`."""
        self.bucket(where.split("/", 1)[0])
        pafs.copy_files(str(local), where, source_filesystem=pafs.LocalFileSystem(), destination_filesystem=self.fs())

    def stop(self) -> None:
        stop_server(self.proc)


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """A test server's process ended: asked first, killed after 30 s."""
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def start_s3(log: Path, checks_credentials: bool = False) -> S3Server:
    """`checks_credentials`: moto's IAM checks on from the first request,
    so that every access key (none is known) is refused."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    if checks_credentials:
        env["INITIAL_NO_AUTH_ACTION_COUNT"] = "0"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )

    def answers() -> bool | None:
        try:
            with urllib.request.urlopen(endpoint + "/", timeout=5):
                return True
        except urllib.error.HTTPError:  # an answer all the same (a server that checks credentials)
            return True
        except (urllib.error.URLError, OSError):
            return None

    try:
        wait_for("the S3 server", answers, timeout=120, procs=[proc])
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return S3Server(endpoint, proc)
