"""A cell's job runs the project's own code, which can write a passing result for another cell
(a CUDA cell that never ran) into the folder the job uploads. The report and the gate count a
result only for the cell whose folder or CI artifact it came in; a planted one is named, and the
verdict is red. The CI files keep the folders apart: one folder per GitHub artifact, and GitLab
cell jobs upload only their own cell's folder."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.action import checks_by_name, plan_document, run_gate, write
from tests.helpers.report import coverage_result, make_test, make_test_result

ROOT = Path(__file__).resolve().parents[2]
CPU, CUDA = "py3.12-linux-x86_64-cpu", "py3.12-linux-x86_64-cuda"
LAYOUTS = {
    # what the reusable workflow downloads: one folder per artifact, named by the workflow
    "github": ("results/xcompat-results-{cell}-test/{cell}/test.json", "results/xcompat-results-{cpu}-test/{cuda}/test.json"),
    # what GitLab extracts: each job's .xcompat-out/results/<its cell>/
    "gitlab": ("results/{cell}/test.json", "results/{cpu}/{cuda}/test.json"),
}


def _results(root: Path, layout: str, *, cuda_ran: bool) -> None:
    own, planted = LAYOUTS[layout]
    for cell in (CPU, CUDA) if cuda_ran else (CPU,):
        write(root / own.format(cell=cell), make_test_result(cell, [make_test("tests/t.py::x")]))
    write(root / planted.format(cpu=CPU, cuda=CUDA), make_test_result(CUDA, [make_test("tests/t.py::x")]))
    write(root / "plan.json", plan_document((CPU, True), (CUDA, True)))


def _gate(root: Path) -> dict:
    rc, out, doc = run_gate(root, "--plan", "plan.json", "--results", "results", "--insecure-no-verify")
    assert rc == 1 and doc is not None, out
    return checks_by_name(doc)


def _report(root: Path) -> tuple[int, dict]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_", "GITLAB")) and k != "CI"}
    proc = subprocess.run([sys.executable, "-m", "xcompat", "report", "results", "--plan", "plan.json",
                           "--format", "json", "--out", "report.json"],
                          cwd=root, capture_output=True, text=True, env=env, timeout=120, check=False)
    return proc.returncode, json.loads((root / "report.json").read_text())


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_planted_result_for_a_cell_that_never_ran_is_not_counted(tmp_path: Path, layout: str) -> None:
    _results(tmp_path, layout, cuda_ran=False)
    checks = _gate(tmp_path)
    assert checks[f"cell:{CUDA}"]["passed"] is False and "got no result" in checks[f"cell:{CUDA}"]["reason"]
    assert checks["results"]["passed"] is False and f"in the folder of cell {CPU}" in checks["results"]["reason"]
    rc, report = _report(tmp_path)
    assert rc == 1 and report["conclusion"] == "failure"
    assert any(f"result for cell {CUDA} in the folder of cell {CPU}" in p for p in report["problems"]), report["problems"]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_planted_result_is_red_even_when_its_cell_passed_on_its_own(tmp_path: Path, layout: str) -> None:
    _results(tmp_path, layout, cuda_ran=True)
    checks = _gate(tmp_path)
    assert checks[f"cell:{CUDA}"]["passed"] is True and checks["results"]["passed"] is False


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_planted_run_level_result_does_not_replace_the_runs_own(tmp_path: Path, layout: str) -> None:
    # Merged coverage is run-level (no cell) and the report shows it; the project's tests in the
    # CPU cell write a 99% one into the folder their job uploads.
    _results(tmp_path, layout, cuda_ran=True)
    (tmp_path / LAYOUTS[layout][1].format(cpu=CPU, cuda=CUDA)).unlink()
    write(tmp_path / "results/coverage.json", coverage_result(41.0))
    planted = LAYOUTS[layout][0].format(cell=CPU).replace("test.json", "coverage.json")
    write(tmp_path / planted, coverage_result(99.0))
    rc, report = _report(tmp_path)
    assert rc == 1 and report["conclusion"] == "failure"
    assert report["coverage"]["percent"] == 41.0
    assert any(f"run-level coverage result (for no cell) in the folder of cell {CPU}" in p
               for p in report["problems"]), report["problems"]
    assert _gate(tmp_path)["results"]["passed"] is False


def test_the_ci_files_keep_each_cells_results_apart() -> None:
    for name in ("workflows/xcompat.yml", ".github/workflows/xcompat.yml", "workflows/release.yml", ".github/workflows/ci.yml"):
        text = (ROOT / name).read_text()
        for step in re.findall(r"pattern: xcompat-results-\*\n(?:[ ]+.*\n){0,4}", text):
            assert "merge-multiple: true" not in step, f"{name} merges the result artifacts into one folder"
    for name in ("templates/xcompat.yml", "templates/include/xcompat.gitlab-ci.yml"):
        text = (ROOT / name).read_text()
        for job in ("xcompat:build", "xcompat:test"):
            body = text[text.index(f'"{job}": {{'):]
            body = body[:body.index(': {**', len(job) + 6)]  # up to the next job's definition
            # the job's artifacts (its cache, the ABI baseline's snapshots, is not uploaded)
            paths = re.search(r'"artifacts": \{"when": "always", "paths": \[(.*?)\]', body, re.DOTALL).group(1)
            assert "/$XCOMPAT_CELL/" in paths and '".xcompat-out/wheelhouse/",' not in paths, (name, job, paths)
            assert re.search(r'results \+ "/"\]', paths) is None, (name, job, paths)
