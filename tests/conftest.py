"""Shared test helpers: run the CLI in-process with an injected environment."""

from __future__ import annotations

import functools
import io
import os
import signal
from dataclasses import dataclass
from pathlib import Path

import pytest

from ripple_cli.cli.main import main
from ripple_cli.terminal.environment import Environment

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
GOLDEN = Path(__file__).resolve().parent / "golden"


@dataclass
class Result:
    code: int
    stdout: bytes
    stderr: str

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8")


class _Stdout(io.BytesIO):
    def close(self) -> None:  # rich's wrapper may try; keep the bytes readable
        pass


def run_cli(
    args: list[str],
    stdin: bytes = b"",
    tty: bool = False,
    environ: dict[str, str] | None = None,
    width: int = 120,
) -> Result:
    """Run `ripple ARGS` in-process, as a terminal (tty=True) or a pipe."""
    out = _Stdout()
    err = io.StringIO()
    env = Environment(
        stdin=io.BytesIO(stdin),
        stdout=out,
        stderr=err,
        stdout_isatty=tty,
        stderr_isatty=tty,
        environ=environ if environ is not None else {"NO_COLOR": "1"},
        width=width,
    )
    try:
        main(args, env=env)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0
    else:  # pragma: no cover - main always exits
        code = 0
    return Result(code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli():  # type: ignore[no-untyped-def]
    return run_cli


def golden(name: str, actual: bytes) -> None:
    """Compare with tests/golden/NAME; RIPPLE_UPDATE_GOLDEN=1 rewrites it.
    The checkout's own path is written as ROOT, so a clone anywhere agrees."""
    actual = actual.replace(str(ROOT).encode(), b"ROOT")
    path = GOLDEN / name
    if os.environ.get("RIPPLE_UPDATE_GOLDEN"):
        path.write_bytes(actual)
        return
    assert path.exists(), f"missing golden file {path} (run with RIPPLE_UPDATE_GOLDEN=1 to create it)"
    expected = path.read_bytes()
    if actual != expected:
        a, e = actual.splitlines(), expected.splitlines()
        for i, (x, y) in enumerate(zip(a, e, strict=False)):
            if x != y:
                pytest.fail(f"{name}: line {i + 1} differs\n  expected: {y[:300]!r}\n  actual:   {x[:300]!r}")
        pytest.fail(f"{name}: {len(a)} lines, expected {len(e)}")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-docs",
        action="store_true",
        help="rewrite the shown output of README.md's and the man pages' examples that differ (tests/docs)",
    )


# What shares a costly session fixture runs in one process under `pytest -n`
# (make test: pytest-xdist), so that each is started once per session, not
# once per worker: the Spark session, the standalone cluster and the S3 and
# GCS servers (tests/batch), the OCaml tools (files using ocaml_tools), the
# kernel tunnels' captures (kernel_tunnels).  Every other test is a group of
# its own, balanced across the workers.
#
# Why a scheduler of our own: xdist's --dist loadgroup names the group by
# renaming the item's _nodeid, which pytest 9 no longer reads (it names
# nodes from _id), so its xdist_group marks group nothing.  The scopes of
# xdist's loadscope scheduler are what we want, computed here from the path.
_GROUP_PREFIXES = {"tests/batch/": "spark"}
_GROUP_FIXTURES = {"ocaml_tools": "ocaml", "kernel_tunnels": "tunnels"}


@functools.cache
def _file_group(path: str) -> str | None:
    for prefix, group in _GROUP_PREFIXES.items():
        if path.startswith(prefix):
            return group
    try:
        text = (ROOT / path).read_text(encoding="utf-8")
    except OSError:
        return None
    return next((group for fixture, group in _GROUP_FIXTURES.items() if fixture in text), None)


@pytest.fixture(autouse=True)
def _sigint_not_ignored() -> None:
    """Ctrl-C (SIGINT) as a terminal gives it to the commands a test starts.
    A child inherits an ignored SIGINT, and Python then leaves it ignored:
    an xdist worker found ignoring it (it happened to one of the two
    workers, after earlier tests, in runs beside two CPU hogs) started taps
    and replays that a test's SIGINT could not stop.  The worker gets
    Python's own handler back before each test."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_configure(config: pytest.Config) -> None:
    if "PYTEST_XDIST_WORKER" in os.environ:
        # An xdist worker starts with COLUMNS=80 and LINES=24 that nobody
        # exported: a table in a pipe would fit 80 columns in these tests and
        # be whole in a user's pipe.  The tests see what a pipe sees.
        for name in ("COLUMNS", "LINES"):
            os.environ.pop(name, None)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _file_group(nodeid.split("::", 1)[0]) or nodeid

    return GroupScheduling(config, log)
