"""Golden-file tests: what each command prints for the bundled example and
for a damaged copy of it.  Regenerate with RIPPLE_UPDATE_GOLDEN=1 after an
intended change, and review the diff."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, golden, run_cli

DEMO = EXAMPLES / "demo.ripple"


def damaged_demo(tmp: Path) -> Path:
    """The example with three kinds of damage at fixed places: a flipped
    payload byte (CRC mismatch), garbage between two envelopes, a cut tail."""
    data = bytearray(DEMO.read_bytes())
    data[931 + 70] ^= 0x01  # inside the payload of the envelope at offset 931
    data[1701:1701] = b"\x00garbage\xffRIPP\x01"  # before the envelope at offset 1701
    data = data[:-40]
    path = tmp / "damaged.ripple"
    path.write_bytes(bytes(data))
    return path


def test_decode_sexp_equals_ocaml_text() -> None:
    # examples/demo.sexp was printed by OCaml's sexplib from the same values.
    r = run_cli(["decode", str(DEMO)])
    assert r.code == 0 and r.stderr == ""
    assert r.stdout == (EXAMPLES / "demo.sexp").read_bytes()


@pytest.mark.parametrize("fmt", ["hum", "json", "jsonl"])
def test_decode_formats(fmt: str) -> None:
    r = run_cli(["decode", "--format", fmt, "-c", "40", "--schemas", str(EXAMPLES / "schemas"), str(DEMO)])
    assert r.code == 0, r.stderr
    golden(f"demo.{fmt}", r.stdout)


def test_decode_table_on_a_terminal() -> None:
    r = run_cli(["decode", "-c", "25", str(DEMO)], tty=True, environ={"NO_COLOR": "1"}, width=120)
    assert r.code == 0
    golden("demo.table", r.stdout)


def test_decode_damaged_sexp(tmp_path: Path) -> None:
    r = run_cli(["decode", "--schemas", str(EXAMPLES / "schemas"), str(damaged_demo(tmp_path))])
    assert r.code == 1
    golden("damaged.sexp", r.stdout)
    golden("damaged.stderr", r.stderr.replace(str(tmp_path), "TMP").encode())


def test_decode_damaged_jsonl(tmp_path: Path) -> None:
    path = damaged_demo(tmp_path)
    r = run_cli(["decode", "--format", "jsonl", "--type", "Heartbeat", str(path)])
    assert r.code == 1
    golden("damaged.jsonl", r.stdout.replace(str(tmp_path).encode(), b"TMP"))


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_verify_damaged(tmp_path: Path, fmt: str) -> None:
    path = damaged_demo(tmp_path)
    junit = tmp_path / "junit.xml"
    r = run_cli(["verify", "--format", fmt, "--junit", str(junit), str(path)])
    assert r.code == 1
    golden(f"damaged.verify.{fmt}", r.stdout.replace(str(tmp_path).encode(), b"TMP"))
    golden("damaged.verify.junit.xml", junit.read_bytes().replace(str(tmp_path).encode(), b"TMP"))


def test_verify_clean_with_schemas() -> None:
    # orders/v3 is the one schema the example's Handshake does not declare.
    r = run_cli(["verify", "--schemas", str(EXAMPLES / "more-schemas"), str(DEMO)])
    assert r.code == 0
    golden("demo.verify.text", r.stdout)


def test_verify_without_the_undeclared_schema() -> None:
    r = run_cli(["verify", str(DEMO)])
    assert r.code == 1
    assert r.text.splitlines()[-1] == "verify: 1 stream, 300 messages, 28 problems"
    assert r.text.count("delta_before_schema: Delta for orders/v3 before its schema is known") == 28
