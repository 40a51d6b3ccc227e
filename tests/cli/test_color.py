"""Colour: --color always|never|auto, NO_COLOR and FORCE_COLOR, decided by
the injected Environment."""

from __future__ import annotations

import pytest

from ripple_cli.terminal.environment import Environment
from tests.conftest import EXAMPLES, run_cli

DEMO = str(EXAMPLES / "demo.ripple")


@pytest.mark.parametrize(
    ("mode", "tty", "environ", "expected"),
    [
        ("auto", True, {}, True),
        ("auto", False, {}, False),
        ("auto", True, {"NO_COLOR": "1"}, False),
        ("auto", True, {"NO_COLOR": ""}, True),  # empty: not set
        ("auto", False, {"FORCE_COLOR": "1"}, True),
        ("auto", False, {"FORCE_COLOR": ""}, False),
        ("auto", False, {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
        ("always", False, {"NO_COLOR": "1"}, True),
        ("never", True, {"FORCE_COLOR": "1"}, False),
    ],
)
def test_who_decides(mode: str, tty: bool, environ: dict[str, str], expected: bool) -> None:
    env = Environment(stdout_isatty=tty, environ=environ, color_mode=mode)
    assert env.color is expected


def test_color_never_on_a_terminal() -> None:
    coloured = run_cli(["decode", "-c", "3", DEMO], tty=True, environ={})
    plain = run_cli(["--color", "never", "decode", "-c", "3", DEMO], tty=True, environ={})
    assert b"\x1b[" in coloured.stdout
    assert b"\x1b[" not in plain.stdout
    assert plain.text == run_cli(["decode", "-c", "3", DEMO], tty=True).text


def test_color_always_beats_no_color() -> None:
    r = run_cli(["--color", "always", "decode", "-c", "3", DEMO], tty=True, environ={"NO_COLOR": "1"})
    assert b"\x1b[" in r.stdout


def test_force_color_on_a_terminal_with_no_color_unset() -> None:
    r = run_cli(["decode", "-c", "3", DEMO], tty=True, environ={"FORCE_COLOR": "1"})
    assert b"\x1b[" in r.stdout


def test_bad_color_is_a_usage_error() -> None:
    r = run_cli(["--color", "sometimes", "decode", DEMO])
    assert r.code == 2
    assert "'--color'" in r.stderr
