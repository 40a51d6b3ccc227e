"""`ripple stats`: counts, rates, problems, sequence gaps, watermark lags,
heartbeat silences and top keys of capture sets, on Spark."""

from __future__ import annotations

import os

import click

from ripple_cli.batch.run import BatchArgs, BatchRun
from ripple_cli.batch.siblingcount import Tally, sibling_records
from ripple_cli.batch.stats import BY_CHOICES, NS, StatsOptions
from ripple_cli.cli.batch_options import batch_options
from ripple_cli.cli.options import Number, OutputPath, group
from ripple_cli.errors import EXIT_INTERRUPTED, InputUnreadable
from ripple_cli.terminal.environment import Environment

MAX_TOP = 2**31 - 1
MAX_SILENCE_S = 1e9  # about 31 years


def _stats_options(by: str, top: int, silence: float) -> StatsOptions:
    return StatsOptions(by=by, top=top, silence_ns=round(silence * NS))


@click.command()
@group("figures", _stats_options, "by", "top", "silence")
@click.option(
    "--by",
    type=click.Choice(BY_CHOICES),
    default="type",
    show_default=True,
    help="How the main table groups messages: by message type, connection (stream direction), "
    "Delta output, or (output, key).",
)
@click.option(
    "--format",
    "-F",
    "fmt",
    type=click.Choice(("table", "json")),
    default="table",
    show_default=True,
    help="table: rich tables; json: one JSON object (shape version 1), for scripts.",
)
@click.option(
    "--plot", "plot_dir", type=OutputPath(file_okay=False), metavar="DIR", help="Also write PNG charts to DIR."
)
@click.option(
    "--top",
    # at most a 32-bit count: Spark's limits and SQLite's integers take it whole
    type=click.IntRange(min=1, max=MAX_TOP),
    metavar="N",
    default=10,
    show_default=True,
    help="How many keys to list.",
)
@click.option(
    "--silence",
    # whole nanoseconds, within a signed 64-bit count (the JSON's integers)
    type=Number(min=1e-9, max=MAX_SILENCE_S),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="A worker is silent when its heartbeats are further apart than this.",
)
@batch_options
@click.pass_obj
def stats(env: Environment, fmt: str, plot_dir: str | None, figures: StatsOptions, batch: BatchArgs) -> int:
    """Figures about INPUT... (files, directories, globs; raw streams, pcap
    and pcapng, mixed), computed on Spark (embedded local Spark by default):
    messages and bytes by type, rates, problems by kind, Delta sequence gaps
    and duplicates per (worker, output), watermark lag percentiles,
    heartbeat intervals and silences, top keys by updates.

    Exit status 0 once the figures are printed: problems found in the input
    are among them.
    """
    run = BatchRun(env, batch, "stats")
    if plot_dir is not None:
        from ripple_cli.batch.plots import require_matplotlib

        require_matplotlib()  # fail before the job if matplotlib is missing
        try:  # and if the directory cannot be made
            os.makedirs(plot_dir, exist_ok=True)
        except OSError as e:
            raise InputUnreadable(f"{plot_dir}: cannot create the directory: {e.strerror or e}") from None
    how = ""
    if run.without_spark("stats"):
        from ripple_cli.batch.local import plan_rows
        from ripple_cli.batch.sqlite import run_stats_local
        from ripple_cli.batch.tasks import rows_of

        plan = run.plan_in_process()
        tallies: dict[int, Tally] = {}
        rows = rows_of(plan_rows(plan, tallies=tallies))
        report, timelines = run_stats_local(rows, figures, plots=plot_dir is not None)
        how = " in-process, without Spark;"
    else:
        try:
            with run.spark() as (session, watcher):
                from ripple_cli.batch import job

                plan = run.plan(session, watcher)
                frame, counters = run.frame(session, plan, siblings=True)
                report, timelines = job.run_stats(session.spark, frame, figures, plots=plot_dir is not None)
                tallies = counters.siblings.value
        except KeyboardInterrupt:  # the Spark jobs are cancelled (batch/job.py CtrlC): say so as export does
            env.problem_line("ripple: stats: interrupted")
            return EXIT_INTERRUPTED
    report["siblings"] = sibling_records(tallies)
    # Every input, those that gave no row (empty, or sibling protocols only) too.
    report["overview"]["files"] = len(run.inputs)
    if fmt == "json":
        from ripple_cli.codec.jsonview import dumps

        env.stdout.write(dumps(report) + b"\n")
        env.stdout.flush()
    else:
        from ripple_cli.batch.report import print_report
        from ripple_cli.render.columns import make_console

        console, stream = make_console(env)
        print_report(env, console, report)
        stream.flush()
        stream.detach()
    if plot_dir is not None:
        from ripple_cli.batch.plots import write_plots

        assert timelines is not None
        for path in write_plots(plot_dir, report, timelines):
            run.note(f"stats: wrote {path}")
    run.note(f"stats: {run.describe_inputs(plan)};{how} in {run.elapsed():.1f} s")
    return 0
