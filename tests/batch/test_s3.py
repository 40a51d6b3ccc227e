"""Inputs and outputs by URL against a real S3-compatible server (moto's
server mode on 127.0.0.1: tests/batch/s3server.py), reached through the
standard AWS variables only: a prefix of raw streams and captures (a
rotated pair among them), a glob, s3a:// as s3://, file://; the table
written to the bucket; the rows and the figures those of the same files
read locally, in-process, on local Spark and on the standalone cluster;
the typed tables of `export --tables` written to the bucket as they are
to a local directory."""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from ripple_cli.batch.rows import COLUMN_NAMES
from ripple_cli.batch.tablefiles import finish_tables
from tests.batch.s3server import S3Server, start_s3
from tests.batch.standalone import Standalone
from tests.batch.test_cluster import cluster_args, ripple
from tests.batch.test_spark_export import _sorted, in_process_rows, table_rows, text_table_rows
from tests.batch.test_typed_tables import DEMO_TABLES, EXAMPLES, SIBLING_CAPTURES
from tests.batch.test_without_spark import HIDE
from tests.batch.typedkit import export_tables
from tests.conftest import ROOT, run_cli
from tests.docs import doctest_shell as ds_docs

Row = tuple[object, ...]
FILE = COLUMN_NAMES.index("capture_file")


@pytest.fixture(scope="module")
def s3_inputs(s3: S3Server, mixed_dir: Path) -> str:
    """mixed_dir (raw streams, a pcap, a connection rotated over two pcaps,
    a hidden file) under s3://captures/day1/."""
    s3.upload(mixed_dir, "captures/day1")
    s3.bucket("tables")
    return "captures/day1"


@pytest.fixture
def aws(s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The driver's environment: the standard AWS variables, nothing else."""
    for k, v in s3.env.items():
        monkeypatch.setenv(k, v)
    yield s3.env


def renamed(rows: list[Row], local: Path, url: str) -> list[Row]:
    """Local rows with capture_file as the URL of the same file."""
    return _sorted(tuple(url + str(v)[len(str(local)) :] if i == FILE else v for i, v in enumerate(r)) for r in rows)


def s3_table(s3: S3Server, where: str, fmt: str = "parquet") -> list[Row]:
    """The table under bucket/prefix `where`, fetched, read as a local one."""
    local = Path(tempfile.mkdtemp(prefix="s3-table-"))
    (local / "t").mkdir()
    try:
        pafs.copy_files(
            where, str(local / "t"), source_filesystem=s3.fs(), destination_filesystem=pafs.LocalFileSystem()
        )
        return table_rows(local / "t") if fmt == "parquet" else text_table_rows(local / "t", fmt)
    finally:
        shutil.rmtree(local)


def test_export_from_s3_to_s3_on_local_spark(
    spark: object, s3: S3Server, s3_inputs: str, mixed_dir: Path, aws: dict[str, str]
) -> None:
    res = run_cli(["export", "-q", "--split-size", "8192", f"s3://{s3_inputs}/", "-o", "s3://tables/local2"])
    assert res.code == 0, res.stderr
    assert res.stderr == ""
    expected = renamed(in_process_rows([str(mixed_dir)], 8192), mixed_dir, f"s3://{s3_inputs}")
    assert len(expected) == 1202
    assert s3_table(s3, "tables/local2") == expected
    # The hidden file is skipped, as in a local directory.
    assert not any(".hidden" in str(r[FILE]) for r in expected)


def test_s3a_glob_and_a_rotated_set(
    spark: object, s3: S3Server, s3_inputs: str, mixed_dir: Path, aws: dict[str, str]
) -> None:
    """s3a:// is s3://; a glob of the rotated pair reassembles the connection
    across the two files as the local glob does."""
    url = f"s3a://{s3_inputs}/caps/rot-*.pcap"
    res = run_cli(["export", "-q", "-F", "jsonl", url, "-o", "s3a://tables/rotated"])
    assert res.code == 0, res.stderr
    local = in_process_rows([str(mixed_dir / "caps" / "rot-*.pcap")], 64 << 20)
    assert len(local) == 301
    expected = renamed(local, mixed_dir, f"s3a://{s3_inputs}")
    assert s3_table(s3, "tables/rotated", "jsonl") == expected


def _without_pyspark(s3: S3Server, args: list[str]) -> subprocess.CompletedProcess[str]:
    """ripple run in-process (PySpark hidden), the S3 server's settings in its environment."""
    code = HIDE.format(hidden=("pyspark",))
    env = {**_clean_env(), **s3.env}
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600
    )


def test_export_in_process_without_pyspark(s3: S3Server, s3_inputs: str, mixed_dir: Path, tmp_path: Path) -> None:
    """Without PySpark the in-process run reads and writes by URL too (csv)."""
    args = ["export", "-F", "csv", "--split-size", "8192", f"s3://{s3_inputs}", "-o", "s3://tables/inproc"]
    done = _without_pyspark(s3, args)
    assert done.returncode == 0, done.stderr
    assert "1,198 messages, 4 problems -> s3://tables/inproc (csv; in-process, without Spark)" in done.stderr
    expected = renamed(in_process_rows([str(mixed_dir)], 8192), mixed_dir, f"s3://{s3_inputs}")
    assert s3_table(s3, "tables/inproc", "csv") == expected


def test_stats_from_s3_same_as_local(
    spark: object,
    s3_inputs: str,
    mixed_dir: Path,
    aws: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The figures from the bucket are those of the same files on disk."""
    here = tmp_path / "here"
    shutil.copytree(mixed_dir, here / "captures" / "day1")
    res = run_cli(["stats", "-q", "-F", "json", f"s3://{s3_inputs}"])
    assert res.code == 0, res.stderr
    monkeypatch.chdir(here)
    local = run_cli(["stats", "-q", "-F", "json", "captures/day1"])
    assert local.code == 0, local.stderr
    assert json.loads(res.stdout) == json.loads(local.stdout)


def test_file_urls(spark: object, mixed_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = run_cli(["export", "-q", "--split-size", "8192", f"file://{mixed_dir}", "-o", f"file://{out}"])
    assert res.code == 0, res.stderr
    got = table_rows(out)
    assert got == renamed(in_process_rows([str(mixed_dir)], 8192), mixed_dir, f"file://{mixed_dir}")


# ------------------------------------------------------------------ export --tables


def typed_files(fs: pafs.FileSystem, root: str) -> dict[str, tuple[list[str], list[pa.Schema], list[dict[str, Any]]]]:
    """The typed tables under OUT (`root` on `fs`: a bucket's prefix or a
    local directory), read back with pyarrow through `fs`: by table
    directory (ripple/vwap, lumberjack/Json ...), its part files' names,
    their schemas, and its rows in a fixed order."""
    names: dict[str, list[str]] = defaultdict(list)
    for i in fs.get_file_info(pafs.FileSelector(root, recursive=True)):
        rel = i.path[len(root) :].strip("/")
        if i.type == pafs.FileType.File and not rel.startswith("messages/"):
            table, name = rel.rsplit("/", 1)
            names[table].append(name)
    return {
        table: (
            sorted(files),
            [pq.read_schema(f"{root}/{table}/{n}", filesystem=fs) for n in sorted(files)],
            sorted(pq.read_table(f"{root}/{table}", filesystem=fs).to_pylist(), key=repr),
        )
        for table, files in sorted(names.items())
    }


def typed_inputs(mixed_dir: Path) -> list[str]:
    """Raw streams and captures, a rotated pair among them, and one capture
    per sibling protocol: every kind of typed table, several part files each."""
    return [str(mixed_dir), *(str(EXAMPLES / name) for name in SIBLING_CAPTURES)]


def check_typed(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert sorted(got) == sorted(want)
    assert {t.split("/")[0] for t in got} == {"ripple", "lumberjack", "rcp", "pravega", "reactive-streams"}
    for table, (names, schemas, rows) in got.items():
        assert all(n.startswith("part-") for n in names), table  # nothing hidden, nothing staged
        assert (names, schemas) == want[table][:2], table
        assert rows == want[table][2], table


def test_typed_tables_to_s3_in_process(s3: S3Server, mixed_dir: Path, tmp_path: Path) -> None:
    """export --tables to a bucket's prefix writes what it writes to a local
    directory: the same part files, the same schemas (the sibling tables'
    made to agree through S3), the same rows."""
    args = ["export", "--tables", "--split-size", "8192", *typed_inputs(mixed_dir)]
    local = tmp_path / "local"
    here = _without_pyspark(s3, [*args, "-o", str(local)])
    assert here.returncode == 0, here.stderr
    s3.bucket("tables")
    there = _without_pyspark(s3, [*args, "-o", "s3://tables/typed/inproc"])
    assert there.returncode == 0, there.stderr
    assert "-> s3://tables/typed/inproc (parquet, partitioned by event_hour, with typed tables; in-process" in (
        there.stderr
    )
    want = typed_files(pafs.LocalFileSystem(), str(local))
    check_typed(typed_files(s3.fs(), "tables/typed/inproc"), want)
    assert s3_table(s3, "tables/typed/inproc/messages") == table_rows(local / "messages")


def test_typed_tables_to_s3_on_local_spark(spark: object, s3: S3Server, mixed_dir: Path, aws: dict[str, str]) -> None:
    """The executors write their own typed part files to the bucket, and
    the driver makes the sibling tables' agree there: the tables the
    in-process run writes to a local directory."""
    inputs = typed_inputs(mixed_dir)
    s3.bucket("tables")
    res = run_cli(["export", "-q", "--tables", "--split-size", "8192", *inputs, "-o", "s3://tables/typed/spark"])
    assert res.code == 0, res.stderr
    local = Path(tempfile.mkdtemp(prefix="typed-local-"))
    try:
        export_tables(inputs, local, 8192)
        finish_tables(str(local))
        want = typed_files(pafs.LocalFileSystem(), str(local))
    finally:
        shutil.rmtree(local)
    check_typed(typed_files(s3.fs(), "tables/typed/spark"), want)
    assert s3_table(s3, "tables/typed/spark/messages") == in_process_rows(inputs, 8192)


def test_typed_tables_overwrite_an_s3_out(s3: S3Server, tmp_path: Path) -> None:
    """--overwrite removes the old OUT's objects through S3 (the sibling
    tables of a first run with captures are gone); without it, refused."""
    url = "s3://tables/typed/again"
    s3.bucket("tables")
    first = _without_pyspark(
        s3, ["export", "-q", "--tables", *(str(EXAMPLES / n) for n in SIBLING_CAPTURES), "-o", url]
    )
    assert first.returncode == 0, first.stderr
    assert "lumberjack/Json" in typed_files(s3.fs(), "tables/typed/again")
    demo = str(EXAMPLES / "demo.ripple")
    refused = _without_pyspark(s3, ["export", "-q", "--tables", demo, "-o", url])
    assert (refused.returncode, refused.stderr) == (3, f"ripple: {url}: already exists (--overwrite replaces it)\n")
    again = _without_pyspark(s3, ["export", "-q", "--tables", "--overwrite", demo, "-o", url])
    assert again.returncode == 0, again.stderr
    local = tmp_path / "local"
    here = _without_pyspark(s3, ["export", "-q", "--tables", demo, "-o", str(local)])
    assert here.returncode == 0, here.stderr

    def files(fs: pafs.FileSystem, root: str) -> list[str]:
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=True))
        return sorted(i.path[len(root) :].strip("/") for i in infos if i.type == pafs.FileType.File)

    assert files(s3.fs(), "tables/typed/again") == files(pafs.LocalFileSystem(), str(local))
    assert typed_files(s3.fs(), "tables/typed/again") == typed_files(pafs.LocalFileSystem(), str(local))
    assert sorted(typed_files(s3.fs(), "tables/typed/again")) == [f"ripple/{t}" for t in DEMO_TABLES]


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["stats", "s3://no-such-bucket/x/"], 3, "s3://no-such-bucket/x/: no such bucket no-such-bucket"),
        (["stats", "s3://captures/day9/"], 3, "s3://captures/day9/: no such file or directory"),
        (["stats", "s3://captures/day1/*.nothing"], 3, "s3://captures/day1/*.nothing: no file matches"),
        (
            ["export", "s3://captures/day1/demo.ripple", "-o", "s3://no-such-bucket/t"],
            3,
            "s3://no-such-bucket/t: no such bucket no-such-bucket",
        ),
        (
            ["stats", "ftp://host/x"],
            2,
            "ftp://host/x: unknown scheme ftp:// (known: s3://, s3a://, gs://, gcs://, hdfs://, file://, "
            "and local paths)",
        ),
        (["stats", "s3:///x"], 2, "s3:///x: no bucket after s3:// (s3://BUCKET/...)"),
        (["export", "examples/demo.ripple", "-o", "gs://"], 2, "gs://: no bucket after gs:// (gs://BUCKET/...)"),
    ],
)
def test_errors_are_one_line(s3_inputs: str, aws: dict[str, str], args: list[str], code: int, says: str) -> None:
    res = run_cli(args)
    assert res.code == code, res.stderr
    assert res.stderr == f"ripple: {says}\n"


def test_refused_credentials_are_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that checks credentials (and knows none): exit 3, one line."""
    server = start_s3(tmp_path / "moto.log", checks_credentials=True)
    try:
        for k, v in server.env.items():
            monkeypatch.setenv(k, v)
        res = run_cli(["stats", "s3://captures/day1/"])
        assert res.code == 3, res.stderr
        assert res.stderr == "ripple: s3://captures/day1/: access denied (check the credentials)\n"
    finally:
        server.stop()


def test_export_and_stats_from_s3_on_the_standalone_cluster(
    standalone: Standalone, s3: S3Server, s3_inputs: str, mixed_dir: Path, tmp_path: Path
) -> None:
    """The executors read their byte ranges from the bucket and write their
    part files to it: nothing shared on disk.  Their AWS settings come the
    Spark way (spark.executorEnv.*), the driver's from its environment."""
    executor_env = [a for k, v in s3.env.items() for a in ("--conf", f"spark.executorEnv.{k}={v}")]
    args = [*cluster_args(standalone), *executor_env]
    done = _ripple_with(
        s3, ["export", "-q", "--split-size", "8192", *args, f"s3://{s3_inputs}/", "-o", "s3://tables/cluster"], tmp_path
    )
    assert done.returncode == 0, done.stderr
    expected = renamed(in_process_rows([str(mixed_dir)], 8192), mixed_dir, f"s3://{s3_inputs}")
    assert s3_table(s3, "tables/cluster") == expected
    stats = _ripple_with(s3, ["stats", "-q", "-F", "json", *args, f"s3://{s3_inputs}/"], tmp_path)
    assert stats.returncode == 0, stats.stderr
    here = run_cli(["stats", "-q", "-F", "json", str(mixed_dir)])
    assert here.code == 0
    assert json.loads(stats.stdout) == json.loads(here.stdout)


def _ripple_with(s3: S3Server, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    saved = {k: os.environ.get(k) for k in s3.env}
    os.environ.update(s3.env)
    try:
        return ripple(args, cwd)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k)
            else:
                os.environ[k] = v


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}


def s3_recipe(blocks: list[ds_docs.Block]) -> str:
    [block] = [b for b in blocks if b.not_run and "S3" in b.not_run]
    return "\n".join(c.text for c in block.commands)


def test_the_docs_s3_recipe_runs_as_written(s3: S3Server, mixed_dir: Path, tmp_path: Path) -> None:
    """README's object-storage recipe, marked not run in the docs tests (it
    names a site's endpoint), run here against the test's S3 server: the
    commands as written, with only the endpoint and region replaced; the
    credentials come from the environment, as the README says."""
    text = s3_recipe(ds_docs.readme_blocks())
    for name in ("https://s3.example.internal", "eu-west-1"):
        assert name in text
    s3.upload(mixed_dir / "caps", "captures/2024-06-20")
    s3.bucket("tables")
    text = text.replace("https://s3.example.internal", s3.endpoint).replace("eu-west-1", "us-east-1")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "ripple").write_text(f'#!/bin/sh\nexec {sys.executable} -m ripple_cli "$@"\n')
    (bindir / "ripple").chmod(0o755)
    env = {**_clean_env(), "PATH": f"{bindir}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    env.update(AWS_ACCESS_KEY_ID=s3.env["AWS_ACCESS_KEY_ID"], AWS_SECRET_ACCESS_KEY=s3.env["AWS_SECRET_ACCESS_KEY"])
    done = subprocess.run(["bash", "-ec", text], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    url = "s3://captures/2024-06-20"
    local = in_process_rows([str(mixed_dir / "caps" / "*.pcap")], 64 << 20)
    assert s3_table(s3, "tables/2024-06-20") == renamed(local, mixed_dir / "caps", url)
    here = run_cli(["stats", "-q", "-F", "json", str(mixed_dir / "caps")])
    assert json.loads((tmp_path / "stats.json").read_text()) == json.loads(here.stdout)


def test_a_failed_task_leaves_no_part_file_behind(s3: S3Server, aws: dict[str, str], monkeypatch: Any) -> None:
    """A task that fails mid-way takes back the part files it had begun: on
    S3 an upload cut short still completes when its writer is closed, and
    would leave a Parquet file without its footer under its final name."""
    from ripple_cli.batch import tablefiles
    from ripple_cli.batch.inputs import discover
    from ripple_cli.batch.local import plan_local
    from ripple_cli.batch.tables import Layout
    from ripple_cli.batch.tasks import Settings, task_rows, typed_rows

    monkeypatch.setattr(tablefiles, "BATCH_ROWS", 4)  # part files begun after a few rows
    s3.bucket("tables")
    plan = plan_local(discover([str(EXAMPLES / "demo.ripple")]), Settings(cwd=os.getcwd()))
    out = tablefiles.TypedOut("s3://tables/typed/failed", Layout(plan.settings.schemas))
    typed = out.task(0)
    rows = typed_rows(task_rows(plan.tasks[0], plan.settings, typed), typed)
    for _ in range(100):
        next(rows)
    assert typed.files  # writers open: objects being uploaded
    with pytest.raises(RuntimeError):
        rows.throw(RuntimeError("the executor died"))
    del rows, typed
    gc.collect()  # a writer left open is closed when collected, publishing its upload
    found = s3.fs().get_file_info(pafs.FileSelector("tables/typed/failed", recursive=True, allow_not_found=True))
    assert [i.path for i in found if i.type == pafs.FileType.File] == []


@pytest.mark.parametrize(
    ("inputs", "out"),
    [
        (["s3://victim/day/raw/demo.ripple"], "s3://victim/day"),
        (["s3://victim/day/raw/"], "s3a://victim/day/raw"),
        (["s3://victim/day/raw/*.ripple"], "s3://victim/day/raw/table"),
    ],
)
def test_overwrite_never_removes_an_input_object(s3: S3Server, tmp_path: Path, inputs: list[str], out: str) -> None:
    """An OUT that is, holds or lies under an input's key is refused (exit
    2) and nothing is removed: it used to delete the inputs, then fail."""
    src = tmp_path / "raw"
    src.mkdir()
    (src / "demo.ripple").write_bytes((EXAMPLES / "demo.ripple").read_bytes())
    s3.upload(src, "victim/day/raw")
    r = _without_pyspark(s3, ["export", "-q", "--overwrite", *inputs, "-o", out])
    assert r.returncode == 2 and "--overwrite:" in r.stderr and "write the table elsewhere" in r.stderr, r.stderr
    with s3.fs().open_input_file("victim/day/raw/demo.ripple") as f:
        assert f.read() == (EXAMPLES / "demo.ripple").read_bytes()


def test_no_credentials_at_all_is_one_line_that_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that checks credentials, asked with none (no variables, an
    empty HOME): it answers with an error status and no body (moto 500,
    S3 403), which pyarrow words "No response body."; the line says what
    it can."""
    server = start_s3(tmp_path / "moto.log", checks_credentials=True)
    try:
        for k in [k for k in os.environ if k.startswith("AWS_")]:
            monkeypatch.delenv(k)
        monkeypatch.setenv("HOME", str(tmp_path))
        monkeypatch.setenv("AWS_ENDPOINT_URL", server.env["AWS_ENDPOINT_URL"])
        monkeypatch.setenv("AWS_REGION", server.env.get("AWS_REGION", "us-east-1"))
        monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        res = run_cli(["stats", "s3://captures/day1/"])
        assert res.code == 3
        assert res.stderr.startswith("ripple: s3://captures/day1/: the endpoint refused the request (HTTP "), res.stderr
        assert res.stderr.endswith(
            ", no reason given); no credentials were found (AWS_ACCESS_KEY_ID, AWS_PROFILE, ~/.aws)\n"
        ), res.stderr
    finally:
        server.stop()
