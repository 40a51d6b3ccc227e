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
from tests.conftest import EXAMPLES, ROOT, run_cli


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


@pytest.mark.jvm
def test_a_task_that_fails_says_why(tmp_path: Path) -> None:
    """The executor's reason, not py4j's first line ("An error occurred
    while calling ...collectAndServe."): here it cannot start the Python
    that spark.pyspark.python names."""
    out = str(tmp_path / "out")
    conf = ["--conf", "spark.pyspark.python=/nonexistent/bin/python"]
    done = _ripple(["export", "--master", "local[1]", *conf, str(DEMO), "-o", out], dict(os.environ))
    assert done.returncode == 3 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(
        'ripple: spark: job failed: Cannot run program "/nonexistent/bin/python": error=2, No such file or directory'
        " (the JVM's log: /"
    ), done.stderr


def test_an_executors_ripple_error_is_the_line_it_would_be_in_process(spark: object) -> None:
    """A task's InputUnreadable (an object the executor cannot read, an
    input gone) reaches the driver as that error: its line, exit status 3."""
    from ripple_cli.batch.job import Session, spark_errors
    from ripple_cli.errors import InputUnreadable

    def task(_x: int) -> int:
        from ripple_cli.errors import InputUnreadable

        raise InputUnreadable("s3://cap/d/demo.ripple: access denied (check the credentials)")

    session = Session(spark, owned=False, log_path=None)  # type: ignore[arg-type]
    denied = r"^s3://cap/d/demo.ripple: access denied \(check the credentials\)$"
    with pytest.raises(InputUnreadable, match=denied), spark_errors(session):
        spark.sparkContext.parallelize([1]).map(task).collect()  # type: ignore[attr-defined]

    def python_error(_x: int) -> int:
        raise ValueError("no good")

    from ripple_cli.batch.job import SparkFailed

    with pytest.raises(SparkFailed, match=r"^spark: job failed: ValueError: no good$"), spark_errors(session):
        spark.sparkContext.parallelize([1]).map(python_error).collect()  # type: ignore[attr-defined]


def test_the_jvm_log_says_why_spark_gave_up(tmp_path: Path) -> None:
    """A master that never answers: Spark stops the context a minute on,
    and its log's reason is the line's (checked by hand against a dead
    spark:// port; here the log line as Spark 4 writes it)."""
    from ripple_cli.batch.job import _jvm_cause

    log = tmp_path / "spark.log"
    log.write_text(
        'Setting default log level to "WARN".\n'
        "spark: ERROR StandaloneSchedulerBackend: Application has been killed. "
        "Reason: All masters are unresponsive! Giving up.\n"
    )
    assert _jvm_cause(str(log)) == "All masters are unresponsive! Giving up."


@pytest.mark.jvm
def test_ctrl_c_during_a_spark_export(tmp_path: Path) -> None:
    """Ctrl-C once the tasks write: one line, exit status 130, and no OUT
    left that would read as a whole table (it was py4j's tracebacks, exit
    status 3, and part files cut short under their final names)."""
    import signal
    import time

    big = tmp_path / "big.ripple"
    big.write_bytes(Path(DEMO).read_bytes() * 300)  # 11 MB: 172 tasks of 64K on one core
    out = tmp_path / "out"
    args = ["export", "-q", "--master", "local[1]", "--split-size", "64K", str(big), "-o", str(out)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ripple_cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    deadline = time.monotonic() + 300
    while not out.exists():  # the first task has written
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=300)
    assert (proc.returncode, stdout, stderr.decode()) == (130, b"", f"ripple: export: interrupted: {out} removed\n")
    assert not out.exists()


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


@pytest.mark.jvm
@pytest.mark.parametrize("command", ["export", "stats"])
def test_ctrl_c_while_spark_starts(tmp_path: Path, command: str) -> None:
    """Ctrl-C before the session is up (the JVM takes seconds to start),
    sent to a ripple started with SIGINT ignored, as a script's background
    job is (`ripple export ... &`): it was lost (the run went on to its
    end), or a second one gave py4j's tracebacks and exit status 3.  Now:
    one line, exit status 130, and no JVM left behind."""
    import signal
    import time

    out = tmp_path / "out"
    args = [command, "-q", "--master", "local[1]", DEMO] + (["-o", str(out)] if command == "export" else [])
    # Its own JVM: not the gateway of a session this process may have started.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ripple_cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    deadline = time.monotonic() + 300
    while not _children(proc.pid):  # the JVM is starting
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    jvms = _children(proc.pid)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    said = f"ripple: export: interrupted: {out} removed\n" if command == "export" else "ripple: stats: interrupted\n"
    assert (proc.returncode, stdout, stderr.decode()) == (130, b"", said)
    assert not out.exists()
    for pid in jvms:  # gone, or a zombie of init's until it is reaped
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                        break
            except OSError:
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"JVM {pid} outlived ripple")


def _tree(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.mark.jvm
@pytest.mark.parametrize("master", [None, "local[1]"], ids=["in-process", "spark"])
def test_ctrl_c_during_an_overwrite_leaves_the_old_out(tmp_path: Path, master: str | None) -> None:
    """--overwrite, interrupted once the new table is being written: the
    old OUT was gone (removed before the writing) and a part of the new one
    sat under its name, presented as whole.  The new table is now written
    beside OUT and put in its place only once whole: OUT stays as it was."""
    import signal
    import time

    out = tmp_path / "out"
    assert run_cli(["export", "-q", str(DEMO), "-o", str(out)]).code == 0
    before = _tree(out)
    big = tmp_path / "big.ripple"
    big.write_bytes(Path(DEMO).read_bytes() * 300)  # 11 MB: seconds of writing
    spark = [] if master is None else ["--master", master, "--split-size", "64K"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ripple_cli", "export", "-q", "--overwrite", *spark, str(big), "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=env,
    )
    deadline = time.monotonic() + 300
    while not any(p.rglob("*.parquet") for p in tmp_path.glob(".out.ripple-*")):  # the new table is being written
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=300)
    said = f"ripple: export: interrupted: {out} left as it was\n"
    assert (proc.returncode, stdout, stderr.decode()) == (130, b"", said)
    assert _tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.ripple", "out"]


def test_an_overwrite_puts_the_whole_new_table_in_place(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli(["export", "-q", str(DEMO), "-o", str(out)]).code == 0
    (out / "stale").write_text("from before")
    assert run_cli(["export", "-q", "--overwrite", str(EXAMPLES / "session.ripple"), "-o", str(out)]).code == 0
    assert "stale" not in _tree(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_an_overwrite_through_a_link_replaces_its_target(tmp_path: Path) -> None:
    """OUT a symbolic link to a directory (`latest -> 2024-06-20`): the
    target is replaced, the link stays, as a redirection writes through one
    (the staging would otherwise put a directory in the link's place)."""
    target, link = tmp_path / "day", tmp_path / "latest"
    assert run_cli(["export", "-q", str(DEMO), "-o", str(target)]).code == 0
    link.symlink_to(target)
    (target / "stale").write_text("from before")
    assert run_cli(["export", "-q", "--overwrite", str(EXAMPLES / "session.ripple"), "-o", str(link)]).code == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert "stale" not in _tree(target) and _tree(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["day", "latest"]
