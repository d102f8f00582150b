"""The import probe imports what is installed, never a same-named folder in the working folder
(a project's checkout holds its package's sources, which would shadow the wheel)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from xcompat.contracts.import_probe import probe_imports


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the import probe reads /proc (Linux only)")
def test_a_checkout_in_the_working_folder_does_not_shadow_the_installed_package(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch):
    checkout = tmp_path / "checkout"
    (checkout / "shadowed_pkg").mkdir(parents=True)
    (checkout / "shadowed_pkg" / "__init__.py").write_text("raise ImportError('the checkout, not the wheel')\n")
    site = tmp_path / "site"
    (site / "shadowed_pkg").mkdir(parents=True)
    (site / "shadowed_pkg" / "__init__.py").write_text("VALUE = 1\n")
    monkeypatch.chdir(checkout)
    result = probe_imports(["shadowed_pkg"], paths=[site])
    assert result["status"] == "passed", result.get("summary")
