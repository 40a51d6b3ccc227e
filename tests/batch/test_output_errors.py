"""An output that cannot be made is one line and exit status 3, before
any input is read (it was an internal error, or 'no such file')."""

from __future__ import annotations

from tests.conftest import EXAMPLES, run_cli


def test_a_plot_directory_that_cannot_be_made() -> None:
    r = run_cli(["stats", "-q", "--plot", "/proc/ripple-plots", str(EXAMPLES / "session.ripple")])
    assert (r.code, r.stdout) == (3, b"")
    assert r.stderr == "ripple: /proc/ripple-plots: cannot create the directory: No such file or directory\n"


def test_an_export_out_that_cannot_be_made() -> None:
    r = run_cli(["export", "-q", str(EXAMPLES / "demo.ripple"), "-o", "/proc/ripple-out"])
    assert r.code == 3
    assert r.stderr == "ripple: /proc/ripple-out: cannot be created: No such file or directory\n"
