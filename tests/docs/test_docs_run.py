"""The examples of README.md and of the man pages, run (tests/docs/doctest_shell.py
says how).  `pytest tests/docs --update-docs` rewrites shown outputs that differ."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest

from tests.docs import doctest_shell as ds

DOCS = [pytest.param(ds.README, "readme", id="README.md")] + [
    pytest.param(p, "man", id=f"man/{p.name}") for p in ds.man_pages()
]


def blocks_of(path: Path, layout: str) -> list[ds.Block]:
    return ds.readme_blocks(path) if layout == "readme" else ds.man_blocks(path)


def not_run() -> list[ds.Block]:
    out = []
    for p in [ds.README, *ds.man_pages()]:
        with contextlib.suppress(ds.DocError):  # test_every_example_is_found names it
            out += [b for b in blocks_of(p, "readme" if p == ds.README else "man") if b.not_run is not None]
    return out


@pytest.mark.parametrize(("path", "layout"), DOCS)
def test_examples_run_as_shown(path: Path, layout: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    blocks = [b for b in blocks_of(path, layout) if b.not_run is None]
    if not blocks:
        pytest.skip("no example to run")
    work = ds.setup_dir(tmp_path, layout)
    env = ds.environment(tmp_path)
    failures: list[str] = []
    fixes: list[tuple[ds.Command, list[str]]] = []
    for block in blocks:
        for cmd in block.commands:
            actual = ds.run(cmd, work, env)
            if not ds.matches(cmd.expected, actual):
                fixes.append((cmd, actual))
                first = cmd.text.splitlines()[0]
                failures.append(f"{block.doc}:{cmd.line}: $ {first}\n  {ds.first_difference(cmd.expected, actual)}")
    if fixes and request.config.getoption("--update-docs"):
        ds.rewrite(path, fixes, roff=layout == "man")
        pytest.skip(f"rewrote the output of {len(fixes)} commands in {path.name}: review the diff")
    assert not failures, "examples whose output is not what the docs show:\n" + "\n".join(failures)


@pytest.mark.parametrize("block", not_run(), ids=lambda b: b.id)
def test_not_run(block: ds.Block) -> None:
    # Listed by `pytest -ra` with the reason the doc gives: keep this list short.
    pytest.skip(f"not run: {block.not_run}")


def test_every_example_is_found() -> None:
    # Parsing errors (a `$` block not fenced as console, an example region
    # without `$` lines, a command in a .B line) fail here, by name.
    found = {p.name: blocks_of(p, "readme" if p == ds.README else "man") for p in [ds.README, *ds.man_pages()]}
    assert sum(len(b.commands) for b in found["README.md"]) >= 10
    assert all(found[name] for name in ("ripple-decode.1", "ripple-encode.1", "ripple-verify.1", "ripple-schema.1"))


def test_placeholders() -> None:
    assert ds.line_matches("in <SECONDS> s", "in 15.5 s")
    assert not ds.line_matches("in <SECONDS> s", "in soon s")
    assert ds.line_matches("rate: <FIGURE> msgs/s", "rate: 1,285.6 msgs/s")
    assert not ds.line_matches("rate: <FIGURE> msgs/s", "rate: many msgs/s")
    assert not ds.line_matches("a", "b")
    assert ds.roff_text(ds.roff_escape("a-b 'c' \\e \u2500 .x")) == "a-b 'c' \\e \u2500 .x"
    assert ds.roff_text(ds.roff_escape(".start")) == ".start"


_WAIT_FOR_FILE = re.compile(r"until grep -qs \S+ (\S+);")


def test_a_recipe_that_waits_on_a_log_starts_it_empty() -> None:
    # `cmd 2> tap.log & until grep -qs listening tap.log` races with the
    # background job's truncation: a log left by an earlier recipe (or an
    # earlier run of the same one) already holds the line, so the wait ends
    # before this tap listens (a CI run saw exactly that).  The recipe must
    # remove the file first, in the same command.
    late = []
    for p in [ds.README, *ds.man_pages()]:
        for block in blocks_of(p, "readme" if p == ds.README else "man"):
            for cmd in block.commands:
                for name in _WAIT_FOR_FILE.findall(cmd.text):
                    removed = re.search(rf"\brm -f {re.escape(name)};", cmd.text)
                    if removed is None or removed.start() > cmd.text.index(f"> {name}"):
                        late.append(f"{block.doc}:{cmd.line}: waits on {name} without removing it first")
    assert not late, "\n".join(late)
