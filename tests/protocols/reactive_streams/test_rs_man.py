"""man/ripple-reactive-streams.7 documents what the code does: every
problem kind, message type and -Y field; the byte convention (its worked
example decodes as the page says); it renders without a warning."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
from rs_bytes import decode

from ripple_cli.protocols.reactive_streams import FILTER_FIELDS, PROBLEM_KINDS, TYPE_STYLES, ReactiveStreamsDissector
from ripple_cli.protocols.reactive_streams.wire import LAYOUTS
from tests.conftest import ROOT
from tests.protocols.dissector_kit import messages, problems

PAGE = ROOT / "man" / "ripple-reactive-streams.7"
SOURCE = PAGE.read_text("ascii")
# The source without groff's escapes for hyphens and backslashes, as words.
TEXT = SOURCE.replace("\\-", "-").replace("\\[rs]", "\\")


def tp_tags(section: str) -> list[str]:
    body = SOURCE.split(f".SH {section}\n", 1)[1].split("\n.SH ", 1)[0]
    return [line.split()[1] for line in re.findall(r"^\.TP\n(\S.*)$", body, re.MULTILINE)]


def test_every_problem_kind_is_documented() -> None:
    tags = set(tp_tags("PROBLEMS")) | set(tp_tags("VERIFY RULES"))
    assert tags == set(PROBLEM_KINDS)


def test_every_message_type_and_field_is_shown() -> None:
    for name in TYPE_STYLES:
        assert f"(reactive-streams({name}(" in TEXT, name
    fields = SOURCE.split(".SH JSON FIELDS\n", 1)[1].split("\n.SH ", 1)[0]
    names = set()
    for tag in re.findall(r"^\.TP\n\.BR (.*)$", fields, re.MULTILINE):
        names |= {word for unquoted in tag.split('"')[0::2] for word in unquoted.split()}
    assert names == set(FILTER_FIELDS)


def test_the_convention_is_labelled_and_complete() -> None:
    assert "ripple's convention, not an upstream" in TEXT
    assert "7373" in TEXT and str(ReactiveStreamsDissector.ports) == "(7373,)"
    table = SOURCE.split(".SS Type codes\n", 1)[1].split(".SS ", 1)[0]
    for layout in LAYOUTS:
        name = layout.name[0].lower() + layout.name[1:]
        assert re.search(rf"^{layout.code} +{name} ", table, re.MULTILINE), name
    for words in ("unsigned\nLEB128", "Long.MAX_VALUE", "rule 3.17", "version is one byte", "Array of Ids"):
        assert words in TEXT, words


def test_worked_example_decodes_as_described() -> None:
    block = SOURCE.split(".SS A worked example\n", 1)[1].split(".fi", 1)[0]
    data = bytes.fromhex(" ".join(re.findall(r"^ *((?:[0-9a-f]{2} )*[0-9a-f]{2})(?:  |$)", block, re.MULTILINE)))
    items = decode([data])
    assert problems(items) == []
    assert [(m.type, m.fields.get("subscriber")) for m in messages(items)] == [
        ("ClientHello", None),
        ("Subscribe", 1),
        ("Request", 1),
        ("OnSubscribe", 1),
        ("OnNext", 1),
        ("OnNextPacked", 1),
        ("OnNextPart", 1),
        ("OnNextLastPart", 1),
        ("OnComplete", 1),
        ("Goodbye", None),
    ]
    last = messages(items)[7].fields
    assert (last["element_id"], last["element"]) == (7, "abcde")
    assert messages(items)[2].fields["demand"] == (1 << 63) - 1


def test_page_is_ascii_and_listed_in_ripple_1() -> None:
    assert all(b < 0x80 for b in PAGE.read_bytes())
    see_also = (ROOT / "man" / "ripple.1").read_text().split(".SH SEE ALSO", 1)[1]
    assert ".BR ripple\\-reactive\\-streams (7)," in see_also


@pytest.mark.parametrize(
    "renderer", [["groff", "-man", "-Tutf8", "-ww", "-z"], ["man", "--warnings", "-l"]], ids=["groff", "man"]
)
def test_page_renders_without_warnings(renderer: list[str]) -> None:
    if not shutil.which(renderer[0]):
        pytest.skip(f"{renderer[0]} is not installed")
    env = {**os.environ, "MANWIDTH": "80", "MANPAGER": "cat", "PAGER": "cat", "LC_ALL": "C.UTF-8"}
    proc = subprocess.run([*renderer, str(PAGE)], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
