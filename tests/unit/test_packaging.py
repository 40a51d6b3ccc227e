"""pyproject.toml as today's setuptools wants it: no deprecation warnings
on install."""

from __future__ import annotations

import tomllib

from tests.conftest import ROOT


def test_license_is_an_spdx_expression() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    # A table ({text = ...}) makes setuptools >= 77 warn on every install.
    assert meta["project"]["license"] == "MIT"
    assert not any(c.startswith("License ::") for c in meta["project"].get("classifiers", []))
    # PEP 639 license expressions need setuptools 77.
    assert "setuptools>=77" in meta["build-system"]["requires"]
