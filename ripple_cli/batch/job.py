"""The Spark side of the batch pipeline: the only module that imports
pyspark (commands import it only when they run).

One run is two jobs over the same tasks (plan.py): the scan (first pass:
Handshakes and capture connections, collected to the driver), then the
decode, whose rows come back to the JVM as Arrow batches (mapInArrow) and
are written or aggregated by Spark.  Rotated capture connections take a
third path: their packets are shuffled by connection and reassembled in
order (tasks.rotated_rows).
"""

from __future__ import annotations

import contextlib
import datetime
import os
import pickle
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from typing import TYPE_CHECKING, Any

from ripple_cli.codec.schema import Schema
from ripple_cli.errors import EXIT_UNREADABLE, RippleError, UsageProblem
from ripple_cli.sources.urls import is_url
from ripple_cli.terminal.interrupts import take_interrupts

from .inputs import InputFile
from .plan import Plan, decode_plan, scan_tasks
from .rows import COLUMNS, PROBLEM, TIMESTAMPS, Row
from .scan import ScanResult, scan_task
from .siblingcount import Tally
from .stats import STATS_COLUMNS, Record, StatsOptions, Timelines, report_and_timelines
from .tasks import RotatedPart, Settings, Task, rotated_frames, rotated_rows, task_rows, typed_rows

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import SparkContext
    from pyspark.sql import DataFrame, SparkSession
    from rich.progress import Progress

    from .tablefiles import TypedOut


class SparkFailed(RippleError):
    """Spark could not start, or the job failed (an executor lost, a
    cluster unreachable): the run could not read its inputs."""

    exit_code = EXIT_UNREADABLE  # as ripple-export(1) documents


def spark_types() -> Any:
    from pyspark.sql import types as T

    names = {
        "string": T.StringType(),
        "int32": T.IntegerType(),
        "int64": T.LongType(),
        "bool": T.BooleanType(),
        "timestamp": T.TimestampType(),
    }
    return T.StructType([T.StructField(name, names[t], True) for name, t in COLUMNS])


def parse_conf(items: Sequence[str]) -> list[tuple[str, str]]:
    out = []
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UsageProblem(f"--conf {item!r}: expected KEY=VALUE (e.g. spark.executor.memory=4g)")
        out.append((key.strip(), value))
    return out


class CtrlC:
    """Ctrl-C while Spark runs: the jobs are cancelled from a thread of its
    own, and the job's failure becomes KeyboardInterrupt (spark_errors).
    PySpark's own handler cancels from inside the signal handler, on the
    py4j connection the main thread is waiting on: py4j then fails with
    "reentrant call" tracebacks, and the run with exit status 3, not 130.
    A second Ctrl-C is KeyboardInterrupt at once."""

    def __init__(self, context: SparkContext, restore: Callable[[], None] = lambda: None) -> None:
        """Installed over PySpark's handler as soon as the context is made;
        `restore` puts back what was there before the session started."""
        self.context = context
        self.fired = False
        self.done = False  # the run has taken the interruption (or stopped): no more to do
        self._restore: Callable[[], None] | None = restore
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, self._on_sigint)

    def _on_sigint(self, signum: int, frame: object) -> None:
        if self.fired:
            raise KeyboardInterrupt
        self.fired = True
        threading.Thread(target=self._cancel, name="ripple-ctrl-c", daemon=True).start()

    def _cancel(self) -> None:
        # Again and again until the run takes it: a job the driver starts
        # after the first cancel (the next pass) is cancelled in its turn.
        while not self.done:
            with contextlib.suppress(Exception):  # the JVM may be going away
                self.context.cancelAllJobs()
            time.sleep(0.2)

    def restore(self) -> None:
        self.done = True
        if self._restore is not None:
            self._restore()
            self._restore = None


class Session:
    """A SparkSession, and whether this run started it (and so stops it)."""

    def __init__(self, spark: SparkSession, owned: bool, log_path: str | None, ctrl_c: CtrlC | None = None) -> None:
        self.spark = spark
        self.owned = owned
        self.log_path = log_path  # where the JVM's own output went
        self.ctrl_c = ctrl_c

    def stop(self, keep_log: bool = False) -> None:
        if self.ctrl_c is not None:
            self.ctrl_c.restore()
        if self.owned:
            self.spark.stop()
            if self.log_path is not None and not keep_log:
                with contextlib.suppress(OSError):
                    os.remove(self.log_path)


DEFAULT_MASTER = "local[*]"

# Given to the spark-submit that starts the JVM: read when it starts (the
# driver's memory), or set by spark-submit itself (the application's name).
_LAUNCH_DEFAULTS = {"spark.app.name": "ripple"}
_LAUNCH_DEFAULTS_LOCAL = {"spark.driver.memory": "2g"}
# Ripple's defaults, below anything the user or spark-submit set.
_DEFAULTS = {
    "spark.ui.showConsoleProgress": "false",  # ripple draws its own progress
    "spark.sql.session.timeZone": "UTC",
}
_DEFAULTS_LOCAL = {"spark.ui.enabled": "false"}


def start_session(master: str | None, conf: Sequence[tuple[str, str]]) -> Session:
    """A SparkSession on `master` with ripple's defaults, then the user's
    --conf.

    A session already running in this process (a test's, a notebook's) is
    used as it is.  Under spark-submit (which runs ripple's driver with its
    own JVM), what spark-submit was given wins over ripple's defaults, and
    so does Spark's own configuration (spark-defaults.conf, MASTER) when
    ripple starts the JVM itself: with no --master, Spark picks the master
    as spark-submit would, local[*] if nothing names one.  The JVM's
    console output goes to a log file, named when a job fails: ripple
    prints one line per error, never a JVM stack trace."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    active = SparkContext._active_spark_context
    if active is not None:
        return Session(SparkSession(active), owned=False, log_path=None)
    given = dict(conf)
    if master is not None:
        given["spark.master"] = master
    _check_driver_python(given.get("spark.pyspark.driver.python"))
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started this driver
    launch: dict[str, str] = {}
    if not under_submit:
        _require_java()
        launch.update(_LAUNCH_DEFAULTS)
        if _is_local(given.get("spark.master", os.environ.get("MASTER", DEFAULT_MASTER))):
            launch.update(_LAUNCH_DEFAULTS_LOCAL)
        log_conf = resources.files("ripple_cli.batch") / "log4j2.properties"
        launch["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{log_conf}"
    launch_conf = SparkConf(loadDefaults=False)
    for key, value in {**launch, **given}.items():
        launch_conf.set(key, value)
    where = master or "Spark's default master"
    log_path: str | None = None
    # Ctrl-C while the JVM starts (ten seconds and more) is KeyboardInterrupt
    # (even when SIGINT came ignored, as a script's background job has it):
    # what was started is stopped, and the command says it was interrupted.
    restore = take_interrupts()
    _quiet_python_logging()
    gateway: Any = None
    try:
        if under_submit:
            gateway = launch_gateway()  # type: ignore[no-untyped-call]
        else:
            fd, log_path = tempfile.mkstemp(prefix="ripple-spark-", suffix=".log")
            with os.fdopen(fd, "wb") as log:
                gateway = launch_gateway(  # type: ignore[no-untyped-call]
                    launch_conf, popen_kwargs={"stdout": log, "stderr": log}
                )
        # What the JVM was started with: spark-submit's arguments, its
        # spark-defaults.conf, and what ripple gave it.
        spark_conf = SparkConf(_jvm=gateway.jvm)
        for key, value in given.items():
            spark_conf.set(key, value)
        if not spark_conf.contains("spark.master"):
            spark_conf.set("spark.master", DEFAULT_MASTER)
        where = spark_conf.get("spark.master") or where
        defaults = {**_DEFAULTS, **(_DEFAULTS_LOCAL if _is_local(where) else {})}
        for key, value in defaults.items():
            if not spark_conf.contains(key):
                spark_conf.set(key, value)
        _python_for_workers(spark_conf, local=_is_local(where))
        sc = SparkContext(conf=spark_conf, gateway=gateway)
        # At once over the handler SparkContext has just installed (which
        # cancels from inside the handler: see CtrlC).
        ctrl_c = CtrlC(sc, restore)
        sc.setLogLevel("ERROR")
        # (a master that never answers stops the context here, a minute on)
        spark = SparkSession(sc)
    except KeyboardInterrupt:
        _abandon(gateway)
        restore()
        if log_path is not None:
            with contextlib.suppress(OSError):
                os.remove(log_path)
        raise
    except RippleError:
        restore()
        raise
    except Exception as e:  # no Java, a bad master URL, a cluster that does not answer
        restore()
        cause = (_jvm_cause(log_path) if log_path else None) or _first_line(e)
        named = f" (the JVM's log: {log_path})" if log_path else ""
        raise SparkFailed(f"spark: cannot start on {where}: {cause}{named}") from None
    return Session(spark, owned=True, log_path=log_path, ctrl_c=ctrl_c)


def _quiet_python_logging() -> None:
    """py4j logs a second Ctrl-C (KeyboardInterrupt while it waits on the
    JVM) with a traceback through Python's root logger, which with no
    handler installs one on stderr.  ripple says what happened in its own
    line (`interrupted`, or the job's error): a handler that drops the
    records keeps the root logger from printing them."""
    import logging

    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())


def _abandon(gateway: Any) -> None:
    """A start interrupted: the JVM goes now (it would go when this process
    ends, its stdin closed), and PySpark forgets it, so that nothing in this
    process uses a gateway half set up."""
    from pyspark import SparkContext

    proc = getattr(gateway, "proc", None)
    if proc is not None:
        with contextlib.suppress(OSError):
            proc.kill()
    elif gateway is None:
        # Interrupted within launch_gateway, which keeps its Popen to
        # itself: the JVM is the child running SparkSubmit (spark-class
        # execs it).  It does not read its stdin before it is up: left, it
        # would outlive this process.
        _kill_spark_submit_children()
    with contextlib.suppress(Exception):
        gateway.shutdown()
    SparkContext._gateway = None
    SparkContext._jvm = None
    SparkContext._active_spark_context = None


def _kill_spark_submit_children() -> None:
    me = os.getpid()
    try:
        children = open(f"/proc/{me}/task/{me}/children").read().split()  # noqa: SIM115 - a proc file
        with open(f"/proc/{me}/cmdline", "rb") as f:
            mine = f.read()
    except OSError:
        return  # not Linux: the JVM goes when it finds its stdin closed
    for pid in children:
        with contextlib.suppress(OSError, ValueError), open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read()
            # Forked and not yet the spark-submit script (its command line is
            # still this process's, or none), the script, spark-class it
            # execs, or the JVM spark-class execs.
            launcher = b"org.apache.spark.deploy.SparkSubmit" in cmdline or b"spark-submit" in cmdline
            if launcher or cmdline in (mine, b""):
                os.kill(int(pid), signal.SIGKILL)


def _is_local(master: str) -> bool:
    return master == "local" or master.startswith(("local[", "local-cluster["))


def _python_for_workers(conf: Any, local: bool) -> None:
    """The Python that Spark's Python workers run, set before the context
    starts.  PySpark started from a Python process (not from spark-submit)
    takes it from PYSPARK_PYTHON only, never from spark.pyspark.python:
    ripple sets the variable from the setting.  Embedded Spark's workers
    run this interpreter, the one that has ripple; a cluster's run the
    setting's (README, "On a cluster"), or Spark's default python3."""
    python = conf.get("spark.pyspark.python")
    driver = conf.get("spark.pyspark.driver.python")
    if driver:
        os.environ["PYSPARK_DRIVER_PYTHON"] = driver
    if python:
        os.environ["PYSPARK_PYTHON"] = python
    elif local:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def _check_driver_python(driver: str | None) -> None:
    """spark.pyspark.driver.python names the driver's Python: the driver is
    this process, which cannot switch interpreters, so it must be this one."""
    if driver and not _same_interpreter(driver, sys.executable):
        raise UsageProblem(
            f"--conf spark.pyspark.driver.python={driver}: ripple's driver is the Python that runs "
            f"ripple ({sys.executable}): run ripple with that interpreter"
        )


def _same_interpreter(a: str, b: str) -> bool:
    """Two names of one interpreter: the same file, in the same directory
    (a venv's python is a link to the system's, with other packages)."""
    found = shutil.which(a)
    if found is None:
        return False
    found, b = os.path.abspath(found), os.path.abspath(b)
    try:
        return os.path.dirname(found) == os.path.dirname(b) and os.path.samefile(found, b)
    except OSError:
        return False


def _require_java() -> None:
    """Spark's driver is a JVM, on a cluster too: say so plainly when there
    is no Java to start it with (PySpark's own error names a bash line)."""
    home = os.environ.get("JAVA_HOME")
    if home:
        if not os.access(os.path.join(home, "bin", "java"), os.X_OK):
            raise SparkFailed(f"spark: JAVA_HOME={home} has no bin/java: point it at a Java 17 or 21")
    elif shutil.which("java") is None:
        raise SparkFailed("spark: no java on the PATH: install Java 17 or 21 (make system-deps does), or set JAVA_HOME")


# A JVM exception's message in its log: `... org.apache.spark.SparkException: Master must ...`,
# or the reason Spark gives up: `Application has been killed. Reason: All masters are unresponsive! Giving up.`
_JVM_EXCEPTION = re.compile(
    r"(?:(?:^|\s)(?:[\w$]+\.)+[\w$]*(?:Exception|Error)|Application has been killed\. Reason): (.+)"
)


def _jvm_cause(log_path: str) -> str | None:
    """Why the JVM gave up, from its log: when it exits before PySpark can
    talk to it, PySpark only says that it exited."""
    try:
        with open(log_path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = _JVM_EXCEPTION.search(line)
                if m:
                    return m.group(1).strip()[:300]
    except OSError:
        pass
    return None


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0][:300]


@contextmanager
def spark_errors(session: Session) -> Iterator[None]:
    """A failed Spark job as one line, not the JVM's stack trace: an
    executor's own ripple error as it is (the same line and exit status
    as in-process: an input it could not read, say), else the cause the
    executor gave (a Python exception's last line, the JVM's reason)."""
    try:
        yield
    except RippleError:
        raise
    except Exception as e:
        if session.ctrl_c is not None and session.ctrl_c.fired:
            session.ctrl_c.done = True
            raise KeyboardInterrupt from None  # the jobs Ctrl-C cancelled
        if type(e).__module__.startswith(("pyspark", "py4j")):
            text = str(e)
            found = _ripple_error_in(text)
            if found is not None:
                raise found from None
            where = f" (the JVM's log: {session.log_path})" if session.log_path else ""
            raise SparkFailed(f"spark: job failed: {job_cause(text)}{where}") from None
        raise


# The last line of an executor's Python traceback, as Spark quotes it.
_RIPPLE_ERROR = re.compile(r"^ripple_cli\.errors\.(\w+): (.+)$", re.MULTILINE)
_PYTHON_ERROR = re.compile(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception)): (.+)$", re.MULTILINE)
# The task's failure on the line that aborts the stage: `... (TID 0) (host executor 1): java.io.IOException: ...`.
_LOST_TASK = re.compile(r"Lost task [^:]*\): (?:(?:[\w$]+\.)+[\w$]+: )?(.+)$", re.MULTILINE)


def _ripple_error_in(text: str) -> RippleError | None:
    from ripple_cli import errors

    for name, message in _RIPPLE_ERROR.findall(text):
        kind = getattr(errors, name, None)
        if isinstance(kind, type) and issubclass(kind, RippleError):
            return kind(message.strip())
    return None


def job_cause(text: str) -> str:
    """Why a Spark job failed, from py4j's text of it: the task's Python
    exception (its traceback's last line), else the JVM's reason for the
    task, else py4j's first line."""
    if "PythonException" in text and (found := _PYTHON_ERROR.findall(text.split("PythonException", 1)[1])):
        name, message = found[0]
        return f"{name}: {message.strip()}"[:300]
    lost = _LOST_TASK.search(text)
    if lost is not None:
        return lost.group(1).strip()[:300]
    return (text.strip().splitlines() or [""])[0][:300]


# ------------------------------------------------------------------ the two passes


def plan_on_spark(
    spark: SparkSession,
    inputs: Sequence[InputFile],
    settings: Settings,
    split_size: int,
    file_schemas: Sequence[Schema] = (),
) -> Plan:
    tasks = scan_tasks(inputs, split_size)
    sc = spark.sparkContext
    sc.setJobDescription("ripple: scan (Handshakes, capture connections)")
    found: list[tuple[int, ScanResult]] = (
        sc.parallelize(list(enumerate(tasks)), max(1, len(tasks)))
        .map(lambda it: (it[0], scan_task(it[1], settings)))
        .collect()
    )
    scans = [scan for _i, scan in sorted(found, key=lambda f: f[0])]
    return decode_plan(tasks, scans, settings, file_schemas)


class _ByTask:
    """An accumulator of each task's sibling counts under its number: a
    task run again replaces its own (siblingcount.py)."""

    def zero(self, value: dict[int, Tally]) -> dict[int, Tally]:
        return {}

    def addInPlace(self, a: dict[int, Tally], b: dict[int, Tally]) -> dict[int, Tally]:
        a.update(b)
        return a


class Counters:
    """Rows and problems made by the tasks, counted as they go, and with
    `siblings` (stats) each task's sibling protocols' messages (Spark
    accumulators: read them once the job that used the frame is done)."""

    def __init__(self, spark: SparkSession) -> None:
        from pyspark.accumulators import AccumulatorParam

        self.rows = spark.sparkContext.accumulator(0)
        self.problems = spark.sparkContext.accumulator(0)
        param = type("ByTask", (_ByTask, AccumulatorParam), {})()
        self.siblings = spark.sparkContext.accumulator({}, param)

    @property
    def messages(self) -> int:
        return int(self.rows.value - self.problems.value)


def _tasks_frame(spark: SparkSession, plan: Plan) -> DataFrame:
    """The plan's decode tasks, (i, pickled task), one a partition."""
    from pyspark.sql import types as T

    sc = spark.sparkContext
    # One task per partition: parallelize slices a list evenly.
    task_list = [(i, pickle.dumps(t)) for i, t in enumerate(plan.tasks)]
    return spark.createDataFrame(
        sc.parallelize(task_list, max(1, len(plan.tasks))),
        T.StructType([T.StructField("i", T.IntegerType()), T.StructField("task", T.BinaryType())]),
    )


def rows_frame(
    spark: SparkSession, plan: Plan, typed: TypedOut | None = None, siblings: bool = False
) -> tuple[DataFrame, Counters]:
    """The decoded rows as a DataFrame (lazy: nothing runs until it is used).
    With `typed`, each task also writes its typed tables' part files, from
    the executor, as the frame is computed (export runs it once); with
    `siblings`, each counts its sibling protocols' messages
    (Counters.siblings)."""
    settings = plan.settings
    schema = spark_types()
    tasks_df = _tasks_frame(spark, plan)
    counters = Counters(spark)
    n_rows, n_problems, n_siblings = counters.rows, counters.problems, counters.siblings

    def decode(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from ripple_cli.batch.arrow import record_batches

        for batch in batches:
            for i, blob in zip(batch.column("i").to_pylist(), batch.column("task").to_pylist(), strict=True):
                task: Task = pickle.loads(blob)
                t = None if typed is None else typed.task(i)
                tally: Tally | None = {} if siblings else None
                for out in record_batches(typed_rows(task_rows(task, settings, t, tally), t)):
                    n_rows.add(out.num_rows)
                    n_problems.add(out.num_rows - out.column("problem").null_count)
                    yield out
                if tally is not None:
                    n_siblings.add({i: tally})

    frame: DataFrame = tasks_df.mapInArrow(decode, schema)
    if plan.rotated:
        rotated = _rotated_frame(spark, plan.rotated_parts, plan, schema, counters, typed, siblings)
        frame = frame.unionByName(rotated)
    return frame, counters


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _count(counters: Counters, row: Row) -> Row:
    """A rotated connection's row, counted, as createDataFrame takes it (its
    timestamps as datetimes, from the microseconds, exactly)."""
    counters.rows.add(1)
    if row[PROBLEM] is not None:
        counters.problems.add(1)
    values = list(row)
    for i in TIMESTAMPS:
        if values[i] is not None:
            values[i] = _EPOCH + datetime.timedelta(microseconds=values[i])
    return tuple(values)


def _rotated_frame(
    spark: SparkSession,
    parts: list[RotatedPart],
    plan: Plan,
    schema: Any,
    counters: Counters,
    typed: TypedOut | None,
    siblings: bool,
) -> DataFrame:
    """Rotated connections: each file's packets of them, shuffled by
    connection, reassembled in capture order."""
    settings = plan.settings
    groups = plan.rotated
    # Typed part files numbered after the tasks', as in-process (local.plan_rows).
    numbers = {key: len(plan.tasks) + j for j, key in enumerate(groups)}

    n_siblings = counters.siblings

    def connection_rows(key: Any, frames: Any) -> Iterator[Row]:
        t = None if typed is None else typed.task(numbers[key])
        tally: Tally | None = {} if siblings else None
        yield from typed_rows(rotated_rows(groups[key], frames, settings, t, tally), t)
        if tally is not None:
            n_siblings.add({numbers[key]: tally})

    sc = spark.sparkContext
    rows = (
        sc.parallelize(parts, len(parts))
        .flatMap(lambda part: rotated_frames(part, settings))
        .groupByKey(max(1, min(len(groups), sc.defaultParallelism)))
        .flatMap(lambda kv: connection_rows(kv[0], kv[1]))
        .map(lambda row: _count(counters, row))
    )
    return spark.createDataFrame(rows, schema)


# ------------------------------------------------------------------ export


# Timestamps in JSON lines and CSV: RFC 3339, microseconds, UTC (as arrow.TEXT_TIMESTAMP).
TEXT_TIMESTAMP = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'"


def write_rows(frame: DataFrame, out: str, fmt: str, partition_by: str | None, overwrite: bool) -> None:
    """JSON lines or CSV by Spark's writer (which partitions them); Parquet,
    and any format by URL, are written by the tasks (`export_by_tasks`,
    `_write_by_url`)."""
    if is_url(out) and not out.startswith("file:"):
        _write_by_url(frame, out, fmt, partition_by, overwrite)
        return
    assert fmt != "parquet", "Parquet is written by the tasks (export_by_tasks)"
    writer = frame.write.mode("overwrite" if overwrite else "errorifexists")
    if partition_by:
        writer = writer.partitionBy(partition_by)
    writer = writer.option("timeZone", "UTC").option("timestampFormat", TEXT_TIMESTAMP)
    if fmt == "jsonl":
        writer.json(out)
    else:
        # Spark's CSV writer trims every string's leading and trailing
        # white space and control bytes by default: the rows would no longer
        # be the in-process run's (pyarrow's), which keeps them, quoted.
        writer.option("header", True).option("escape", '"').option("ignoreLeadingWhiteSpace", False).option(
            "ignoreTrailingWhiteSpace", False
        ).csv(out)


def _write_by_url(frame: DataFrame, out: str, fmt: str, partition_by: str | None, overwrite: bool) -> None:
    """Each task writes its partition's part files through pyarrow: Spark's
    own writer would need the Hadoop connectors (hadoop-aws, the GCS
    connector) that PySpark does not ship."""
    from ripple_cli.sources.urls import remove

    from .output import check_partitioning

    check_partitioning(fmt, partition_by, out_by_url=out)
    if overwrite:
        remove(out)
    _write_frame(frame, out, fmt, partition_by)


def _write_frame(frame: DataFrame, out: str, fmt: str, partition_by: str | None, prefix: str = "part-") -> None:
    """Each partition of the frame written by its task through pyarrow, as
    part files PREFIX + its number."""
    from .arrow import counted
    from .output import write_table

    def write(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        from pyspark import TaskContext

        context = TaskContext.get()
        part = f"{prefix}{context.partitionId() if context else 0:05d}"
        counts = [0, 0]
        write_table(counted(batches, counts), out, fmt, partition_by, part, empty=False)
        yield pa.RecordBatch.from_pydict({"rows": [counts[0]]})

    frame.mapInArrow(write, "rows long").collect()


def _task_cpus() -> int:
    """The cores Spark gives the running task (spark.task.cpus)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.cpus() if context is not None else 1


def written_by_tasks(out: str, fmt: str) -> bool:
    """Whether `export_by_tasks` writes the table: Parquet anywhere, and
    any format by URL.  JSON lines and CSV to a local directory are Spark's
    writer's (it partitions them, pyarrow's writer here does not)."""
    return fmt == "parquet" or (is_url(out) and not out.startswith("file:"))


def export_by_tasks(
    spark: SparkSession,
    plan: Plan,
    out: str,
    fmt: str,
    partition_by: str | None,
    overwrite: bool,
    typed: TypedOut | None = None,
) -> tuple[int, int]:
    """export's table written where it is decoded: each task writes its own
    part files with pyarrow (output.write_table, as the in-process run
    writes the whole), and hands Spark only its counts.  The rows never
    cross into the JVM and back, which cost Spark more than the decode
    (make bench's export row).  Returns (rows, problems)."""
    from ripple_cli.sources.urls import remove

    from .output import check_partitioning, make_dir

    check_partitioning(fmt, partition_by)
    if overwrite:
        remove(out)
    make_dir(out)  # there even when no task writes a row
    settings = plan.settings

    def decode_and_write(numbered: tuple[int, Task]) -> tuple[int, int]:
        from ripple_cli.batch.arrow import counted, record_batches

        from .output import write_table

        i, task = numbered
        t = None if typed is None else typed.task(i)
        counts = [0, 0]
        # pyarrow's CPU pool only with the cores Spark gave the task
        # (spark.task.cpus): its threads would take those of the executor's
        # other tasks.  The dataset writer still encodes and compresses on
        # its IO thread while this one decodes: measured on the 1 GB bench
        # stream, a local[1] task kept 1.6 cores busy.
        write_table(
            counted(record_batches(typed_rows(task_rows(task, settings, t), t)), counts),
            out,
            fmt,
            partition_by,
            f"part-{i:05d}",
            empty=False,
            threads=_task_cpus() > 1,
        )
        return counts[0], counts[1]

    # An RDD job, not a DataFrame's: nothing here needs Spark SQL, whose
    # first query costs seconds of the JVM's start (make bench's export row).
    sc = spark.sparkContext
    sc.setJobDescription("ripple: decode and write")
    done = sc.parallelize(list(enumerate(plan.tasks)), max(1, len(plan.tasks))).map(decode_and_write).collect()
    rows, problems = sum(r for r, _p in done), sum(p for _r, p in done)
    if plan.rotated:
        counters = Counters(spark)
        rotated = _rotated_frame(spark, plan.rotated_parts, plan, spark_types(), counters, typed, False)
        # Part files named after the tasks' (part-NNNNN by the task's number).
        _write_frame(rotated, out, fmt, partition_by, f"part-{len(plan.tasks):05d}-r")
        rows += counters.rows.value
        problems += counters.problems.value
    return rows, problems


# ------------------------------------------------------------------ progress


class _Watch:
    """A daemon thread that runs `_run` while the driver waits in a `with`
    block, told to stop (`_stop`) and joined at its end."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _start(self, name: str) -> None:
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _join(self) -> bool:
        """Whether a thread ran."""
        self._stop.set()
        if self._thread is None:
            return False
        self._thread.join()
        return True

    def _run(self) -> None:
        raise NotImplementedError


class ProgressWatcher(_Watch):
    """Spark's task counts on a rich progress bar, polled from the status
    tracker while the driver waits for a job."""

    def __init__(self, spark: SparkSession, progress: Progress | None, interval: float = 0.25) -> None:
        super().__init__()
        self.tracker = spark.sparkContext.statusTracker()
        self.progress = progress
        self.interval = interval
        self._bars: dict[int, Any] = {}
        self.label = "spark"  # what the bars of the stages that start now are about

    def __enter__(self) -> ProgressWatcher:
        if self.progress is not None:
            self.progress.start()
            self._start("ripple-progress")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._join():
            self._poll()
        if self.progress is not None:
            self.progress.stop()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._poll()
            except Exception:  # the JVM is going away: nothing left to show
                return

    def _poll(self) -> None:
        assert self.progress is not None
        for stage_id in self.tracker.getActiveStageIds():
            info = self.tracker.getStageInfo(stage_id)
            if info is None:
                continue
            bar = self._bars.get(stage_id)
            if bar is None:
                bar = self._bars[stage_id] = self.progress.add_task(f"{self.label} (stage {stage_id})", total=None)
            self.progress.update(bar, total=info.numTasks, completed=info.numCompletedTasks)
        for stage_id, bar in self._bars.items():
            info = self.tracker.getStageInfo(stage_id)
            if info is not None and info.numCompletedTasks == info.numTasks:
                self.progress.update(bar, total=info.numTasks, completed=info.numTasks)


class StarvedWatch(_Watch):
    """A cluster that gives the job no executor (workers smaller than
    spark.executor.memory, or no worker at all) leaves the run waiting in
    silence: Spark says so only in the JVM's log (log4j2.properties lets
    that one warning in).  The log is read as it grows, and Spark's words
    are said once, on stderr, even with -q (it is not progress)."""

    SIGN = "Initial job has not accepted any resources"

    def __init__(self, log_path: str | None, say: Callable[[str], None], interval: float = 0.5) -> None:
        super().__init__()
        self.log_path = log_path
        self.say = say
        self.interval = interval

    def __enter__(self) -> StarvedWatch:
        if self.log_path is not None:
            self._start("ripple-starved")
        return self

    def __exit__(self, *exc: object) -> None:
        self._join()

    def _run(self) -> None:
        assert self.log_path is not None
        try:
            with open(self.log_path, "rb") as log:
                tail = b""
                while not self._stop.wait(self.interval):
                    tail = (tail + log.read())[-4096:]  # bounded: only the sign's line is looked for
                    at = tail.find(self.SIGN.encode())
                    if at >= 0:
                        line = tail[at:].split(b"\n", 1)[0].decode("utf-8", "replace").strip()
                        self.say(f"spark is waiting for executors: {line}")
                        return
        except OSError:
            return  # no log to read: nothing to say


# ------------------------------------------------------------------ stats


def run_stats(
    spark: SparkSession, frame: DataFrame, opts: StatsOptions, plots: bool
) -> tuple[Record, Timelines | None]:
    """The stats report (stats.assemble) and, for plots, the timelines.
    The rows are decoded once, kept (memory, then disk) for the queries."""
    from pyspark import StorageLevel

    lean = frame.select(*STATS_COLUMNS).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        lean.createOrReplaceTempView("rows")

        def run(qs: dict[str, str]) -> dict[str, list[Record]]:
            return {name: [r.asDict(recursive=True) for r in spark.sql(q).collect()] for name, q in qs.items()}

        return report_and_timelines(run, opts, plots)
    finally:
        lean.unpersist()
        spark.catalog.dropTempView("rows")
