"""The commands on Reactive Streams files: decode (detected, or asked with
--protocol), encode back to the same bytes, verify's exit status on a
fixture breaking each rule and on clean ones, -Y and --type on its fields."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rs_bytes import CLEAN, CLEAN_WARNINGS, VIOLATIONS, cancel, client_hello, on_next

from tests.conftest import GOLDEN, run_cli
from tests.protocols.dissector_kit import decode_then_encode

DIR = GOLDEN / "protocols" / "reactive_streams"
P = ["--protocol", "reactive-streams"]
ALL = sorted(p.stem for p in DIR.glob("*.bin"))
# Detection takes a stream that starts with a hello of version 0 and whose
# first 4 KiB decode without an error; the others need --protocol.
UNDETECTED = {
    "odd",
    "clean-version_mismatch_answered",
    "clean-version_agreed",
    "verify-version_mismatch",
    "verify-before_hello",
}


def path(name: str) -> str:
    return str(DIR / f"{name}.bin")


def test_fixtures_are_there() -> None:
    assert len(ALL) == 2 + len(CLEAN) - 1 + len(VIOLATIONS)


@pytest.mark.parametrize("name", ALL)
def test_decode_prints_the_golden_text_and_encode_gives_the_bytes_back(name: str) -> None:
    r, back = decode_then_encode([*P, path(name)])
    assert r.stdout == (DIR / f"{name}.sexp").read_bytes()
    assert r.code == (1 if name == "odd" else 0)
    assert back.code == 0, back.stderr
    assert back.stdout == (DIR / f"{name}.bin").read_bytes()


@pytest.mark.parametrize("name", [n for n in ALL if n not in UNDETECTED])
def test_decode_detects_the_protocol(name: str) -> None:
    assert run_cli(["decode", path(name)]).stdout == (DIR / f"{name}.sexp").read_bytes()


@pytest.mark.parametrize("rule", sorted(VIOLATIONS))
def test_verify_fails_on_each_broken_rule(rule: str) -> None:
    r = run_cli(["verify", *P, "-F", "json", path(f"verify-{rule}")])
    assert r.code == 1
    (stream,) = json.loads(r.stdout)["streams"]
    assert [(p["offset"], p["kind"]) for p in stream["problems"]] == VIOLATIONS[rule][1]


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_verify_passes_clean_conversations(name: str) -> None:
    file = path(name if name == "conversation" else f"clean-{name}")
    r = run_cli(["verify", *P, "-F", "json", file])
    assert r.code == 0, r.stdout
    (stream,) = json.loads(r.stdout)["streams"]
    assert [(p["offset"], p["kind"], p["severity"]) for p in stream["problems"]] == [
        (o, k, "warning") for o, k in CLEAN_WARNINGS.get(name, [])
    ]
    # Warnings are problems under --strict.
    strict = run_cli(["verify", *P, "--strict", file])
    assert strict.code == (1 if name in CLEAN_WARNINGS else 0)


def test_verify_text_report() -> None:
    r = run_cli(["verify", *P, path("verify-demand_exceeded")])
    assert r.code == 1
    assert r.text.splitlines()[1:] == [
        "  error: offset 18: demand_exceeded: OnNext of an element for subscriber 1 beyond its demand: "
        "0 outstanding (1 granted, 1 delivered)",
        "verify: 1 stream, 6 messages, 1 problem",
    ]


def test_filter_on_fields() -> None:
    r = run_cli(["decode", "-Y", "subscriber == 2 and type == OnNext", path("conversation")])
    assert r.text == '(reactive-streams(OnNext((subscriber 2)(element_size 4)(element"\\000\\000\\000*"))))\n'
    r = run_cli(["decode", "-Y", "demand >= 9223372036854775807", path("conversation")])
    assert r.text == "(reactive-streams(Request((subscriber 1)(demand 9223372036854775807))))\n"
    r = run_cli(["decode", "-Y", 'publisher contains "trades"', path("conversation")])
    assert r.text.count("Subscribe") == 2
    r = run_cli(["decode", "--type", "OnNextLastPart", "-F", "jsonl", path("conversation")])
    (row,) = [json.loads(line) for line in r.text.splitlines()]
    assert (row["type"], row["parts"], row["element"]) == ("OnNextLastPart", 3, "hello, split world")


def test_table_summaries() -> None:
    r = run_cli(["decode", "-F", "table", "-c", "6", path("conversation")], width=160)
    assert [line.split()[-1] for line in r.text.splitlines()[2:]] == ["1,300", "1", "0", "length-prefixed", "+3",
                                                                     '"{\\"px\\":101.5}"']  # fmt: skip


def test_list_protocols() -> None:
    r = run_cli(["decode", "--list-protocols"], width=200)
    row = next(line for line in r.text.splitlines() if line.startswith("reactive-streams"))
    assert row.split()[1] == "7373"
    assert row.rstrip().endswith("ripple-reactive-streams(7)")


def test_encode_error_is_one_line() -> None:
    r = run_cli(["encode"], stdin=b"(reactive-streams(Request((subscriber 1))))\n")
    assert r.code != 0
    assert r.stdout == b""
    assert r.stderr == "ripple: <stdin>: line 1: reactive-streams: Request: missing field demand\n"


def test_max_payload_bounds_a_field(tmp_path: Path) -> None:
    data = client_hello() + on_next(1, bytes(40)) + cancel(1)
    file = tmp_path / "big.bin"
    file.write_bytes(data)
    r = run_cli(["decode", "--max-payload", "16", str(file)])
    assert r.code == 1
    assert r.text.splitlines() == [
        "(reactive-streams(ClientHello((version 0)(extensions()))))",
        "(reactive-streams(Cancel((subscriber 1))))",
    ]
    assert r.stderr == (
        f"ripple: {file}: error: offset 3: OnNext element of 40 bytes is above the maximum of 16; "
        "skipped 43 bytes to offset 46\n"
    )
