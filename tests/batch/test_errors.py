"""Bad command lines and runs that cannot start: one line on stderr, the
documented exit status (ripple-export(1), EXIT STATUS), no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ripple_cli.batch.rows import COLUMN_NAMES
from tests.batch.conftest import DEMO
from tests.conftest import ROOT, run_cli


def test_usage_errors_before_spark_starts(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cases = [
        (
            ["export", str(DEMO), "-o", str(out), "--partition-by", "nosuch"],
            2,
            "--partition-by: 'nosuch' is not a column (columns: " + ", ".join(COLUMN_NAMES) + ")",
        ),
        (
            ["export", str(DEMO), "-o", str(out), "--conf", "spark.executor.memory"],
            2,
            "--conf 'spark.executor.memory': expected KEY=VALUE (e.g. spark.executor.memory=4g)",
        ),
        (["export", str(DEMO), "-o", str(out), "--split-size", "0"], 2, "--split-size: must be at least 1 byte"),
        (
            ["export", str(tmp_path / "missing.pcap"), "-o", str(out)],
            3,
            f"{tmp_path / 'missing.pcap'}: no such file or directory",
        ),
        (["export", str(DEMO), "-o", str(tmp_path)], 3, f"{tmp_path}: already exists (--overwrite replaces it)"),
        (["stats", "-"], 2, "export and stats read files, not stdin (-): save the stream to a file first"),
        (["stats", str(tmp_path / "*.pcapng")], 3, f"{tmp_path / '*.pcapng'}: no file matches"),
    ]
    for args, code, message in cases:
        res = run_cli(args)
        assert (res.code, res.stderr) == (code, f"ripple: {message}\n"), args
        assert res.stdout == b""
    assert not out.exists()


def _ripple(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ripple_cli", *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )


@pytest.mark.jvm
def test_spark_that_cannot_start(tmp_path: Path) -> None:
    """No Java, and a master URL Spark does not take (the JVM's own reason,
    from its log, which is kept and named)."""
    out = str(tmp_path / "out")
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "nojava")}
    done = _ripple(["export", "--master", "local[1]", str(DEMO), "-o", out], env)  # small: Spark only when asked
    assert (done.returncode, done.stdout) == (3, "")
    assert (
        done.stderr == f"ripple: spark: JAVA_HOME={tmp_path / 'nojava'} has no bin/java: point it at a Java 17 or 21\n"
    )

    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    done = _ripple(["stats", "--master", "nosuch://host", str(DEMO)], env)
    assert (done.returncode, done.stdout) == (3, "")
    prefix = (
        "ripple: spark: cannot start on nosuch://host: Master must either be yarn or start with spark, k8s, or local"
    )
    assert done.stderr.startswith(prefix + " (the JVM's log: /"), done.stderr
    assert done.stderr.count("\n") == 1
    log = done.stderr.removeprefix(prefix + " (the JVM's log: ").removesuffix(")\n")
    assert "SparkException" in Path(log).read_text()
    os.remove(log)
    assert not Path(out).exists()


def test_driver_python_must_be_the_one_running_ripple() -> None:
    """The driver is ripple's own process: another interpreter named for it
    is refused before Spark starts (it would be silently ignored)."""
    done = _ripple(["stats", "--conf", "spark.pyspark.driver.python=/bin/false", str(DEMO)], dict(os.environ))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "ripple: --conf spark.pyspark.driver.python=/bin/false: ripple's driver is the Python that runs ripple "
        f"({sys.executable}): run ripple with that interpreter\n"
    )
