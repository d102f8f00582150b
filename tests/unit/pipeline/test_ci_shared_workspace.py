"""The report job's inputs and a cell's ABI baseline build, where jobs share a workspace (a shell
runner's) or a folder holds more than the stage reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.unit.pipeline.test_ci_cell_stages import _cell, _git, _planned

from xcompat.pipeline.ci import abi, coverage, report
from xcompat.pipeline.ci.interpreter import running_python
from xcompat.pipeline.ci.step import CiInputs


def test_the_report_reads_the_merged_coverage_the_report_job_made(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    before = report.STAGE.step(CiInputs(output_dir=str(tmp_path), forge="gitlab"))
    assert before.argv[:2] == ["report", str(tmp_path / "results")] and len(before.argv) == 5  # nothing merged yet
    merged = tmp_path / "coverage" / "coverage.json"
    merged.parent.mkdir()
    merged.write_text("{}")
    after = report.STAGE.step(CiInputs(output_dir=str(tmp_path), forge="gitlab"))
    assert after.argv[:3] == ["report", str(tmp_path / "results"), str(merged)]
    # a head whose matrix did not verify: nothing of the run counts, the merged coverage neither
    refused = report.STAGE.step(CiInputs(output_dir=str(tmp_path), forge="gitlab", verification_failed="bad"))
    assert str(merged) not in refused.argv


def test_the_merge_reads_each_cells_coverage_and_no_other_result(tmp_path: Path) -> None:
    results = tmp_path / "results"
    for folder, name in (("c1", "coverage.json"), ("c1", "test.json"), ("project", "contracts-python-floor.json"),
                         ("xcompat-results-c2-test/c2", "coverage.json"), ("xcompat-results-c2-test/c2", "abi.json")):
        (results / folder).mkdir(parents=True, exist_ok=True)
        (results / folder / name).write_text(json.dumps({"kind": name.removesuffix(".json")}))
    step = coverage.STAGE.step(CiInputs(output_dir=str(tmp_path)))
    inputs = step.argv[2:step.argv.index("--repo")]
    assert inputs == [str(results / "c1" / "coverage.json"), str(results / "xcompat-results-c2-test/c2/coverage.json")]
    for path in results.rglob("coverage.json"):
        path.unlink()
    earlier = tmp_path / "coverage" / "coverage.json"  # an earlier run's merge, in a workspace that stays
    earlier.parent.mkdir()
    earlier.write_text("{}")
    none = coverage.STAGE.step(CiInputs(output_dir=str(tmp_path)))
    assert none.argv[2:none.argv.index("--repo")] == [str(results)]  # the merge says there is nothing to merge
    assert not earlier.exists()  # so the report cannot show the earlier run's coverage as this one's


def test_each_cells_abi_baseline_is_built_in_a_folder_of_its_own_emptied_first(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    out, plan = _planned(tmp_path)
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "pkg"\nversion = "1.0"\n')
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "first")
    _git(project, "tag", "v1.0.0")
    monkeypatch.setenv("XCOMPAT_ABI_CACHE", str(tmp_path / "cache"))
    cells = [c["id"] for c in plan["cells"]]
    builds = []
    for cell in cells:
        step = abi.STAGE.step(CiInputs(output_dir=str(out), cell=cell, project_dir=str(project)))
        [build, snapshot] = step.prelude
        work = Path(build[build.index("--out") + 1])
        assert snapshot[:3] == ["abi", "snapshot", str(work)]
        builds.append(work)
        # what this cell's build leaves behind, as a job that ran before the next one in this workspace
        work.mkdir(parents=True, exist_ok=True)
        (work / "pkg-1.0-cp3-cp3-linux_x86_64.whl").write_bytes(b"an earlier build")
    assert len(set(builds)) == len(cells) == 2
    mine = _cell(plan, running_python())
    again = abi.STAGE.step(CiInputs(output_dir=str(out), cell=mine, project_dir=str(project)))
    [build, _] = again.prelude
    assert not Path(build[build.index("--out") + 1]).exists()  # the earlier build's wheel is gone
    assert [p.name for p in builds[1 - cells.index(mine)].iterdir()]  # the other cell's is left alone
