"""The bundled sample project, for real: its C extension (full API and abi3) and its C++
torch op built with gcov instrumentation, its own tests run under coverage.py in two
cells, then collect and merge through the CLI.
"""

from __future__ import annotations

import json
import shutil

import pytest
from tests.helpers.coverage import build_sample_with_coverage, run_sample_tests, run_xcompat

from xcompat.jsonio import validate
from xcompat.resources import data_dir

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    project = data_dir("examples") / "sample-ext"
    if not (project / "setup.py").is_file():
        pytest.skip(f"sample project not found at {project}")
    if shutil.which("gcc") is None or shutil.which("g++") is None:
        pytest.skip("gcc/g++ are not installed")
    pytest.importorskip("torch", reason="the sample's C++ op builds against torch")
    built = build_sample_with_coverage(project)
    work = tmp_path_factory.mktemp("sample-cov")
    artifacts = []
    runs = {}
    for cell, tests in (
        ("py3-linux-x86_64-cpu-core", ["tests/test_core.py"]),
        ("py3-linux-x86_64-cpu-torch", ["tests/test_ops.py"]),
    ):
        cell_dir = work / cell
        cell_dir.mkdir()
        run = runs[cell] = run_sample_tests(built, cell_dir, tests, cell=cell)
        out = work / "artifacts" / f"{cell}.json"
        proc = run_xcompat(
            "coverage",
            "collect",
            "--cell-id",
            cell,
            "--python-data",
            str(run["data"]),
            "--gcov-root",
            str(run["gcov_root"]),
            "--source-root",
            str(project),
            "--out",
            str(out),
        )
        assert proc.returncode == 0, proc.stderr
        artifacts.append(out)
    out_dir = work / "merged"
    proc = run_xcompat(
        "coverage",
        "merge",
        str(work / "artifacts"),
        "--repo",
        str(project),
        "--out-dir",
        str(out_dir),
        "--matrix",
        str(project / ".xcompat" / "matrix.yml"),
    )
    assert proc.returncode in (0, 1), proc.stderr
    return {"project": project, "artifacts": artifacts, "out": out_dir, "merge": proc, "runs": runs}


def test_merged_report_names_python_c_and_cpp_files_with_plausible_coverage(sample):
    doc = json.loads((sample["out"] / "coverage.json").read_text())
    validate("coverage", doc)
    files = {f["path"]: f for f in doc["files"]}
    for path, language in (
        ("sample_ext/__init__.py", "python"),
        ("sample_ext/_ops_loader.py", "python"),
        ("csrc/core.c", "c"),
        ("csrc/ops.cpp", "cpp"),
    ):
        assert path in files, f"{path} missing from {sorted(files)}"
        f = files[path]
        assert f["language"] == language
        assert f["lines_valid"] >= 5 and f["percent"] > 0, (path, f)
    # The C module's error paths (allocation failures) are never all taken; the loader's
    # "library not found" branch is not run either. The small C++ op may well be fully covered.
    assert files["csrc/core.c"]["percent"] < 100 and files["csrc/core.c"]["uncovered_ranges"]
    langs = doc["languages"]
    assert {"python", "c", "cpp"} <= set(langs)
    for lang in ("python", "c"):
        assert 0 < langs[lang]["percent"] < 100, (lang, langs[lang])
    assert langs["cpp"]["percent"] > 0
    assert 0 < doc["totals"]["percent"] < 100
    # no torch, CPython or system header leaked in as a repository file
    assert all(not p.startswith("/") and ".." not in p for p in files)
    assert not any("torch" in p or p.endswith("Python.h") for p in files)


def test_each_cell_contributes_its_part(sample):
    doc = json.loads((sample["out"] / "coverage.json").read_text())
    files = {f["path"]: f for f in doc["files"]}
    assert "py3-linux-x86_64-cpu-torch" in files["csrc/ops.cpp"]["cells"]
    assert "py3-linux-x86_64-cpu-core" not in files["csrc/ops.cpp"]["cells"]
    assert "py3-linux-x86_64-cpu-core" in files["csrc/core.c"]["cells"]
    per_cell = {c["cell_id"]: c for c in doc["cells"]}
    assert set(per_cell) == {"py3-linux-x86_64-cpu-core", "py3-linux-x86_64-cpu-torch"}
    # the union is at least as good as the best single cell
    assert doc["totals"]["lines_covered"] >= max(c["lines_covered"] for c in per_cell.values())


def test_cell_artifacts_are_valid_and_name_repository_files_only(sample):
    for path in sample["artifacts"]:
        doc = json.loads(path.read_text())
        validate("coverage-cell", doc)
        assert doc["status"] == "passed"
        assert doc["tools"]["gcovr"] and doc["tools"]["coverage.py"]
        for name in doc["files"]:
            assert (sample["project"] / name).is_file(), name
    torch_cell = json.loads(sample["artifacts"][1].read_text())
    assert "csrc/ops.cpp" in torch_cell["files"]
    assert any(torch_cell["files"]["csrc/ops.cpp"]["hits"])


def test_thresholds_come_from_the_sample_matrix(sample):
    doc = json.loads((sample["out"] / "coverage.json").read_text())
    assert doc["thresholds"]["source"] == "matrix"
    from xcompat.coverage.thresholds import thresholds_from_matrix

    declared = thresholds_from_matrix(sample["project"] / ".xcompat" / "matrix.yml")
    assert {k: doc["thresholds"][k] for k in declared} == declared
    checks = {c["name"]: c for c in doc["gate"]}
    assert set(checks) == set(declared)
    if "diff" in checks:  # no --base-ref here: reported, not failed
        assert checks["diff"]["passed"] and "no --base-ref" in checks["diff"]["reason"]
    if "overall" in checks:
        assert checks["overall"]["passed"] == (doc["totals"]["percent"] >= declared["overall"])
    expected = 0 if doc["status"] == "passed" else 1
    assert sample["merge"].returncode == expected
    md = (sample["out"] / "coverage.md").read_text()
    assert "`csrc/ops.cpp`" in md and "| C++ |" in md and "| Python |" in md
