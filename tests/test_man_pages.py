"""The man pages in man/ document the command line as Click defines it.

Every command and subcommand reachable from `ripple_cli.cli.main.cli` is
walked (LazyGroup.get_command loads them), and every option string of every
option (except -h/--help) must be documented in that command's page:
man/ripple.1 for the group itself, man/ripple-CMD.1 for a command and its
subcommands (ripple-schema.1 for `schema show/check/extract`, each in its
own `.SS ripple schema SUB` subsection of OPTIONS).  An option is documented
when it is the tag of a `.TP` entry in the OPTIONS section; that entry must
also name every choice of a Choice option, a string default shown by
`--help`, and say "Required" for a required option.

The pages must render without a warning, with groff and with man, when
either is installed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from ripple_cli.cli.main import cli
from ripple_cli.codec.problems import CAPTURE_KINDS, KINDS
from ripple_cli.errors import EXIT_CODES
from ripple_cli.tap.notes import TAP_KINDS

ROOT = Path(__file__).resolve().parent.parent
MAN = ROOT / "man"
HELP_OPTS = frozenset(("-h", "--help"))
REQUIRED_SECTIONS = ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "EXAMPLES", "SEE ALSO")


# ---------------------------------------------------------------- the CLI


def walk(
    cmd: click.Command, path: tuple[str, ...], parent: click.Context | None
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, cmd
    if isinstance(cmd, click.Group):
        ctx = click.Context(cmd, info_name=path[-1], parent=parent)
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            assert sub is not None, f"`{' '.join(path)}` lists the command {name!r} but cannot load it"
            yield from walk(sub, (*path, name), ctx)


COMMANDS = dict(walk(cli, ("ripple",), None))


def page_name(path: tuple[str, ...]) -> str:
    return "ripple.1" if len(path) == 1 else f"ripple-{path[1]}.1"


PAGES = sorted({page_name(p) for p in COMMANDS})
# Pages that hold several commands give each its own subsection of OPTIONS.
_PATHS_BY_PAGE: dict[str, list[tuple[str, ...]]] = {}
for _p in COMMANDS:
    _PATHS_BY_PAGE.setdefault(page_name(_p), []).append(_p)


def documented_options(cmd: click.Command) -> list[click.Option]:
    return [p for p in cmd.params if isinstance(p, click.Option) and not set(p.opts) <= HELP_OPTS]


def option_strings(opt: click.Option) -> list[str]:
    return [s for s in (*opt.opts, *opt.secondary_opts) if s not in HELP_OPTS]


OPTION_CASES = [
    pytest.param(path, opt, id=f"{' '.join(path)} {'/'.join(opt.opts)}")
    for path, cmd in COMMANDS.items()
    for opt in documented_options(cmd)
]


# ---------------------------------------------------------------- the pages


def plain(roff: str) -> str:
    """Roff source with the escapes that matter here resolved, so that
    `\\fB\\-\\-format\\fR` reads as `--format`."""
    s = re.sub(r"\\f(\[[^\]]*\]|\(..|.)", "", roff)
    for esc, text in (("\\-", "-"), ("\\&", ""), ("\\%", ""), ("\\(dq", '"'), ("\\(aq", "'"), ("\\e", "\\")):
        s = s.replace(esc, text)
    return s


def macro_args(line: str) -> str:
    """The text of a line: a macro line without its macro and its quotes."""
    if line.startswith((".", "'")):
        _, _, rest = line.partition(" ")
        return rest.replace('"', " ").strip()
    return line


@dataclass
class Entry:
    tag: str
    body: str


@dataclass
class Page:
    name: str
    lines: list[str]  # plain text, one per source line

    @classmethod
    def load(cls, name: str) -> Page:
        path = MAN / name
        assert path.is_file(), f"man/{name} does not exist"
        return cls(name, plain(path.read_text(encoding="utf-8")).splitlines())

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def section(self, title: str) -> list[str]:
        """The lines of `.SH TITLE`, up to the next `.SH`."""
        out: list[str] | None = None
        for line in self.lines:
            if line.startswith(".SH"):
                if out is not None:
                    break
                if macro_args(line) == title:
                    out = []
                continue
            if out is not None:
                out.append(line)
        assert out is not None, f"man/{self.name} has no section .SH {title}"
        return out

    def section_titles(self) -> list[str]:
        return [macro_args(line) for line in self.lines if line.startswith(".SH")]


def subsection(lines: list[str], title: str) -> list[str] | None:
    out: list[str] | None = None
    for line in lines:
        if line.startswith(".SS"):
            if out is not None:
                break
            if macro_args(line) == title:
                out = []
            continue
        if out is not None:
            out.append(line)
    return out


_END_OF_ENTRY = (".TP", ".SS", ".SH", ".PP", ".LP", ".P")


def entries(lines: list[str]) -> list[Entry]:
    """The `.TP` entries: the tag line and the body after it."""
    found: list[Entry] = []
    i = 0
    while i < len(lines):
        if lines[i].split(" ")[0] == ".TP" and i + 1 < len(lines):
            tag = macro_args(lines[i + 1])
            j = i + 2
            while j < len(lines) and lines[j].split(" ")[0] not in _END_OF_ENTRY:
                j += 1
            found.append(Entry(tag, "\n".join(macro_args(x) for x in lines[i + 2 : j])))
            i = j
        else:
            i += 1
    return found


def mentions(text: str, word: str) -> bool:
    return re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", text) is not None


def options_entries(page: Page, path: tuple[str, ...]) -> tuple[str, list[Entry]]:
    """Where the options of the command at `path` are documented."""
    options = page.section("OPTIONS")
    if len(_PATHS_BY_PAGE[page.name]) == 1:
        return "OPTIONS", entries(options)
    title = " ".join(path)
    sub = subsection(options, title)
    assert sub is not None, f"man/{page.name} has no subsection `.SS {title}` under OPTIONS"
    return f"OPTIONS, .SS {title}", entries(sub)


# ---------------------------------------------------------------- tests


def test_commands_were_found() -> None:
    # The walk itself is tested: a broken LazyGroup would silently test nothing.
    assert {
        "ripple decode",
        "ripple encode",
        "ripple verify",
        "ripple schema show",
        "ripple schema check",
        "ripple schema extract",
    } <= {" ".join(p) for p in COMMANDS}
    assert len(OPTION_CASES) > 10


@pytest.mark.parametrize("name", PAGES)
def test_page_exists_and_has_the_sections(name: str) -> None:
    page = Page.load(name)
    th = next((line for line in page.lines if line.startswith(".TH")), None)
    assert th is not None, f"man/{name} has no .TH line"
    title, section = macro_args(th).split()[:2]
    assert (title, section) == (name.removesuffix(".1").upper(), "1"), f"man/{name}: .TH says {title}({section})"
    titles = page.section_titles()
    missing = [s for s in REQUIRED_SECTIONS if s not in titles]
    assert not missing, f"man/{name} lacks the sections {missing}"
    assert mentions(page.text, name.removesuffix(".1")), f"man/{name}: NAME does not name the page"


@pytest.mark.parametrize("name", PAGES)
def test_page_source_is_ascii(name: str) -> None:
    # Glyphs are written as \[uXXXX] escapes, which every renderer reads.
    data = (MAN / name).read_bytes()
    bad = next((i for i, b in enumerate(data) if b > 0x7F), None)
    assert bad is None, f"man/{name}: non-ASCII byte at offset {bad}"


@pytest.mark.parametrize(("path", "opt"), OPTION_CASES)
def test_every_option_is_documented(path: tuple[str, ...], opt: click.Option) -> None:
    name = page_name(path)
    page = Page.load(name)
    command = " ".join(path)
    for s in option_strings(opt):
        assert mentions(page.text, s), f"`{command}`: option {s} does not appear in man/{name}"
    where, found = options_entries(page, path)
    entry = next((e for e in found if any(mentions(e.tag, s) for s in option_strings(opt))), None)
    assert entry is not None, f"`{command}`: option {'/'.join(opt.opts)} has no .TP entry under {where} in man/{name}"
    for s in option_strings(opt):
        assert mentions(entry.tag, s), (
            f"`{command}`: the .TP tag {entry.tag!r} in man/{name} lacks the option string {s}"
        )
    text = entry.tag + "\n" + entry.body
    if isinstance(opt.type, click.Choice):
        for choice in opt.type.choices:
            assert re.search(r"(?<![\w-])" + re.escape(str(choice)) + r"(?![\w-])", text, re.IGNORECASE), (
                f"`{command}`: the entry of {opt.opts[-1]} in man/{name} does not name the choice {choice!r}"
            )
    shown = opt.show_default if isinstance(opt.show_default, str) else None
    if opt.show_default is True and isinstance(opt.default, str):
        shown = opt.default
    if shown is not None:
        assert shown in text, (
            f"`{command}`: the entry of {opt.opts[-1]} in man/{name} does not give the default {shown}"
        )
    if opt.required:
        assert "Required" in text, f"`{command}`: the entry of {opt.opts[-1]} in man/{name} does not say Required"


@pytest.mark.parametrize("path", [p for p in COMMANDS if len(p) == 2], ids=" ".join)
def test_overview_names_every_command(path: tuple[str, ...]) -> None:
    page = Page.load("ripple.1")
    assert mentions("\n".join(page.section("COMMANDS")), path[1]), f"man/ripple.1: COMMANDS lacks {path[1]}"
    assert f"ripple-{path[1]}" in "\n".join(page.section("SEE ALSO")), f"man/ripple.1: SEE ALSO lacks ripple-{path[1]}"


def test_overview_lists_every_exit_code() -> None:
    tags = {e.tag for e in entries(Page.load("ripple.1").section("EXIT STATUS"))}
    missing = sorted(code for code in EXIT_CODES if str(code) not in tags)
    assert not missing, f"man/ripple.1: EXIT STATUS has no entry for the exit codes {missing} (errors.py EXIT_CODES)"


def test_environment_variables_are_documented() -> None:
    env_section = "\n".join(Page.load("ripple.1").section("ENVIRONMENT"))
    names = {"NO_COLOR", "RIPPLE_DEBUG", "COLUMNS"}
    for path, cmd in COMMANDS.items():
        for opt in documented_options(cmd):
            for var in [opt.envvar] if isinstance(opt.envvar, str) else list(opt.envvar or ()):
                names.add(var)
                assert mentions(Page.load(page_name(path)).text, var), (
                    f"`{' '.join(path)}`: {opt.opts[-1]} reads ${var}, which man/{page_name(path)} does not mention"
                )
    missing = sorted(n for n in names if not mentions(env_section, n))
    assert not missing, f"man/ripple.1: ENVIRONMENT does not document {missing}"


def test_verify_lists_every_problem_kind() -> None:
    tags = {e.tag for e in entries(Page.load("ripple-verify.1").section("PROBLEM KINDS"))}
    missing = sorted(k for k in {**KINDS, **CAPTURE_KINDS} if k not in tags)
    assert not missing, f"man/ripple-verify.1: PROBLEM KINDS has no entry for {missing} (problems.py)"


def test_tap_lists_its_note_kinds() -> None:
    notes = subsection(Page.load("ripple-tap.1").section("DESCRIPTION"), "Notes")
    assert notes is not None, "man/ripple-tap.1: DESCRIPTION has no .SS Notes"
    tags = {e.tag for e in entries(notes)}
    assert tags == set(TAP_KINDS), (
        f"man/ripple-tap.1: Notes lists {sorted(tags)}, tap/notes.py TAP_KINDS {sorted(TAP_KINDS)}"
    )


def test_tap_note_kinds_are_the_ones_emitted() -> None:
    """Every kind the tap's code names is in TAP_KINDS, and no more."""
    root = Path(__file__).resolve().parent.parent / "ripple_cli" / "tap"
    source = "\n".join(p.read_text() for p in [*root.glob("*.py"), *root.glob("*.c")] if p.name != "notes.py")
    named = set(re.findall(r'(?:\.note\(\s*|note\(r, |CaptureNote\(\s*None,\s*[^,]+,\s*)"([a-z_]+)"', source))
    assert named == set(TAP_KINDS)


# ---------------------------------------------------------------- rendering


def _render(argv: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MANWIDTH": "80", "MANPAGER": "cat", "PAGER": "cat", "LC_ALL": "C.UTF-8"}
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)


RENDERERS = [
    pytest.param(["groff", "-man", "-Tutf8", "-ww", "-z"], id="groff"),
    pytest.param(["man", "--warnings", "-l"], id="man"),
]


@pytest.mark.parametrize("renderer", RENDERERS)
@pytest.mark.parametrize("name", PAGES)
def test_page_renders_without_warnings(renderer: list[str], name: str) -> None:
    if not (shutil.which("groff") or shutil.which("man")):
        pytest.skip("neither groff nor man is installed")
    if not shutil.which(renderer[0]):
        pytest.skip(f"{renderer[0]} is not installed (the other renderer checks the pages)")
    proc = _render([*renderer, str(MAN / name)])
    assert proc.returncode == 0, f"{renderer[0]} failed on man/{name}: {proc.stderr.strip()}"
    assert proc.stderr == "", f"{renderer[0]} warns about man/{name}:\n{proc.stderr}"
    if renderer[0] == "man":
        assert "SYNOPSIS" in proc.stdout, f"man -l man/{name} printed no SYNOPSIS"


# ---------------------------------------------------------------- help reads well


def help_text(path: tuple[str, ...], width: int = 100) -> str:
    ctx: click.Context | None = None
    for i in range(1, len(path) + 1):
        ctx = click.Context(
            COMMANDS[path[:i]], info_name=path[i - 1], parent=ctx, terminal_width=width, max_content_width=width
        )
    assert ctx is not None
    return ctx.command.get_help(ctx)


@pytest.mark.parametrize("path", list(COMMANDS), ids=" ".join)
def test_help_shows_metavars_and_defaults_plainly(path: tuple[str, ...]) -> None:
    text = help_text(path)
    for bad in ("INTEGER RANGE", "FLOAT RANGE", "[default: ("):
        assert bad not in text, f"`{' '.join(path)} --help` shows {bad!r}:\n{text}"


# ---------------------------------------------------------------- names that exist
#
# The other way round: every `--option` that help text or a man page names
# is an option of that command (or of `ripple` itself), or is written as
# another command's (`decode --list-protocols`, `ripple tap ... --listen`),
# or follows another program's name on its line (`nc -l`, `tcpdump -w`).

OTHER_PROGRAMS = frozenset(
    [
        "tcpdump",
        "tshark",
        "wireshark",
        "jq",
        "nc",
        "netcat",
        "ncat",
        "socat",
        "pip",
        "pipx",
        "python",
        "python3",
        "spark-submit",
        "git",
        "make",
        "man",
        "groff",
        "curl",
        "ssh",
        "sudo",
        "node",
        "npm",
        "head",
        "tail",
        "sort",
        "cut",
        "xargs",
        "bash",
        "sh",
        "date",
        "timeout",
        "mkfifo",
        "ocaml",
        "dune",
        "sed",
        "awk",
        "grep",
        "rstmdb",
    ]
)
_OPTION = re.compile(r"(?<![\w./=-])--[a-z][a-z0-9-]*")
_WORD = re.compile(r"[A-Za-z_][\w.-]*")


def command_options(path: tuple[str, ...]) -> set[str]:
    """The option strings of a command, and of its subcommands."""
    out: set[str] = set(HELP_OPTS)
    for p, cmd in COMMANDS.items():
        if p[: len(path)] == path:
            for param in cmd.params:
                if isinstance(param, click.Option):
                    out.update(param.opts, param.secondary_opts)
    return out


GLOBAL = {s for p in COMMANDS[("ripple",)].params if isinstance(p, click.Option) for s in (*p.opts, *p.secondary_opts)}
TOP = {p[1] for p in COMMANDS if len(p) == 2}


def owner(line: str, at: int, own: tuple[str, ...]) -> tuple[str, ...] | None:
    """Whose option the one at `at` is: the nearest program named before it
    on its line (`ripple CMD`, a bare command name, another program: None),
    else the text's own command."""
    start = max((m.end() for m in re.finditer(r"[.;:)](?:\s|$)", line[:at])), default=0)  # this sentence
    words = list(_WORD.finditer(line, start, at))
    for i in range(len(words) - 1, max(-1, len(words) - 9), -1):  # within 8 words
        w = words[i].group()
        if w in OTHER_PROGRAMS:
            return None
        if w in TOP:
            prev = words[i - 1].group() if i else ""
            nxt = words[i + 1].group() if i + 1 < len(words) else ""
            if prev == "ripple" or line[words[i].end() : words[i].end() + 2] == " -" or nxt in ("show", "check"):
                return ("ripple", w)
    return own


def unknown_options(text: str, own: tuple[str, ...]) -> list[str]:
    bad = []
    for line in text.splitlines():
        for m in _OPTION.finditer(line):
            who = owner(line, m.start(), own)
            if who is None:
                continue
            known = command_options(who) | GLOBAL
            if m.group() not in known:
                bad.append(f"{m.group()} (as an option of `{' '.join(who)}`) in: {line.strip()}")
    return bad


@pytest.mark.parametrize("path", list(COMMANDS), ids=" ".join)
def test_help_names_only_options_that_exist(path: tuple[str, ...]) -> None:
    bad = unknown_options(help_text(path, width=100_000), path)  # a paragraph a line
    assert not bad, f"`{' '.join(path)} --help` names options that do not exist:\n" + "\n".join(bad)


MAN_PAGES = sorted(p.name for p in MAN.glob("ripple*.[17]"))


@pytest.mark.parametrize("name", MAN_PAGES)
def test_man_page_names_only_options_that_exist(name: str) -> None:
    stem = name.rsplit(".", 1)[0]
    cmd = stem.removeprefix("ripple-") if stem != "ripple" else ""
    own = ("ripple", cmd) if cmd in TOP else ("ripple",)
    # A paragraph is one line: `.BR decode` and `\-\-list\-streams` are often on two.
    paragraphs, cur = [], []
    for line in Page.load(name).lines:
        if line.startswith('.\\"'):
            continue
        if line.split(" ")[0] in (*_END_OF_ENTRY, ".IP", ".RS", ".RE", ".EX", ".EE", ""):
            paragraphs.append(" ".join(cur))
            cur = []
        cur.append(macro_args(line))
    paragraphs.append(" ".join(cur))
    bad = unknown_options("\n".join(paragraphs), own)
    assert not bad, f"man/{name} names options that do not exist:\n" + "\n".join(bad)


def test_the_option_check_itself() -> None:
    verify = ("ripple", "verify")
    assert unknown_options("auto, or one protocol of --list-protocols.", verify)
    assert not unknown_options("auto, or one protocol of ripple decode --list-protocols.", verify)
    assert not unknown_options("see decode --list-streams; --allow-empty, --color", verify)
    assert not unknown_options("then nc -l --keep-open 9000", verify)
    assert unknown_options("ripple replay --protocol x", verify)
