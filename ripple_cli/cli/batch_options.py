"""Options of the batch commands (export, stats): inputs, Spark, splitting."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ripple_cli.cli.options import (
    ByteSize,
    community_id_seed_option,
    group,
    max_flows_option,
    max_payload_option,
    ports_option,
    reassembly_window_option,
    schemas_option,
)

if TYPE_CHECKING:
    from ripple_cli.batch.run import BatchArgs

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_MASTER = "local[*]"


def _batch_args(**options: Any) -> BatchArgs:
    from ripple_cli.batch.run import BatchArgs

    return BatchArgs(**options)


_FIELDS = (
    "inputs",
    "schemas",
    "master",
    "conf",
    "split_size",
    "ports",
    "max_flows",
    "reassembly_window",
    "max_payload",
    "quiet",
    "community_id_seed",
)


def batch_options(f: F) -> F:
    """The inputs, Spark and splitting options, handed to the command as
    one `BatchArgs` named `batch`."""
    f = group("batch", _batch_args, *_FIELDS)(f)
    for decorator in reversed(
        (
            click.argument("inputs", nargs=-1, required=True, type=click.Path()),
            schemas_option,
            click.option(
                "--master",
                default=None,
                metavar="URL",
                help="Spark master, as spark-submit --master takes it: local[N] (embedded, nothing to start) "
                "or a cluster URL (spark://HOST:PORT, yarn, ...).  Default: spark-submit's when run under it, "
                f"else {DEFAULT_MASTER}.",
            ),
            click.option(
                "--conf",
                "conf",
                multiple=True,
                metavar="KEY=VALUE",
                help="A Spark setting, passed through as spark-submit's --conf (repeatable).",
            ),
            click.option(
                "--split-size",
                type=ByteSize(),
                default="64M",
                show_default=True,
                help="Raw streams are decoded in byte ranges of this size, in parallel.",
            ),
            ports_option("Capture connections on this TCP port carry Ripple (repeatable). Default: detect by content."),
            max_flows_option("Open connections kept at once per capture."),
            reassembly_window_option,
            max_payload_option,
            community_id_seed_option,
            click.option("--quiet", "-q", is_flag=True, help="No progress and no summary on stderr."),
        )
    ):
        f = decorator(f)
    return f
