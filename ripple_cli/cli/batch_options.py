"""Options of the batch commands (export, stats): inputs, Spark, splitting."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ripple_cli.cli.options import ByteSize, max_flows_option, max_payload_option, ports_option, schemas_option

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_MASTER = "local[*]"


def batch_options(f: F) -> F:
    for decorator in reversed(
        (
            click.argument("inputs", nargs=-1, required=True, type=click.Path()),
            schemas_option,
            click.option(
                "--master",
                default=DEFAULT_MASTER,
                show_default=True,
                metavar="URL",
                help="Spark master: local[N] (embedded, nothing to start) "
                "or a cluster URL (spark://HOST:PORT, yarn, ...).",
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
                default=64 << 20,
                show_default="64M",
                help="Raw streams are decoded in byte ranges of this size, in parallel.",
            ),
            ports_option("Capture connections on this TCP port carry Ripple (repeatable). Default: detect by content."),
            max_flows_option("Open connections kept at once per capture."),
            max_payload_option,
            click.option("--quiet", "-q", is_flag=True, help="No progress and no summary on stderr."),
        )
    ):
        f = decorator(f)
    return f
