"""What export and stats share: inputs found, schema files read, Spark
started, the two passes planned, with progress on stderr.  pyspark is
imported here only when a run starts (job.py)."""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ripple_cli.errors import UsageProblem
from ripple_cli.sources.schema_files import load_schema_file, schema_paths
from ripple_cli.terminal.environment import Environment
from ripple_cli.terminal.words import plural

from .inputs import InputFile, discover
from .plan import Plan
from .tasks import Settings

# Below this much input (all files together), export and stats run in-process
# on the same row builder, with no JVM to start, unless --master, --conf,
# spark-submit or a running session asks for Spark (ripple-export(1)).
IN_PROCESS_LIMIT = 256 << 20

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from rich.progress import Progress

    from .job import Counters, ProgressWatcher, Session
    from .tablefiles import TypedOut


@dataclass(frozen=True)
class BatchArgs:
    inputs: tuple[str, ...]
    schemas: tuple[str, ...]
    master: str | None  # None: the session's, spark-submit's, or Spark's default (local[*])
    conf: tuple[str, ...]
    split_size: int
    ports: tuple[int, ...]
    max_flows: int
    max_payload: int
    quiet: bool
    community_id_seed: int = 0
    reassembly_window: int = 8 << 20


def _installed(module: str) -> bool:
    """Whether `module` can be imported, without importing it (pyspark alone
    takes longer to import than a small in-process run)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: set to None in sys.modules, as unimportable
        return False


class BatchRun:
    def __init__(self, env: Environment, args: BatchArgs, command: str) -> None:
        if args.split_size < 1:
            raise UsageProblem("--split-size: must be at least 1 byte")
        self.env = env
        self.command = command  # export or stats: what its lines are prefixed with
        self.args = args
        self.inputs: list[InputFile] = discover(args.inputs)
        self.file_schemas = [load_schema_file(p) for p in schema_paths(args.schemas)]
        self.settings = Settings(
            max_payload=args.max_payload,
            ports=frozenset(args.ports),
            max_flows=args.max_flows,
            reassembly_window=args.reassembly_window,
            community_id_seed=args.community_id_seed,
            cwd=os.getcwd(),
        )
        self.started = time.monotonic()

    def note(self, text: str) -> None:
        if not self.args.quiet:
            self.env.stderr.write(text + "\n")
            self.env.stderr.flush()

    def warn(self, text: str) -> None:
        """A line that -q does not silence: something the user must act on."""
        self.env.problem_line(f"ripple: {self.command}: {text}")

    def without_spark(self, command: str) -> bool:
        """Whether the run is in-process: PySpark (the spark extra) is not
        installed, or nothing asks for Spark (`spark_asked`) and the inputs
        are under IN_PROCESS_LIMIT.  Says in one line which extra a run
        needs when it cannot go without."""
        have_spark = _installed("pyspark")
        if have_spark and (self.spark_asked() or sum(i.size for i in self.inputs) >= IN_PROCESS_LIMIT):
            return False
        if self.args.master is not None:
            raise UsageProblem(
                f"--master {self.args.master} needs PySpark, which is not installed: pip install 'ripple-cli[spark]'"
            )
        if command == "export" and not _installed("pyarrow"):
            if have_spark:
                return False  # Spark writes the table itself
            raise UsageProblem(
                "export needs pyarrow (without PySpark, it runs in-process): pip install 'ripple-cli[arrow]'"
            )
        return True

    def spark_asked(self) -> bool:
        """--master or --conf given, run by spark-submit, or a SparkContext
        already running in this process (a notebook's, a test's)."""
        if self.args.master is not None or self.args.conf or "PYSPARK_GATEWAY_PORT" in os.environ:
            return True
        context = sys.modules.get("pyspark.context")  # never imported here just to ask
        return context is not None and context.SparkContext._active_spark_context is not None

    def plan_in_process(self) -> Plan:
        from .local import plan_local

        return plan_local(self.inputs, self.settings, self.args.split_size, self.file_schemas)

    @contextmanager
    def spark(self) -> Iterator[tuple[Session, ProgressWatcher]]:
        try:
            from . import job
        except ImportError as e:  # pragma: no cover - the spark extra is part of the test extra
            raise UsageProblem(
                f"this command needs PySpark ({e.name} is not installed): pip install 'ripple-cli[spark]'"
            ) from None
        conf = job.parse_conf(self.args.conf)
        session = job.start_session(self.args.master, conf)
        failed = True  # the JVM's log is kept only for a failure's line to name
        try:
            with (
                job.spark_errors(session),
                job.StarvedWatch(session.log_path, self.warn),
                job.ProgressWatcher(session.spark, self._progress()) as watcher,
            ):
                yield session, watcher
            failed = False
        except KeyboardInterrupt:
            failed = False
            raise
        finally:
            session.stop(keep_log=failed)

    def _progress(self) -> Progress | None:
        if self.args.quiet or not self.env.stderr_isatty:
            return None
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        console = Console(file=self.env.stderr, force_terminal=True, no_color=bool(self.env.environ.get("NO_COLOR")))
        return Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("tasks"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )

    def plan(self, session: Session, watcher: ProgressWatcher) -> Plan:
        from . import job

        watcher.label = "scan"
        plan = job.plan_on_spark(session.spark, self.inputs, self.settings, self.args.split_size, self.file_schemas)
        watcher.label = "decode"
        return plan

    def frame(
        self, session: Session, plan: Plan, typed: TypedOut | None = None, siblings: bool = False
    ) -> tuple[DataFrame, Counters]:
        from . import job

        return job.rows_frame(session.spark, plan, typed, siblings)

    def describe_inputs(self, plan: Plan) -> str:
        raw = sum(1 for i in self.inputs if not i.is_capture)
        caps = len(self.inputs) - raw
        size = sum(i.size for i in self.inputs)
        n = len(plan.rotated)
        rotated = f", {plural(n, 'rotated connection')}" if n else ""
        return (
            f"{plural(len(self.inputs), 'file')} ({raw} raw, {plural(caps, 'capture')}), "
            f"{plural(size, 'byte', grouped=True)}, "
            f"{plural(len(plan.tasks), 'task', grouped=True)}{rotated}, {plural(len(plan.settings.schemas), 'schema')}"
        )

    def elapsed(self) -> float:
        return time.monotonic() - self.started
