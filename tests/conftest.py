"""Shared test helpers: run the CLI in-process with an injected environment."""

from __future__ import annotations

import io
import os
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
