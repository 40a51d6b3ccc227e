"""Start-up: a plain `verify` or `decode -F sexp` of a Ripple stream imports
only what it uses (issue 13).  A CI job verifying many small files pays
Python's start-up and little more, so rich, Spark, pyarrow, the sibling
dissectors, the batch code and the tap stay unloaded; detection still
finds the siblings when the bytes are theirs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ripple_cli.codec.fast import pure_requested
from tests.conftest import EXAMPLES, ROOT

SIBLINGS = (
    "ripple_cli.protocols.lumberjack",
    "ripple_cli.protocols.rcp",
    "ripple_cli.protocols.pravega",
    "ripple_cli.protocols.reactive_streams",
)
# shutil (which imports bz2 and lzma) and base64: a few ms of every start,
# for a terminal's width and base64 text that binascii and os give as well.
# (The pure lane's crc32c package reads its own metadata, which imports them.)
STDLIB = () if pure_requested() else ("shutil", "bz2", "lzma", "base64")
UNWANTED = ("rich", "pyarrow", "pyspark", "ripple_cli.batch", "ripple_cli.tap", *SIBLINGS, *STDLIB)

# Runs the CLI as the `ripple` script and `python -m ripple_cli` do, then
# prints the modules loaded, the exit status and the collector's state as
# JSON on stderr's last line.
CHILD = """
import gc, json, sys
from ripple_cli.cli.entry import main
code = 0
try:
    main()
except SystemExit as e:
    code = e.code
sys.stdout.flush()
gc_state = [gc.isenabled(), gc.get_freeze_count()]
sys.stderr.write("\\n" + json.dumps({"code": code, "modules": sorted(sys.modules), "gc": gc_state}) + "\\n")
"""


def child(args: list[str]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [sys.executable, "-c", CHILD, *args], capture_output=True, env=env, cwd=ROOT, check=False, timeout=120
    )
    report: dict[str, Any] = json.loads(r.stderr.decode().splitlines()[-1])
    return report


def loaded(args: list[str]) -> tuple[int, set[str]]:
    report = child(args)
    return report["code"], set(report["modules"])


def test_the_command_is_imported_with_the_collector_off_and_it_is_on_again(empty: Path) -> None:
    """entry.py: the command's modules imported (and frozen) before the
    collector is on again for the command's own work."""
    report = child(["verify", "--allow-empty", str(empty)])
    assert report["code"] == 0
    enabled, frozen = report["gc"]
    assert enabled and frozen > 10_000
    assert "ripple_cli.cli.commands.verify" in report["modules"]


def unwanted(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == u or m.startswith(u + ".") for u in UNWANTED))


@pytest.fixture
def empty(tmp_path: Path) -> Path:
    path = tmp_path / "empty.ripple"
    path.write_bytes(b"")
    return path


def test_verify_of_a_ripple_stream_loads_nothing_it_does_not_use() -> None:
    code, modules = loaded(["verify", str(EXAMPLES / "demo.ripple")])
    assert code == 1  # the demo's Deltas before their schema
    assert "ripple_cli.protocols.ripple" in modules  # detected and decoded as Ripple
    assert unwanted(modules) == []


def test_verify_of_an_empty_file_loads_nothing_it_does_not_use(empty: Path) -> None:
    code, modules = loaded(["verify", str(empty)])
    assert code == 1  # no message: a problem unless --allow-empty
    assert unwanted(modules) == []


def test_decode_sexp_of_a_ripple_stream_loads_nothing_it_does_not_use() -> None:
    code, modules = loaded(["decode", "-F", "sexp", str(EXAMPLES / "demo.ripple")])
    assert code == 0
    assert unwanted(modules) == []


@pytest.mark.parametrize(
    ("capture", "sibling"),
    [
        ("beats.pcap", "lumberjack"),
        ("rstmdb.pcap", "rcp"),
        ("pravega.pcap", "pravega"),
    ],
)
def test_detection_still_finds_the_siblings(capture: str, sibling: str) -> None:
    code, modules = loaded(["decode", "-F", "sexp", str(EXAMPLES / capture)])
    assert code == 0
    assert f"ripple_cli.protocols.{sibling}" in modules


def test_a_raw_sibling_stream_is_still_detected() -> None:
    """Ripple is asked first and says no; the next dissectors are then imported."""
    code, modules = loaded(["decode", "-F", "sexp", str(EXAMPLES / "v1.lj")])
    assert code == 0
    assert "ripple_cli.protocols.lumberjack" in modules


def _handshake_of(schemas: int) -> bytes:
    from tests.hostile.bombs import many_schemas

    return many_schemas(schemas)


def test_a_ripple_stream_whose_handshake_outgrows_a_read_is_ripple_at_once(tmp_path: Path) -> None:
    """A Handshake longer than what detection first holds (1 MiB read):
    its header and fixed fingerprint decide, so the siblings are neither
    imported nor asked again as the head grows."""
    path = tmp_path / "long-handshake.ripple"
    data = _handshake_of(50_000)
    assert len(data) > 1 << 20
    path.write_bytes(data)
    code, modules = loaded(["decode", "-F", "sexp", str(path)])
    assert code == 0
    assert unwanted(modules) == []


def test_only_a_fixed_fingerprint_header_decides_before_its_crc() -> None:
    from ripple_cli.codec.envelope import HEADER, HEADER_SIZE
    from ripple_cli.protocols.base import Detection
    from ripple_cli.protocols.ripple import RippleDissector

    detect = RippleDissector().detect
    whole = _handshake_of(200)
    head = whole[: HEADER_SIZE + 100]
    assert detect(head) is Detection.YES
    assert detect(whole[: HEADER_SIZE - 1]) is Detection.MORE  # no header yet
    fields = list(HEADER.unpack_from(whole))
    for i, value in ((2, 1), (3, 1), (6, b"ripple.heartbeat/v1".ljust(32, b"\0")), (1, 2), (7, 40)):
        changed = fields.copy()
        changed[i] = value  # a Delta, flags, another type's fingerprint, a version, a length it already holds
        altered = HEADER.pack(*changed) + head[HEADER_SIZE:]
        assert detect(altered) is Detection.MORE, i
