"""man/ripple-rcp.7: renders without a warning, is ASCII, and documents
every problem kind and every -Y field the dissector declares."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
from rcpkit import DISSECTOR

from tests.conftest import ROOT

PAGE = ROOT / "man" / "ripple-rcp.7"


def tags(text: str) -> set[str]:
    """The tags of the page's .TP entries (the line after each .TP), as plain words."""
    lines = text.splitlines()
    out = set()
    for k, line in enumerate(lines[:-1]):
        if line.startswith(".TP"):
            tag = re.sub(r"^\.(B|BR|BI|I|IR)\s+", "", lines[k + 1])
            out |= {w for w in re.split(r"[\s,()]+", tag.replace("\\-", "-").replace("\\ ", " ")) if w}
    return out


def test_every_problem_kind_and_filter_field_has_an_entry() -> None:
    text = PAGE.read_text()
    found = tags(text)
    assert sorted(k for k in DISSECTOR.problem_kinds if k not in found) == []
    assert sorted(f for f in DISSECTOR.filter_fields if f not in found) == []


def test_page_is_ascii() -> None:
    PAGE.read_bytes().decode("ascii")


@pytest.mark.parametrize("renderer", [["groff", "-man", "-Tutf8", "-ww", "-z"], ["man", "--warnings", "-l"]])
def test_page_renders_without_warnings(renderer: list[str]) -> None:
    if not shutil.which(renderer[0]):
        pytest.skip(f"{renderer[0]} is not installed")
    env = {**os.environ, "MANWIDTH": "80", "MANPAGER": "cat", "PAGER": "cat", "LC_ALL": "C.UTF-8"}
    proc = subprocess.run([*renderer, str(PAGE)], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert (proc.returncode, proc.stderr) == (0, "")
