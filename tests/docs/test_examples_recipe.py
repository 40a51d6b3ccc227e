"""The committed example inputs are what their recipe makes, byte for byte
(scripts/make-examples.py; `make examples` rewrites them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def test_examples_equal_what_the_recipe_makes(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make-examples.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    made = sorted(p.name for p in tmp_path.iterdir())
    assert {"damaged.ripple", "workers.pcap", "beats.pcap"} <= set(made)
    differ = [name for name in made if (ROOT / "examples" / name).read_bytes() != (tmp_path / name).read_bytes()]
    assert not differ, f"examples/ differs from scripts/make-examples.py for {differ}: run `make examples`"
