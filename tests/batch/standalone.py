"""A real Spark standalone cluster for the tests: a master and two workers,
each its own JVM started from the PySpark distribution's `spark-class`, as
README ("On a cluster") tells a user to start one.

Everything waits on a condition (a line in the master's log, the master's
JSON status at its web UI), never on a fixed delay.  The workers get the
environment a user's cluster would have: no PYTHONPATH, no PYSPARK_PYTHON,
no virtualenv of the driver's; their work directory is apart from the
driver's working directory.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

# Variables of the test's own process that a cluster's worker would not have.
DRIVER_ONLY = ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV", "SPARK_HOME", "MASTER")
STARTED = re.compile(r"Starting Spark master at (spark://\S+)")
WEB_UI = re.compile(r"MasterWebUI.* started at (http://\S+)")


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def cluster_env() -> dict[str, str]:
    """The environment of a daemon on a user's cluster host: small JVMs."""
    env = {k: v for k, v in os.environ.items() if k not in DRIVER_ONLY}
    env["SPARK_DAEMON_MEMORY"] = "256m"  # the master's and the workers' own JVMs
    env["SPARK_NO_DAEMONIZE"] = "1"
    return env


def wait_for(
    what: str, check: Callable[[], T | None], timeout: float = 180.0, procs: Sequence[subprocess.Popen[bytes]] = ()
) -> T:
    """Poll `check` until it returns something; fail (naming `what`) when
    one of `procs` exits first or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found is not None:
            return found
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"{what}: {p.args[1]} exited with {p.returncode} first")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.2)


@dataclass
class Standalone:
    """A running cluster: its master URL, web UI, logs, and timings."""

    master: str
    web_ui: str
    logs: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def status(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.web_ui}/json/", timeout=10) as r:
            status: dict[str, Any] = json.load(r)
        return status

    def alive_workers(self) -> int:
        return sum(1 for w in self.status()["workers"] if w["state"] == "ALIVE")

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def start_standalone(base: Path, workers: int = 2, worker_memory: str = "1g") -> Standalone:
    """A master on 127.0.0.1 (free ports) and `workers` workers of one core
    each, their work directories under `base`; returns once the master's
    status lists every worker ALIVE."""
    t0 = time.monotonic()
    spark_class = str(spark_home() / "bin" / "spark-class")
    env = cluster_env()
    logs = base / "logs"
    logs.mkdir(parents=True)
    procs: list[subprocess.Popen[bytes]] = []

    def start(name: str, *args: str) -> Path:
        log = logs / f"{name}.log"
        with open(log, "wb") as f:
            procs.append(
                subprocess.Popen(
                    [spark_class, *args], stdout=f, stderr=subprocess.STDOUT, env=env, cwd=base, start_new_session=True
                )
            )
        return log

    try:
        master_log = start(
            "master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "0", "--webui-port", "0"
        )

        def logged(pattern: re.Pattern[str]) -> Callable[[], str | None]:
            def check() -> str | None:
                m = pattern.search(master_log.read_text(errors="replace"))
                return m.group(1) if m else None

            return check

        master = wait_for("the master's URL", logged(STARTED), procs=procs)
        web_ui = wait_for("the master's web UI", logged(WEB_UI), procs=procs)
        cluster = Standalone(master, web_ui, logs, procs)
        for i in range(workers):
            work = base / f"worker-{i}"
            work.mkdir()
            start(
                f"worker-{i}",
                "org.apache.spark.deploy.worker.Worker",
                master,
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--webui-port",
                "0",
                "--cores",
                "1",
                "--memory",
                worker_memory,
                "--work-dir",
                str(work),
            )

        def all_alive() -> int | None:
            try:
                n = cluster.alive_workers()
            except OSError:
                return None
            return n if n == workers else None

        wait_for(f"{workers} ALIVE workers at {web_ui}/json/", all_alive, procs=procs)
    except BaseException:
        Standalone("", "", logs, procs).stop()
        raise
    cluster.timings["start"] = time.monotonic() - t0
    return cluster
