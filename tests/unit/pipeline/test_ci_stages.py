"""``xcompat stage NAME``: the command each CI stage runs, from the action's inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from xcompat.pipeline.ci import build, gate, report
from xcompat.pipeline.ci.step import CiInputs, StageRefused
from xcompat.pipeline.ci.table import _framework_pins, run_stage


def test_framework_pins_from_the_github_and_the_gitlab_plan():
    assert _framework_pins('{"torch": "2.5", "numpy": ""}') == ["numpy", "torch==2.5.*"]
    assert _framework_pins("torch==2.13 numpy==2.1") == ["torch==2.13.*", "numpy==2.1.*"]
    assert _framework_pins("") == []
    assert _framework_pins("{not json") is None


def test_a_cell_build_needs_the_verified_matrix_of_the_plan_artifact(tmp_path: Path):
    inputs = CiInputs(output_dir=str(tmp_path), cell="c1")
    with pytest.raises(StageRefused, match="no verified matrix") as refused:
        build.STAGE.step(inputs)
    assert refused.value.exit_code == 2
    (tmp_path / "matrix.yml").write_text("xcompat: 1\n")
    step = build.STAGE.step(inputs)
    assert step.argv == ["build", ".", "--out", str(tmp_path / "wheelhouse"), "--matrix", str(tmp_path / "matrix.yml"),
                         "--cell", "c1"]
    assert step.result == tmp_path / "wheelhouse" / "build.json"


def test_a_refused_stage_runs_nothing_and_writes_no_outputs(tmp_path: Path):
    outputs = tmp_path / "github_output"
    code = run_stage("abi", CiInputs(output_dir=str(tmp_path)), env={"GITHUB_OUTPUT": str(outputs)})
    assert code == 2 and not outputs.exists()


def test_the_gate_verifies_unless_told_not_to(tmp_path: Path):
    signed = gate.STAGE.step(CiInputs(output_dir=str(tmp_path), project_dir="proj", require_kinds="build, test"))
    assert signed.argv[signed.argv.index("--matrix") + 1] == str(Path("proj/.xcompat/matrix.yml"))
    assert "--insecure-no-verify" not in signed.argv
    assert [signed.argv[i + 1] for i, a in enumerate(signed.argv) if a == "--require-kind"] == ["build", "test"]
    unsigned = gate.STAGE.step(CiInputs(output_dir=str(tmp_path), verify=False))
    assert "--insecure-no-verify" in unsigned.argv and "--matrix" not in unsigned.argv


def test_the_report_stage_delivers_to_the_forge_it_is_given(tmp_path: Path):
    github = report.STAGE.step(CiInputs(output_dir=str(tmp_path)))
    assert "--github" in github.argv and "--comment-mode" in github.argv
    gitlab = report.STAGE.step(CiInputs(output_dir=str(tmp_path), forge="gitlab", post=False))
    assert "--gitlab" in gitlab.argv and "--comment-mode" not in gitlab.argv and "--no-comment" in gitlab.argv


def test_outputs_go_to_the_jobs_output_file(tmp_path: Path):
    outputs = tmp_path / "github_output"
    (tmp_path / "results").mkdir()
    code = run_stage("coverage", CiInputs(output_dir=str(tmp_path), args=("--not-an-option",)),
                     env={"GITHUB_OUTPUT": str(outputs), "PATH": "/usr/bin:/bin"})
    assert code == 2  # the command refused the extra argument
    assert outputs.read_text().splitlines() == [f"result={tmp_path / 'coverage' / 'coverage.json'}",
                                                "conclusion=failure", "exit-code=2"]
