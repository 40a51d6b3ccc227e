"""`ripple wireshark` itself: every dissector in one file (--protocol all)
loads and finds each bundled capture's messages, the file is the same on
stdout and with -o, and bad inputs are one line and exit status 3."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, run_cli
from tests.wireshark.tsharkkit import jsonl, require_tshark, tshark

# A bundled capture of each protocol, and the dissector's name in tshark.
CAPTURES = {
    "capture.pcap": "ripple",
    "beats.pcap": "lumberjack",
    "rstmdb.pcap": "rcp",
    "pravega.pcap": "pravega",
    "streams.pcap": "rs",
}


@pytest.fixture(scope="module")
def everything(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_tshark()
    path = tmp_path_factory.mktemp("ws-all") / "all.lua"
    r = run_cli(["wireshark", "--protocol", "all", "--schemas", str(EXAMPLES / "schemas"), "-o", str(path)])
    assert (r.code, r.stdout, r.stderr) == (0, b"", "")
    return path


@pytest.mark.parametrize(("name", "proto"), CAPTURES.items())
def test_one_file_for_every_protocol(everything: Path, name: str, proto: str) -> None:
    pcap = EXAMPLES / name
    # Top-level messages only: Lumberjack's compressed frames hold none here.
    want = len([d for d in jsonl(pcap) if "problem" not in d and "in_compressed" not in d])
    out = tshark(everything, pcap, "-T", "fields", "-e", "frame.protocols", "-e", f"{proto}.type", "-Y", proto)
    count = 0
    for line in out.splitlines():
        protocols, shown = line.split("\t")
        assert protocols.split(":").count(proto) >= 1
        count += len(shown.split(","))
    assert count == want


def test_stdout_and_output_file_are_the_same(tmp_path: Path) -> None:
    path = tmp_path / "ripple.lua"
    to_file = run_cli(["wireshark", str(EXAMPLES / "capture.pcap"), "-o", str(path)])
    to_stdout = run_cli(["wireshark", str(EXAMPLES / "capture.pcap")])
    assert to_file.code == to_stdout.code == 0
    assert to_stdout.stdout == path.read_bytes()
    assert b'["vwap/v2"] = {name = "vwap", version = 2,' in to_stdout.stdout


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["missing.pcap"], "ripple: missing.pcap: no such file\n"),
        (["--schemas", "missing"], "ripple: missing: no such schema directory or file\n"),
    ],
)
def test_bad_inputs(args: list[str], line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    r = run_cli(["wireshark", *args])
    assert (r.code, r.stdout, r.stderr) == (3, b"", line)


def test_inputs_without_a_schema_say_so(tmp_path: Path) -> None:
    """The dissector is written (exit 0), with one line saying its Deltas
    will be raw bytes: the inputs held no Handshake."""
    path = tmp_path / "noise.bin"
    path.write_bytes(bytes(range(256)) * 4)
    r = run_cli(["wireshark", str(path), "-o", str(tmp_path / "r.lua")])
    assert (r.code, r.stderr) == (0, f"ripple: wireshark: no schema in {path}: Deltas show as raw bytes\n")
    assert (tmp_path / "r.lua").read_text().startswith("--")
