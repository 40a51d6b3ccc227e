"""`ripple export`: capture sets to a table of decoded messages, on Spark."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import tempfile
from typing import TYPE_CHECKING

import click

from ripple_cli.batch.rows import COLUMN_NAMES
from ripple_cli.batch.run import BatchArgs, BatchRun
from ripple_cli.cli.batch_options import batch_options
from ripple_cli.cli.options import OutputPath
from ripple_cli.errors import EXIT_INTERRUPTED, InputUnreadable, RippleError, UsageProblem
from ripple_cli.sources.urls import SCHEMES, check_parent, exists, is_url, remove
from ripple_cli.sources.urls import parse as parse_url
from ripple_cli.terminal.environment import Environment
from ripple_cli.terminal.words import plural

if TYPE_CHECKING:
    from ripple_cli.batch.plan import Plan
    from ripple_cli.batch.tablefiles import TypedOut

FORMATS = ("parquet", "jsonl", "csv")
MESSAGES_DIR = "messages"  # OUT/messages/: the all-messages table, with --tables


def finish_tables(where: str) -> None:
    from ripple_cli.batch.tablefiles import finish_tables as finish

    finish(where)


def typed_out(where: str, plan: Plan, tables: bool) -> TypedOut | None:
    """--tables: the typed tables' directory and layout (from every schema of the run)."""
    if not tables:
        return None
    from ripple_cli.batch.tablefiles import TypedOut
    from ripple_cli.batch.tables import Layout

    return TypedOut(where, Layout(plan.settings.schemas))


DEFAULT_PARTITION = "event_hour"


def _discard(where: str) -> None:
    """What an export that did not finish wrote, as far as it can go."""
    with contextlib.suppress(OSError, RippleError):
        if is_url(where):
            remove(where)
        elif os.path.isdir(where):
            shutil.rmtree(where)


def _staging(final: str) -> str:
    """Where --overwrite writes when OUT exists (a local path): beside it,
    on the same file system, put in its place only once the table is
    whole, so that an export interrupted or failed leaves the old OUT as it
    was, not a part of a new one under its name."""
    try:
        d = tempfile.mkdtemp(prefix=f".{os.path.basename(final)}.ripple-", dir=os.path.dirname(final))
    except OSError as e:
        raise InputUnreadable(f"{final}: cannot write beside it: {e.strerror or e}") from None
    os.rmdir(d)  # the writers make it, as they make OUT
    return d


def _replace(final: str, staged: str) -> None:
    """The whole new table in OUT's place: two renames, the old OUT gone after."""
    old = staged + ".old"
    os.rename(final, old)
    os.rename(staged, final)
    if os.path.isdir(old) and not os.path.islink(old):
        shutil.rmtree(old)
    else:
        os.remove(old)


def checked_out(out: str, fmt: str, partition_by: str | None, tables: bool, overwrite: bool) -> str:
    """OUT and the table's options as export can take them, before any
    input is read; the partition column ("none" for none)."""
    if tables and fmt != "parquet":
        raise UsageProblem(f"--tables: the typed tables are Parquet only (not -F {fmt})")
    if partition_by is None:
        partition_by = DEFAULT_PARTITION if fmt == "parquet" else "none"
    if partition_by != "none" and partition_by not in COLUMN_NAMES:
        raise UsageProblem(f"--partition-by: {partition_by!r} is not a column (columns: {', '.join(COLUMN_NAMES)})")
    if partition_by != "none" and is_url(out) and SCHEMES.get(out.split(":", 1)[0].lower()) != "file":
        from ripple_cli.batch.output import check_partitioning

        check_partitioning(fmt, partition_by, out_by_url=out)  # before any input is read, on Spark or not
    if exists(out) and not overwrite:
        raise InputUnreadable(f"{out}: already exists (--overwrite replaces it)")
    if is_url(out):
        check_parent(out)
    else:
        parent = os.path.dirname(os.path.abspath(out))
        if not os.path.isdir(parent):
            raise InputUnreadable(f"{out}: directory {parent} does not exist")
        if not os.path.exists(out):
            # Whether OUT can be made at all (a read-only file system, /proc),
            # before any input is read: the system's own reason, in one line.
            try:
                os.mkdir(out)
                os.rmdir(out)
            except OSError as e:
                raise InputUnreadable(f"{out}: cannot be created: {e.strerror or e}") from None
    return partition_by


def _place(spec: str) -> tuple[str, str]:
    """Where a path or URL points, comparable with another's: a local path
    or file:// URL as ("", its real path), an object store's as (its
    filesystem, bucket/key without a trailing /); s3a:// is s3://."""
    if not is_url(spec):
        return "", os.path.realpath(spec)
    url = parse_url(spec)
    fs = SCHEMES[url.scheme]
    if fs == "file":
        return "", os.path.realpath(url.path)
    return fs, url.path.rstrip("/")


def _within(path: str, top: str) -> bool:
    sep = os.sep if path.startswith(os.sep) else "/"
    return path == top or path.startswith(top.rstrip(sep) + sep)


def refuse_replacing_inputs(out: str, inputs: tuple[str, ...]) -> None:
    """--overwrite removes OUT before anything is written: never when OUT
    is an input, holds one, lies in an input directory, or holds the
    working directory (the relative inputs with it).  By URL too: a
    file:// OUT is its local path, and an object store's OUT is compared
    with the inputs' keys (a glob's fixed part standing for the prefix
    it lists)."""
    fs, target = _place(out)
    if fs == "" and not os.path.exists(target):
        return
    # (filesystem, path, is a directory, as the message names it)
    places: list[tuple[str, str, bool, str]] = [("", os.path.realpath(os.getcwd()), True, "")]
    for spec in inputs:
        if is_url(spec):
            fixed = spec
            if any(c in spec.split("://", 1)[1] for c in "*?["):
                fixed = spec[: min(i for i, c in enumerate(spec) if c in "*?[" and i > spec.index("://"))]
                fixed = fixed[: fixed.rfind("/") + 1] or fixed
            pfs, path = _place(fixed)
            # an object store's name may be a prefix (a directory) as well as an object
            shown = fixed.rstrip("/") if pfs else path
            places.append((pfs, path, pfs != "" or os.path.isdir(path), shown))
            continue
        found = sorted(glob.glob(spec, recursive=True)) if glob.has_magic(spec) else [spec]
        places += [("", os.path.realpath(p), os.path.isdir(p), p) for p in found]
    for i, (pfs, real, is_dir, shown) in enumerate(places):
        if pfs != fs:
            continue
        inside = _within(real, target)
        holds = is_dir and _within(target, real)
        if inside or (holds and i > 0):
            what = "the working directory" if i == 0 else f"the input {shown}"
            how = "is" if real == target else ("holds" if inside else "is inside")
            raise UsageProblem(f"--overwrite: {out} {how} {what}: write the table elsewhere")


@click.command()
@click.option(
    "--output",
    "-o",
    "out",
    required=True,
    type=OutputPath(),
    help="The directory to write (Spark's part files): a path or a URL (s3://, gs://, hdfs://, file://).",
)
@click.option(
    "--format",
    "-F",
    "fmt",
    type=click.Choice(FORMATS),
    default="parquet",
    show_default=True,
    help="Table format: parquet, jsonl (one JSON object a line) or csv with a header.",
)
@click.option(
    "--partition-by",
    metavar="COLUMN",
    default=None,
    help=f"Partition the output by this column; `none` for no partitioning. "
    f"Default: {DEFAULT_PARTITION} (the envelope time's hour) for parquet, none otherwise.",
)
@click.option(
    "--tables",
    is_flag=True,
    help="Also write one typed table per source output (OUT/ripple/OUTPUT/: the key and the schema's "
    "fields as columns); the all-messages table goes to OUT/messages/. Parquet only.",
)
@click.option("--overwrite", is_flag=True, help="Replace OUT if it exists (default: refuse).")
@batch_options
@click.pass_obj
def export(
    env: Environment,
    out: str,
    fmt: str,
    partition_by: str | None,
    tables: bool,
    overwrite: bool,
    batch: BatchArgs,
) -> int:
    """Decode INPUT... (files, directories, globs; raw streams, pcap and
    pcapng, mixed) into one row per message and per problem, written to OUT
    as a table, on Spark (embedded local Spark by default).

    Raw streams are split into byte ranges decoded in parallel; captures
    are decoded whole, one task each, and a connection continued across
    rotated capture files is reassembled across them.  A Handshake anywhere
    in the input serves every task.  The rows are the same whatever the
    parallelism.  Exit status 0 once OUT is written: problems found in the
    input are rows of the table (see the problem column).  With --tables,
    each source output's Deltas also go to a typed table of their own.
    """
    if overwrite:  # before OUT is looked at (by URL, that is a request)
        refuse_replacing_inputs(out, batch.inputs)
    partition_by = checked_out(out, fmt, partition_by, tables, overwrite)
    run = BatchRun(env, batch, "export")
    partition = None if partition_by == "none" else partition_by
    # Absolute, as the inputs: the executors do not share the driver's working directory.
    # A link's target is what is replaced (the link stays), as a redirection writes through one.
    final = out if is_url(out) else os.path.realpath(out) if os.path.islink(out) else os.path.abspath(out)
    staged = _staging(final) if overwrite and not is_url(final) and os.path.lexists(final) else None
    where = staged or final  # what this run writes
    messages = where
    if tables:
        if overwrite and is_url(where):
            remove(where)  # the typed tables of an earlier run too, as write_local and job.write_rows remove OUT
        messages = os.path.join(where, MESSAGES_DIR)
    fresh = not (os.path.exists(where) if not is_url(where) else exists(where))
    try:
        if run.without_spark("export"):
            from ripple_cli.batch.local import write_local

            plan = run.plan_in_process()
            rows, problems = write_local(plan, messages, fmt, partition, overwrite, typed_out(where, plan, tables))
            if tables:
                finish_tables(where)
            how = "; in-process, without Spark"
        else:
            with run.spark() as (session, watcher):
                from ripple_cli.batch import job

                plan = run.plan(session, watcher)
                typed = typed_out(where, plan, tables)
                if job.written_by_tasks(messages, fmt):
                    rows, problems = job.export_by_tasks(
                        session.spark, plan, messages, fmt, partition, overwrite, typed
                    )
                else:
                    frame, counters = run.frame(session, plan, typed)
                    job.write_rows(frame, messages, fmt, partition, overwrite)
                    rows, problems = counters.rows.value, counters.problems.value
                if tables:
                    finish_tables(where)
            how = ""
        if staged is not None:
            _replace(final, staged)
    except BaseException as e:
        # No table presented as whole that is not: what this run wrote goes
        # (an OUT that was there before, --overwrite or not, is not touched).
        if fresh:
            _discard(where)
        if isinstance(e, KeyboardInterrupt):
            said = f": {out} left as it was" if staged is not None else f": {out} removed" if fresh else ""
            env.problem_line(f"ripple: export: interrupted{said}")
            return EXIT_INTERRUPTED
        raise
    part = "" if partition_by == "none" else f", partitioned by {partition_by}"
    if tables:
        part += ", with typed tables"
    run.note(
        f"export: {run.describe_inputs(plan)}; {plural(rows - problems, 'message', grouped=True)}, "
        f"{plural(problems, 'problem', grouped=True)} -> {out} ({fmt}{part}{how}) in {run.elapsed():.1f} s"
    )
    return 0
