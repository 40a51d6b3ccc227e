"""One broken-pipe rule: when the reader of stdout goes away (`| head`),
every command and every output form ends quietly with 141, as a C tool
killed by SIGPIPE does, through a real shell pipe.

A reader can only go away early if there is more to write than the pipe
holds (64 KiB), so the inputs here make long outputs; a short output
(--list-protocols, stats) is read by `head -n 0`, which exits without
reading, long before ripple has started."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT
from tests.replay.pcap import Connection, build_pcap

DEMO = EXAMPLES / "demo.ripple"
RIPPLE = f"{shlex.quote(sys.executable)} -m ripple_cli"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None or shutil.which("head") is None, reason="needs bash")


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo stream 20 times over: 6000 messages."""
    path = tmp_path_factory.mktemp("pipe") / "big.ripple"
    path.write_bytes(DEMO.read_bytes() * 20)
    return path


def run_piped(tmp: Path, args: str, head: str = "head -1") -> tuple[int, str]:
    """`ripple ARGS | HEAD` in bash, in `tmp`: ripple's exit status, its stderr."""
    script = f"{RIPPLE} {args} 2>err | {head} >/dev/null; echo ${{PIPESTATUS[0]}}"
    proc = subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
        check=True,
    )
    return int(proc.stdout.strip()), (tmp / "err").read_text()


@pytest.mark.parametrize("fmt", ["table", "sexp", "json", "jsonl", "hum"])
def test_decode_every_format(tmp_path: Path, big: Path, fmt: str) -> None:
    assert run_piped(tmp_path, f"decode -F {fmt} {big}", head="head -c 10" if fmt == "json" else "head -1") == (141, "")


def test_decode_table_in_colour(tmp_path: Path, big: Path) -> None:
    assert run_piped(tmp_path, f"--color always decode -F table {big}") == (141, "")


def test_verify(tmp_path: Path) -> None:
    name = "an-empty-stream-with-a-long-name-" * 2 + ".ripple"
    (tmp_path / name).write_bytes(b"")
    # 3000 inputs, a report line each (about 300 KB)
    args = f"verify --allow-empty $(for i in $(seq 3000); do echo {name}; done)"
    assert run_piped(tmp_path, args) == (141, "")
    json_args = args.replace("verify", "verify -F json", 1)
    assert run_piped(tmp_path, json_args, head="head -c 10") == (141, "")  # one line


def test_schema_show(tmp_path: Path) -> None:
    fields = " ".join(f"((name field_number_{i}) (typ Int) (default ()))" for i in range(4000))
    schema = tmp_path / "wide_v1.sexp"
    schema.write_text(f"((name wide) (version 1) (key String) (fields ({fields})))\n")
    for fmt in ("hum", "table"):
        assert run_piped(tmp_path, f"schema show -F {fmt} {schema}") == (141, ""), fmt
    for fmt in ("sexp", "json"):  # one line
        assert run_piped(tmp_path, f"schema show -F {fmt} {schema}", head="head -c 10") == (141, ""), fmt


def test_list_streams(tmp_path: Path) -> None:
    cap = tmp_path / "many.pcap"
    cap.write_bytes(build_pcap([Connection(b"RIPP", client_port=20000 + i) for i in range(2000)], gap_s=0.001))
    for fmt in ("", "-F json"):
        assert run_piped(tmp_path, f"decode --list-streams {fmt} {cap}") == (141, ""), fmt


def test_list_protocols(tmp_path: Path) -> None:
    for fmt in ("", "-F json"):
        assert run_piped(tmp_path, f"decode --list-protocols {fmt}", head="head -n 0") == (141, ""), fmt


def test_help(tmp_path: Path) -> None:
    assert run_piped(tmp_path, "decode --help", head="head -n 0") == (141, "")


def test_stats(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    for fmt in ("table", "json"):
        assert run_piped(tmp_path, f"stats -q -F {fmt} {DEMO}", head="head -n 0") == (141, ""), fmt
