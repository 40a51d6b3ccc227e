"""In CI the C extensions must be there: the tests that compare them with
the pure-Python paths skip without them, which would hide a failed build."""

from __future__ import annotations

import importlib
import os

import pytest

from ripple_cli.codec.fast import pure_requested


@pytest.mark.skipif("CI" not in os.environ or pure_requested(), reason="only in CI, and not under RIPPLE_PURE")
@pytest.mark.parametrize(
    "module", ["ripple_cli.codec.fast._speedups", "ripple_cli.tap._relayloop", "ripple_cli.sources._mapguard"]
)
def test_the_c_extension_was_built(module: str) -> None:
    importlib.import_module(module)
