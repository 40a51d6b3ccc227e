"""Docs that are tests: the shell examples of README.md and of the man pages,
read from their sources, run by bash, and their shown output compared exactly.

Where examples are found
  README.md: fenced blocks marked ```console.  A fenced block of any other
  kind whose first line starts with `$ ` is an error (it would silently not
  run).
  man/*.1, man/*.7: the `.EX`/`.EE` and `.nf`/`.fi` regions of the EXAMPLES
  section.  Every region there must be run or marked not run, and a command
  must not hide in a `.B` line outside a region.

The form of a block
  A line starting with `$ ` is a command; its continuation lines belong to
  it (after a trailing `\\` or `|`, and the body of a here-document up to its
  terminator).  The lines after it, up to the next `$ ` line, are what it
  shows: standard output and standard error as one stream (stderr into the
  same pipe: what a terminal shows, in the order the command writes it).
  Man page text is read with its roff escapes resolved (`\\-` is `-`,
  `\\(aq` is `'`, `\\e` is a backslash, `\\[u2500]` is the glyph).

Where they run
  Each document runs top to bottom in a temporary directory of its own, its
  commands one `bash -c` each, so that a later block sees the files an
  earlier one wrote.  README.md's directory holds a copy of examples/ as
  `examples/` (the README is read from the top of a clone); a man page's
  holds a copy of the files of examples/ themselves (the pages name bare
  `session.ripple`, `capture.pcap`, ...).  `ripple` on the PATH is this
  checkout's; the environment is fixed: TZ=UTC, LC_ALL=C.UTF-8, COLUMNS=80,
  HOME the temporary directory, no RIPPLE_SCHEMAS.

Not run
  An example that needs what a test cannot provide (a live interface, a
  worker to talk to, a Spark cluster) is marked just before it:
  `<!-- not run: WHY -->` in README.md, `.\\" not run: WHY` in a man page.
  Each one is a skipped test whose reason is the WHY, so `pytest -ra` lists
  them all.

Placeholders
  Output that varies from run to run is written in the docs as one of these
  placeholders, and nothing else is loose:
    <SECONDS>  a duration: digits, a point, digits (`in 15.5 s`)
    <FIGURE>   a measured rate or lag: digits with thousands commas, a
               point, digits (`1,285.6 msgs/s`)
    <TMP>      the directory the document runs in (actual output has it
               replaced by the placeholder before comparing)

Updating
  `pytest tests/docs --update-docs` rewrites the shown output of every
  command whose output differs (lines with placeholders that still match
  are kept); review the diff before committing it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLES = ROOT / "examples"
MAN = ROOT / "man"
README = ROOT / "README.md"

PLACEHOLDERS = {
    "<SECONDS>": r"[0-9]+\.[0-9]+",
    "<FIGURE>": r"[0-9][0-9,]*\.[0-9]+",
    "<TMP>": re.escape("<TMP>"),
}

NOT_RUN_MD = re.compile(r"^<!--\s*not run:\s*(.*?)\s*-->\s*$")
NOT_RUN_ROFF = re.compile(r'^\.\\"\s*not run:\s*(.*?)\s*$')
HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")


@dataclass
class Command:
    line: int  # 1-based line of the `$ ` in the source
    text: str  # what bash runs
    expected: list[str]
    out_start: int  # 0-based index in the source of its first output line
    out_end: int  # one past its last


@dataclass
class Block:
    doc: str  # README.md, man/ripple-decode.1
    line: int  # 1-based line where the block starts
    commands: list[Command] = field(default_factory=list)
    not_run: str | None = None

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


class DocError(Exception):
    """A document whose examples cannot be read as examples."""


# ---------------------------------------------------------------- roff text


def roff_text(line: str) -> str:
    """One line of an example region, its escapes resolved."""
    line = re.sub(r"\\\[u([0-9A-Fa-f]{4,5})\]", lambda m: chr(int(m.group(1), 16)), line)
    line = re.sub(r"\\f(\[[^\]]*\]|\(..|.)", "", line)
    for esc, text in (
        ("\\-", "-"),
        ("\\(aq", "'"),
        ("\\(dq", '"'),
        ("\\[rs]", "\\"),
        ("\\(rs", "\\"),
        ("\\&", ""),
        ("\\e", "\\"),
    ):
        line = line.replace(esc, text)
    return line


def roff_escape(text: str) -> str:
    """Text back to roff, the way the pages write their examples."""
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\e")
        elif ch == "-":
            out.append("\\-")
        elif ch == "'":
            out.append("\\(aq")
        elif ord(ch) > 0x7F:
            out.append(f"\\[u{ord(ch):04X}]")
        else:
            out.append(ch)
    s = "".join(out)
    return "\\&" + s if s.startswith((".", "'")) else s


# ---------------------------------------------------------------- parsing


def commands_of(doc: str, lines: list[str], first: int) -> list[Command]:
    """The commands of a block whose text lines are `lines`, the first of
    them at 0-based source index `first`."""
    cmds: list[Command] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            raise DocError(f"{doc}:{first + i + 1}: output before any `$ ` command")
        start = i
        parts = [lines[i][2:]]
        i += 1
        while True:
            m = HEREDOC.search(parts[-1])
            if m:
                while i < len(lines) and lines[i] != m.group(2):
                    parts.append(lines[i])
                    i += 1
                if i == len(lines):
                    raise DocError(f"{doc}:{first + start + 1}: here-document {m.group(2)} is not closed")
                parts.append(lines[i])
                i += 1
                continue
            if parts[-1].endswith("\\") or parts[-1].rstrip().endswith("|"):
                if i == len(lines):
                    raise DocError(f"{doc}:{first + start + 1}: the command goes on past the block")
                parts.append(lines[i])
                i += 1
                continue
            break
        out_start = i
        while i < len(lines) and not lines[i].startswith("$ "):
            i += 1
        end = i
        while end > out_start and lines[end - 1] == "":
            end -= 1  # blank lines before the next command separate, they are not output
        cmds.append(Command(first + start + 1, "\n".join(parts), lines[out_start:end], first + out_start, first + end))
    return cmds


def readme_blocks(path: Path = README, doc: str = "README.md") -> list[Block]:
    src = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(src):
        m = re.match(r"^(```+)\s*(\S*)", src[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(1), m.group(2)
        j = i + 1
        while j < len(src) and not src[j].startswith(fence):
            j += 1
        body = src[i + 1 : j]
        if lang == "console":
            k = i - 1
            while k >= 0 and src[k].strip() == "":
                k -= 1
            note = NOT_RUN_MD.match(src[k]) if k >= 0 else None
            block = Block(doc, i + 1, not_run=note.group(1) if note else None)
            block.commands = commands_of(doc, body, i + 1)
            blocks.append(block)
        elif body and body[0].startswith("$ "):
            raise DocError(f"{doc}:{i + 1}: a block of commands must be fenced as ```console to be run")
        i = j + 1
    return blocks


def man_blocks(path: Path) -> list[Block]:
    doc = f"man/{path.name}"
    src = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    in_examples = False
    pending: str | None = None
    i = 0
    while i < len(src):
        line = src[i]
        if line.startswith(".SH"):
            in_examples = line.split(None, 1)[1:] in (["EXAMPLES"], ['"EXAMPLES"'])
            i += 1
            continue
        if not in_examples:
            i += 1
            continue
        note = NOT_RUN_ROFF.match(line)
        if note:
            pending = note.group(1)
        elif line in (".EX", ".nf"):
            end = ".EE" if line == ".EX" else ".fi"
            j = i + 1
            text: list[str] = []
            index: list[int] = []
            while j < len(src) and src[j] != end:
                if not re.match(r"^\.(RS|RE|in)\b", src[j]):
                    text.append(roff_text(src[j]))
                    index.append(j)
                j += 1
            block = Block(doc, i + 1, not_run=pending)
            pending = None
            if text and not text[0].startswith("$ "):
                raise DocError(f"{doc}:{i + 1}: an example must show its commands as `$ ` lines, or be marked not run")
            if any(src[k].startswith(".") for k in index):
                raise DocError(f"{doc}:{i + 1}: a macro inside an example region")
            # The region's lines are contiguous but for .RS/.RE/.in: map back.
            cmds = commands_of(doc, text, 0)
            for c in cmds:
                c.line = index[c.line - 1] + 1
                after = index[-1] + 1  # the region's end marker
                start = index[c.out_start] if c.out_start < len(index) else after
                c.out_start, c.out_end = start, (index[c.out_end - 1] + 1 if c.out_end > c.out_start else start)
            block.commands = cmds
            blocks.append(block)
            i = j
        elif re.match(r"^\.B\s+\"?(ripple|sudo|echo|printf)\b", line):
            raise DocError(f"{doc}:{i + 1}: a command outside an example region (.EX/.EE)")
        i += 1
    return blocks


def man_pages() -> list[Path]:
    return sorted([*MAN.glob("*.1"), *MAN.glob("*.7")])


# ---------------------------------------------------------------- running


def setup_dir(tmp: Path, layout: str) -> Path:
    """The directory a document's examples run in, and a bin/ with `ripple`."""
    work = tmp / "work"
    if layout == "readme":
        shutil.copytree(EXAMPLES, work / "examples")
    else:
        shutil.copytree(EXAMPLES, work)
    bindir = tmp / "bin"
    bindir.mkdir()
    wrapper = bindir / "ripple"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m ripple_cli "$@"\n')
    wrapper.chmod(0o755)
    # python3 is the environment's, as in an activated venv (pyarrow, for export's example).
    python = bindir / "python3"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return work


def environment(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RIPPLE_SCHEMAS", "PYTEST", "COV_"))}
    env.pop("FORCE_COLOR", None)
    env.pop("NO_COLOR", None)
    env.update(
        PATH=f"{tmp / 'bin'}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}",
        HOME=str(tmp / "work"),
        TZ="UTC",
        LC_ALL="C.UTF-8",
        COLUMNS="80",
        PYTHONPATH=str(ROOT),
    )
    env.pop("LINES", None)
    return env


def run(cmd: Command, work: Path, env: dict[str, str]) -> list[str]:
    proc = subprocess.run(
        ["bash", "-c", cmd.text],
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=300,
        check=False,
    )
    text = proc.stdout.decode("utf-8", errors="backslashreplace").replace(str(work), "<TMP>")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def line_matches(expected: str, actual: str) -> bool:
    if not any(p in expected for p in PLACEHOLDERS):
        return expected == actual
    pattern = "".join(
        PLACEHOLDERS.get(part, re.escape(part)) for part in re.split("(" + "|".join(PLACEHOLDERS) + ")", expected)
    )
    return re.fullmatch(pattern, actual) is not None


def matches(expected: list[str], actual: list[str]) -> bool:
    return len(expected) == len(actual) and all(line_matches(e, a) for e, a in zip(expected, actual, strict=True))


def first_difference(expected: list[str], actual: list[str]) -> str:
    for n, (e, a) in enumerate(zip(expected, actual, strict=False)):
        if not line_matches(e, a):
            return f"output line {n + 1}:\n    shown:  {e!r}\n    actual: {a!r}"
    extra = (actual + expected)[min(len(expected), len(actual))]
    return f"{len(expected)} lines shown, {len(actual)} printed; first extra: {extra!r}"


def rewrite(path: Path, fixes: list[tuple[Command, list[str]]], roff: bool) -> None:
    """Replace the shown output of each command in `fixes`, bottom up; a
    line that still matches (a placeholder, say) is kept as written."""
    src = path.read_text(encoding="utf-8").splitlines()
    for cmd, actual in sorted(fixes, key=lambda f: f[0].out_start, reverse=True):
        old = src[cmd.out_start : cmd.out_end]
        new = []
        for n, a in enumerate(actual):
            if n < len(cmd.expected) and n < len(old) and line_matches(cmd.expected[n], a):
                new.append(old[n])
            else:
                new.append(roff_escape(a) if roff else a)
        src[cmd.out_start : cmd.out_end] = new
    path.write_text("\n".join(src) + "\n", encoding="utf-8")
