"""The stages of a cell's CI job: its Python, its kernels, its ABI baseline, its coverage, and the
report of a head whose matrix did not verify."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from xcompat.pipeline.ci import abi, coverage, kernels, report
from xcompat.pipeline.ci.interpreter import check_cell_python, running_python
from xcompat.pipeline.ci.step import CiInputs, StageRefused
from xcompat.pipeline.ci.table import run_stage

MATRIX = """\
xcompat: 1
repo: acme/pkg
serial: 1
python: ["{python}", "{other}"]
platforms:
  linux:
    archs: [x86_64]
backends:
  cpu:
    required: true
"""
OTHER = "3.12" if running_python() != "3.12" else "3.13"  # a Python this job does not run


def _planned(tmp_path: Path, python: str | None = None) -> tuple[Path, dict]:
    """A plan of a one-Python matrix in tmp_path/out, as the plan job leaves it."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "matrix.yml").write_text(MATRIX.format(python=python or running_python(), other=OTHER))
    subprocess.run([sys.executable, "-m", "xcompat", "matrix", "plan", str(out / "matrix.yml"), "--format",
                    "json", "-o", str(out / "plan.json")], check=True, capture_output=True)
    return out, json.loads((out / "plan.json").read_text())


def _cell(plan: dict, python: str) -> str:
    return next(c["id"] for c in plan["cells"] if c["python"] == python)


def test_a_job_on_another_python_than_its_cells_is_refused_naming_both(tmp_path: Path):
    out, plan = _planned(tmp_path)
    mine = CiInputs(output_dir=str(out), cell=_cell(plan, running_python()))
    check_cell_python(mine, "test")  # the cell's own Python: nothing to say
    other = CiInputs(output_dir=str(out), cell=_cell(plan, OTHER))
    with pytest.raises(StageRefused) as refused:
        check_cell_python(other, "test")
    assert refused.value.exit_code == 5
    message = refused.value.message
    assert f"no Python {OTHER} for cell" in message and f"runs Python {running_python()}" in message


def test_a_wheel_that_does_not_fit_the_jobs_python_is_an_error_naming_both(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]):
    out, plan = _planned(tmp_path)
    cell = _cell(plan, running_python())
    wheels = out / "wheelhouse"
    wheels.mkdir()
    (wheels / "pkg-1.0-cp39-cp39-manylinux_2_17_x86_64.whl").write_bytes(b"")
    outputs = tmp_path / "github_output"
    code = run_stage("test", CiInputs(output_dir=str(out), cell=cell), env={"GITHUB_OUTPUT": str(outputs)})
    assert code == 5
    said = capsys.readouterr()
    text = said.out + said.err
    assert "pkg-1.0-cp39-cp39-manylinux_2_17_x86_64.whl" in text and f"Python {running_python()}" in text
    assert "exit-code=5" in outputs.read_text()


def test_kernels_of_a_project_without_torch_are_skipped_with_the_reason(tmp_path: Path):
    out, plan = _planned(tmp_path)
    project = tmp_path / "proj"
    (project / "pkg").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "pkg"\nversion = "1.0"\ndependencies = ["numpy"]\n')
    (project / "pkg" / "__init__.py").write_text("import numpy\n")
    inputs = CiInputs(output_dir=str(out), cell=_cell(plan, running_python()), project_dir=str(project))
    step = kernels.STAGE.step(inputs)
    assert step.skip.startswith("not required:") and "torch" in step.skip
    outputs = tmp_path / "github_output"
    assert run_stage("kernels", inputs, env={"GITHUB_OUTPUT": str(outputs)}) == 0
    written = json.loads(step.result.read_text())
    assert written["status"] == "skipped" and written["kind"] == "kernels" and written["summary"].startswith("not run:")
    # a torch project runs them, on the cell, with its wheel (one that fits this interpreter)
    from packaging.tags import sys_tags

    best = next(iter(sys_tags()))
    (out / "wheelhouse").mkdir()
    (out / "wheelhouse" / f"pkg-1.0-{best.interpreter}-{best.abi}-{best.platform}.whl").write_bytes(b"")
    (project / "pyproject.toml").write_text('[project]\nname = "pkg"\nversion = "1.0"\ndependencies = ["torch"]\n')
    ran = kernels.STAGE.step(inputs)
    assert not ran.skip and ran.argv[:2] == ["kernels", "run"] and inputs.cell in ran.argv
    # then the project's operators, whatever the runner's kernels concluded, without their arguments
    assert ran.then is not None and ran.then[:2] == ["kernels", "operators"]
    assert ran.then_after_failure and not ran.then_takes_args


def _git(folder: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@b", "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True, text=True,
                          env=env).stdout


def test_the_abi_baseline_is_the_last_release_built_in_ci_and_then_cached(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch):
    out, plan = _planned(tmp_path)
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "pkg"\nversion = "1.0"\n')
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "first")
    monkeypatch.setenv("XCOMPAT_ABI_CACHE", str(tmp_path / "cache"))
    inputs = CiInputs(output_dir=str(out), cell=_cell(plan, running_python()), project_dir=str(project))
    # no release yet: not compared, and said so
    assert abi.STAGE.step(inputs).skip.startswith("abi.baseline last-release-tag: no release tag")
    _git(project, "tag", "v1.0.0")
    step = abi.STAGE.step(inputs)
    assert [command[0] for command in step.prelude] == ["build", "abi"]  # built from the tag, snapshotted
    snapshot = Path(step.prelude[1][step.prelude[1].index("-o") + 1])
    assert snapshot.parent == tmp_path / "cache" and "v1.0.0" in snapshot.name
    assert step.argv[:4] == ["abi", "diff", str(snapshot), str(out / "wheelhouse")]
    assert "--against-version" in step.argv and step.cell_python
    snapshot.write_bytes(b"made by an earlier run")
    assert abi.STAGE.step(inputs).prelude == []  # the cached snapshot is used as it is


def test_the_abi_stage_needs_two_builds_or_a_cell(tmp_path: Path):
    with pytest.raises(StageRefused, match="abi-old and abi-new, or a cell"):
        abi.STAGE.step(CiInputs(output_dir=str(tmp_path)))


def test_a_cells_coverage_is_measured_by_the_runs_own_coverage_stage(tmp_path: Path):
    out, plan = _planned(tmp_path)
    cell = _cell(plan, running_python())
    step = coverage.STAGE.step(CiInputs(output_dir=str(out), cell=cell))
    assert step.argv[0] == "run" and step.argv.count("--stage") == 2 and "coverage" in step.argv
    assert step.argv[step.argv.index("--cell") + 1] == cell
    assert step.result == out / "results" / cell / "coverage.json"


def test_a_head_whose_matrix_did_not_verify_gets_a_red_report_of_its_own(tmp_path: Path):
    step = report.STAGE.step(CiInputs(output_dir=str(tmp_path), verification_failed="bad\nsignature <b>"))
    source = Path(step.argv[1])
    written = json.loads(source.read_text())
    assert written["status"] == "failed" and written["summary"] == \
        "the matrix signature did not verify: bad signature <b>"
    assert str(tmp_path / "results") not in step.argv  # no result of the unverified head counts
