"""`ripple export` and `ripple stats` on a real standalone cluster (a master
and two workers, separate JVMs: tests/batch/standalone.py), run as a user
runs them: `--master spark://...`, the executors' Python named with
`--conf spark.pyspark.python`, relative inputs and OUT from a working
directory that is not the executors'.  The rows and figures must be those
of the run without a cluster.

The driver and the executors run this checkout's ripple: the test's Python
(the venv with PySpark) has ripple installed from another tree (an
editable install), so the checkout is put first on their path, the
driver's with PYTHONPATH, the executors' with spark.executorEnv.PYTHONPATH.
A user's venv has ripple installed and needs neither; nothing else of the
driver's environment reaches the workers (standalone.cluster_env).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.batch.standalone import Standalone, cluster_env, spark_home
from tests.batch.test_spark_export import in_process_rows, table_rows
from tests.conftest import ROOT, run_cli
from tests.docs import doctest_shell as ds


def cluster_args(cluster: Standalone) -> list[str]:
    return [
        "--master",
        cluster.master,
        "--conf",
        f"spark.pyspark.python={sys.executable}",
        "--conf",
        f"spark.executorEnv.PYTHONPATH={ROOT}",  # this checkout, not the venv's ripple: see above
        "--conf",
        "spark.executor.memory=512m",
        "--conf",
        "spark.driver.memory=512m",
    ]


def ripple(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = cluster_env()  # no PYSPARK_PYTHON: the workers' Python comes from --conf only
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "ripple_cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


@pytest.fixture(scope="module")
def workdir(mixed_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The inputs as `data/` under the driver's working directory."""
    d = tmp_path_factory.mktemp("driver")
    shutil.copytree(mixed_dir, d / "data")
    return d


def test_export_on_a_standalone_cluster(standalone: Standalone, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    done = ripple(["export", "-q", "--split-size", "8192", *cluster_args(standalone), "data", "-o", "out"], workdir)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    monkeypatch.chdir(workdir)
    expected = in_process_rows(["data"], 8192)  # capture_file as given: data/...
    assert len(expected) == 1202
    assert table_rows(workdir / "out") == expected
    # The executors did the work: the master lists the run as an application of its own.
    apps = [a["name"] for a in standalone.status()["completedapps"]]
    assert "ripple" in apps


def test_under_spark_submit_its_master_wins(
    spark: object, standalone: Standalone, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`spark-submit --master spark://...` runs ripple's driver: no
    --master for ripple, and the run is on the cluster, not on ripple's
    default local[*].  Stats, with relative inputs: the figures those of
    the session's local[2].  (Stats by --master on the cluster is run from
    S3 in test_s3.py.)"""
    before = len(standalone.status()["completedapps"])
    submit = [
        str(spark_home() / "bin" / "spark-submit"),
        "--master",
        standalone.master,
        "--name",
        "ripple-submitted",
        *cluster_args(standalone)[2:],
        str(ROOT / "ripple_cli" / "__main__.py"),
    ]
    env = cluster_env()
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [*submit, "stats", "-q", "-F", "json", "data"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    monkeypatch.chdir(workdir)
    here = run_cli(["stats", "-q", "-F", "json", "data"])
    assert json.loads(done.stdout) == json.loads(here.stdout)
    apps = standalone.status()["completedapps"]
    assert len(apps) == before + 1
    assert "ripple-submitted" in [a["name"] for a in apps]


def cluster_recipe(blocks: list[ds.Block]) -> str:
    [block] = [b for b in blocks if b.not_run and "Spark cluster" in b.not_run]
    [cmd] = block.commands
    return cmd.text


def test_the_docs_cluster_recipe_runs_as_written(standalone: Standalone, tmp_path: Path) -> None:
    """README's cluster recipe, marked not run in the docs tests (it names a
    cluster's hosts), run here on the test's cluster: the command as the
    README writes it (the same as ripple-export(1)'s), with only the
    site's values replaced: the master's URL, the executors' memory, the
    venv's python, /shared.
    What the test adds goes in spark-defaults.conf (SPARK_CONF_DIR), as a
    site would set it: small memory, and this checkout on the executors'
    path (see the module's docstring)."""
    text = cluster_recipe(ds.readme_blocks())
    assert text == cluster_recipe(ds.man_blocks(ds.MAN / "ripple-export.1"))
    for name in ("spark://spark-master:7077", "spark.executor.memory=8g", "/opt/ripple/bin/python", "/shared/"):
        assert name in text
    shared = tmp_path / "shared"
    shutil.copytree(ROOT / "examples", shared / "captures")
    (shared / "tables").mkdir()  # the site's
    text = (
        text.replace("spark://spark-master:7077", standalone.master)
        .replace("spark.executor.memory=8g", "spark.executor.memory=512m")  # the test's workers have 1g
        .replace("/opt/ripple/bin/python", sys.executable)
        .replace("/shared/", f"{shared}/")
    )
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(f"spark.executorEnv.PYTHONPATH {ROOT}\nspark.driver.memory 512m\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "ripple").write_text(f'#!/bin/sh\nexec {sys.executable} -m ripple_cli "$@"\n')
    (bindir / "ripple").chmod(0o755)
    env = cluster_env()
    env.update(PATH=f"{bindir}:{env['PATH']}", PYTHONPATH=str(ROOT), SPARK_CONF_DIR=str(conf))
    done = subprocess.run(["bash", "-c", text], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert " messages, " in done.stderr and " -> " in done.stderr, done.stderr
    out = shared / "tables" / "2024-06-20"
    assert table_rows(out) == in_process_rows([str(shared / "captures")], 64 << 20)


@pytest.mark.parametrize("ctrl_c", [1, 2])
def test_a_cluster_too_small_for_the_executors_is_said(standalone: Standalone, tmp_path: Path, ctrl_c: int) -> None:
    """Executors bigger than any worker (the README's 8g on workers of 1g):
    Spark waits for resources, and said so only in the JVM's log, so the
    run waited in silence.  Spark's words now reach stderr once, even with
    -q; Ctrl-C, once or twice, is one more line and exit status 130 (a
    second one printed py4j's traceback), and the JVM's log goes."""
    import signal
    import threading
    import time

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = cluster_env()
    env["PYTHONPATH"] = str(ROOT)
    env["TMPDIR"] = str(tmp)  # where the JVM's log is written
    out = tmp_path / "out"
    args = [*cluster_args(standalone), "--conf", "spark.executor.memory=8g", "--conf", "spark.starvation.timeout=1s"]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ripple_cli",
            "export",
            "-q",
            *args,
            str(ROOT / "examples" / "demo.ripple"),
            "-o",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    lines: list[str] = []
    assert proc.stderr is not None
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr or ()), daemon=True)
    reader.start()
    deadline = time.monotonic() + 300
    while not lines:
        assert proc.poll() is None and time.monotonic() < deadline, lines
        time.sleep(0.05)
    for _ in range(ctrl_c):
        proc.send_signal(signal.SIGINT)
    assert proc.wait(120) == 130
    reader.join(30)
    assert lines == [
        "ripple: export: spark is waiting for executors: Initial job has not accepted any resources; "
        "check your cluster UI to ensure that workers are registered and have sufficient resources\n",
        f"ripple: export: interrupted: {out} removed\n",
    ]
    assert not out.exists()
    assert list(tmp.glob("ripple-spark-*.log")) == []
