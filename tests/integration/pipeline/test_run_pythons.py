"""`xcompat run` runs the cells of every Python of the matrix this machine has, each on its own
interpreter, and lists the Pythons it lacks as not run here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from xcompat.interpreters.discover import find_interpreter

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "emulation" / "byteorder_ext"
HERE = f"{sys.version_info.major}.{sys.version_info.minor}"
OTHER = next((v for v in ("3.12", "3.13", "3.10", "3.11") if v != HERE and find_interpreter(v)), None)
MISSING = next((v for v in ("3.14", "3.9", "3.15") if find_interpreter(v) is None), None)

pytestmark = [
    pytest.mark.timeout(900),
    pytest.mark.skipif(OTHER is None, reason="this machine has no second CPython (pyenv, uv-managed or on PATH) "
                       "to run a second cell on"),
]

MATRIX = """\
xcompat: 1
repo: acme/byteorder-ext
serial: 1
python: [{pythons}]
platforms:
  linux:
    archs: [x86_64]
backends:
  cpu:
    required: true
tests:
  pytest: [tests]
"""


def test_each_python_of_the_matrix_this_machine_has_runs_its_cells(tmp_path: Path) -> None:
    project = tmp_path / "byteorder-ext"
    shutil.copytree(FIXTURE, project, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    pythons = [HERE, OTHER, *([MISSING] if MISSING else [])]
    (project / ".xcompat").mkdir()
    (project / ".xcompat" / "matrix.yml").write_text(MATRIX.format(pythons=", ".join(f'"{p}"' for p in pythons)))
    out = tmp_path / "out"
    env = {**os.environ, "XCOMPAT_CACHE": os.environ.get("XCOMPAT_CACHE") or str(tmp_path / "cache"),
           "XCOMPAT_RUN_PYTHONS": "all"}
    done = subprocess.run([sys.executable, "-m", "xcompat", "run", str(project), "--no-coverage", "--out", str(out)],
                          capture_output=True, text=True, env=env, check=False, timeout=850)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    report = json.loads((out / "report.json").read_text())
    cells = {c["python"]: c for c in report["cells"]}
    assert set(cells) == {HERE, OTHER}
    assert all(c["status"] == "passed" for c in cells.values()), cells
    # each cell's tests ran on its own interpreter: the results of the other one came from its run
    other = json.loads(next((out / "pythons" / OTHER).rglob("test.json")).read_text())
    assert other["cell_id"].startswith(f"py{OTHER}-") and other["status"] == "passed"
    assert cells[OTHER]["tests"] == cells[HERE]["tests"]  # the same tests, on each Python
    if MISSING:
        [elsewhere] = report["not_run_here"]
        assert elsewhere["id"].startswith(f"py{MISSING}-") and "not on this machine" in elsewhere["why"]
