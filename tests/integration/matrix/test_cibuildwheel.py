"""The plan's cibuildwheel selectors select exactly the planned wheels in the real cibuildwheel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.matrix import example_files, sample_matrix_path

from xcompat.matrix import load_matrix
from xcompat.matrix.plan import cibuildwheel_selectors, expand, installed_cibuildwheel_major

CIBW = shutil.which(
    "cibuildwheel", path=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
)
pytestmark = pytest.mark.skipif(
    CIBW is None, reason="cibuildwheel is not installed (pip install xcompat[build])"
)


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "p"\nversion = "0"\nrequires-python = ">=3.9"\n'
    )
    return project


@pytest.mark.parametrize("path", [sample_matrix_path(), *example_files("positive")], ids=lambda p: p.name)
def test_selectors_match_print_build_identifiers(tmp_path, path):
    m = load_matrix(path)
    doc = cibuildwheel_selectors(m, expand(m))
    assert doc["cibuildwheel_major"] == installed_cibuildwheel_major()
    project = _project(tmp_path)
    checked = 0
    for platform, sel in doc["platforms"].items():
        env = {k: v for k, v in os.environ.items() if not k.startswith("CIBW_")}
        env.update(sel["env"])
        proc = subprocess.run(
            [CIBW, "--print-build-identifiers", "--platform", platform, str(project)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert sorted(proc.stdout.split()) == sorted(sel["identifiers"]), platform
        checked += 1
    assert checked == len(doc["platforms"]) >= 1
