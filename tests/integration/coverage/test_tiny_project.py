"""Real gcc --coverage + coverage.py on a tiny C extension project, through the real CLI.

The C file is compiled in a separate build copy and the package runs from a site-packages
folder (as after ``pip install``), so both path mappings are exercised for real.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET

import pytest
from tests.helpers.coverage import build_tiny_cell, git, run_xcompat, write_tiny_project

from xcompat.jsonio import validate

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

ADDED = "\n\ndef added(x):\n    if x > 100:\n        return 'big'\n    return 'small'\n"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    project = write_tiny_project(root / "project")
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "base")
    git(project, "checkout", "-q", "-b", "feature")
    with open(project / "src" / "tinypkg" / "mathops.py", "a") as fh:
        fh.write(ADDED)
    with open(project / "tests" / "cell_b.py", "a") as fh:
        fh.write("from tinypkg.mathops import added\nassert added(1) == 'small'\n")
    git(project, "commit", "-qam", "feature")
    artifacts = []
    for cell in ("cell_a", "cell_b"):
        built = build_tiny_cell(project, root / cell, cell)
        out = root / "artifacts" / f"{cell}.json"
        proc = run_xcompat(
            "coverage",
            "collect",
            "--cell-id",
            f"py3-linux-{cell}",
            "--python-data",
            str(built["data"]),
            "--gcov-root",
            str(built["build"]),
            "--source-root",
            str(project),
            "--out",
            str(out),
        )
        assert proc.returncode == 0, proc.stderr
        artifacts.append(out)
    out_dir = root / "merged"
    proc = run_xcompat(
        "coverage",
        "merge",
        *map(str, artifacts),
        "--repo",
        str(project),
        "--base-ref",
        "main",
        "--threshold-overall",
        "40",
        "--threshold-diff",
        "90",
        "--out-dir",
        str(out_dir),
    )
    return {"project": project, "artifacts": artifacts, "out": out_dir, "merge": proc}


def test_cell_artifacts_map_site_packages_and_build_copy(tiny):
    doc = json.loads(tiny["artifacts"][0].read_text())
    validate("coverage-cell", doc)
    assert set(doc["files"]) == {"src/tinypkg/__init__.py", "src/tinypkg/mathops.py", "src/tinypkg/_native.c"}
    native = doc["files"]["src/tinypkg/_native.c"]
    assert native["origin"] == "gcovr" and native["language"] == "c"
    hits = dict(zip(native["lines"], native["hits"]))
    src = (tiny["project"] / "src" / "tinypkg" / "_native.c").read_text().splitlines()
    add_line = next(i for i, t in enumerate(src, 1) if "return a + b;" in t)
    unused_line = next(i for i, t in enumerate(src, 1) if "return a * 2;" in t)
    assert hits[add_line] >= 1 and hits[unused_line] == 0
    # cell b never imports the C extension: no gcda, so gcov reports it unexecuted or not at all
    doc_b = json.loads(tiny["artifacts"][1].read_text())
    native_b = doc_b["files"].get("src/tinypkg/_native.c")
    assert native_b is None or not any(native_b["hits"])


def test_merge_unions_cells_and_fails_diff_threshold_with_reason(tiny):
    proc = tiny["merge"]
    assert proc.returncode == 1, proc.stderr
    doc = json.loads((tiny["out"] / "coverage.json").read_text())
    validate("coverage", doc)
    files = {f["path"]: f for f in doc["files"]}
    m = files["src/tinypkg/mathops.py"]
    # clamp's both early returns are covered only by the union of the two cells
    assert m["cells"] == ["py3-linux-cell_a", "py3-linux-cell_b"]
    assert 0 < m["percent"] < 100
    assert set(doc["languages"]) == {"python", "c"}
    overall, diff = doc["gate"]
    assert overall["passed"] and not diff["passed"]
    (d,) = [f for f in doc["diff"]["files"] if f["path"] == "src/tinypkg/mathops.py"]
    src = (tiny["project"] / "src" / "tinypkg" / "mathops.py").read_text().splitlines()
    big = next(i for i, t in enumerate(src, 1) if "return 'big'" in t)
    assert d["uncovered_ranges"] == [[big, big]]
    assert d["lines_valid"] == 4 and d["lines_covered"] == 3
    assert "diff coverage 75.00% < threshold 90%" in proc.stderr
    # the uncovered changed line is annotated
    assert f"src/tinypkg/mathops.py:{big}" in proc.stderr


def test_cobertura_names_python_and_c_files(tiny):
    text = (tiny["out"] / "coverage.xml").read_text()
    root = ET.fromstring(text.split("\n", 2)[2])
    names = {c.get("filename") for c in root.iter("class")}
    assert {"src/tinypkg/mathops.py", "src/tinypkg/_native.c"} <= names
    assert root.find("sources/source").text == str(tiny["project"].resolve())
    md = (tiny["out"] / "coverage.md").read_text()
    assert "| Python |" in md and "| C |" in md and "Diff coverage against `main`" in md
