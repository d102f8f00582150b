"""The runtime-libraries stage hands the test stage's result to the check when there is one:
in CI, the cell's test.json written by the job's test step; in xcompat run, the run's."""

from __future__ import annotations

import zipfile
from pathlib import Path

from xcompat.pipeline.ci.step import CiInputs
from xcompat.pipeline.ci.table import CI_STAGES
from xcompat.pipeline.stages.contracts_runtime_libraries import _probe_argv


def test_the_ci_step_reads_the_cells_test_result_when_the_test_step_wrote_one(tmp_path: Path) -> None:
    wheels = tmp_path / "wheelhouse"
    wheels.mkdir()
    with zipfile.ZipFile(wheels / "pkg-1.0-py3-none-any.whl", "w") as zf:
        zf.writestr("pkg/__init__.py", "")
    inputs = CiInputs(output_dir=str(tmp_path / "out"), wheelhouse=str(wheels), cell="c1", project_dir=str(tmp_path))
    stage = CI_STAGES["contracts-runtime-libraries"]
    assert "--tests-result" not in stage.step(inputs).argv
    inputs.cell_dir.mkdir(parents=True)
    (inputs.cell_dir / "test.json").write_text("{}")
    argv = stage.step(inputs).argv
    assert argv[argv.index("--tests-result") + 1] == str(inputs.cell_dir / "test.json")


def test_the_run_stage_passes_the_test_result_to_the_check(tmp_path: Path) -> None:
    argv = _probe_argv(["pkg"], tmp_path / "site", tmp_path / "out.json", "c1", "pkg", None, tmp_path / "test.json")
    assert argv[argv.index("--tests-result") + 1] == tmp_path / "test.json"
    assert "--tests-result" not in _probe_argv(["pkg"], tmp_path / "site", tmp_path / "out.json", "c1", "pkg")
