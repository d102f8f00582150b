"""What a checkout commits under the output folder is never read as the run's own.

A pull request can commit ``.xcompat-out/plan.json`` (its own test settings: ``-k`` that skips
the failing test, a longer timeout) and results under ``.xcompat-out/results/`` beside the ones
the job downloads. The action removes whatever is still as committed there before any stage
runs (``xcompat.outputs.remove_committed``); what a download step wrote over it stays. The test
stage then reads only the plan it was handed, checked against the verified matrix's hash.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from tests.helpers.action import REPO_ROOT, Repo, expressions_available, git, run_composite_action, write

from xcompat.matrix import load_matrix
from xcompat.matrix.plan import expand, plan_document

MATRIX = """xcompat: 1
repo: acme/proj
serial: 1
python: ["3.11"]
platforms: {linux: {archs: [x86_64]}}
backends: {cpu: {required: true}}
tests:
  pytest: [tests]
  isolation: none
  timeout: 33
"""


def _commit_all(repo: Path) -> None:
    git(repo, "add", "-A", "--force")
    git(repo, "commit", "-q", "-m", "the pull request")


# -- remove_committed (imported by each test, so that each fails on its own without it) ----------


def test_committed_files_go_and_files_written_over_them_stay(tmp_path: Path, monkeypatch) -> None:
    from xcompat.outputs import remove_committed

    repo = Repo(tmp_path / "ws")
    repo.commit()
    out = repo.path / ".xcompat-out"
    write(out / "plan.json", {"committed": True})
    write(out / "results" / "c" / "test.json", {"committed": True})
    write(out / "results" / "c" / "a b.json", {"committed": True})
    write(out / "wheelhouse" / "gone.json", {"committed": True})
    _commit_all(repo.path)
    write(out / "plan.json", {"downloaded": True})  # a download step wrote over the committed one
    write(out / "results" / "d" / "test.json", {"downloaded": True})  # new: never committed
    (out / "wheelhouse" / "gone.json").unlink()  # already gone: nothing to do
    monkeypatch.chdir(repo.path)
    removed = remove_committed(".xcompat-out")
    assert sorted(p.relative_to(repo.path).as_posix() for p in removed) == [
        ".xcompat-out/results/c/a b.json", ".xcompat-out/results/c/test.json"]
    assert json.loads((out / "plan.json").read_text()) == {"downloaded": True}
    assert (out / "results" / "d" / "test.json").is_file()
    assert not (out / "results" / "c" / "test.json").exists()
    assert (repo.path / "file.txt").is_file()  # nothing outside the folder
    assert remove_committed(out) == []  # a second stage of the same job finds nothing left


def test_a_committed_link_in_place_of_the_folder_goes_and_its_target_stays(tmp_path: Path) -> None:
    from xcompat.outputs import remove_committed

    repo = Repo(tmp_path / "ws")
    write(repo.path / "elsewhere" / "results" / "c" / "test.json", {"planted": True})
    (repo.path / ".xcompat-out").symlink_to("elsewhere")
    _commit_all(repo.path)
    removed = remove_committed(repo.path / ".xcompat-out")
    assert removed == [repo.path / ".xcompat-out"]
    assert not (repo.path / ".xcompat-out").exists() and (repo.path / "elsewhere" / "results").is_dir()


def test_outside_a_work_tree_nothing_is_removed(tmp_path: Path) -> None:
    from xcompat.outputs import remove_committed

    write(tmp_path / "out" / "plan.json", {})
    assert remove_committed(tmp_path / "out") == []
    assert (tmp_path / "out" / "plan.json").is_file()


def test_the_top_of_a_work_tree_is_refused(tmp_path: Path) -> None:
    from xcompat.outputs import OutputError, remove_committed

    repo = Repo(tmp_path / "ws")
    repo.commit()
    with pytest.raises(OutputError, match="top of a git work tree"):
        remove_committed(repo.path)
    assert (repo.path / "file.txt").is_file()


# -- the action's test stage, as the runner runs it ------------------------------------------

REASON = expressions_available()
needs_runner = pytest.mark.skipif(REASON is not None, reason=f"composite action runner unavailable: {REASON}")


def _pull_request(tmp_path: Path) -> tuple[Path, str, dict, str]:
    """A project whose regression test fails, committing a plan that skips it and a passing result."""
    repo = Repo(tmp_path / "ws")
    ws = repo.path
    (ws / "proj" / "tests").mkdir(parents=True)
    (ws / "proj" / "tests" / "test_a.py").write_text(
        "def test_fast():\n    assert True\n\n\ndef test_regression():\n    assert 2 * 3 == 7\n")
    matrix = load_matrix(MATRIX.encode())
    cell = expand(matrix)[0].id
    plan = plan_document(matrix, expand(matrix))
    hostile = json.loads(json.dumps(plan))
    hostile["settings"]["tests"].update(pytest_args=["-k", "not regression"], timeout=300)
    write(ws / ".xcompat-out" / "plan.json", hostile)
    write(ws / ".xcompat-out" / "results" / cell / "planted" / "test.json",
          {"version": 1, "kind": "test", "cell_id": cell, "status": "passed", "summary": "1 passed"})
    _commit_all(ws)
    return ws, cell, plan, matrix.sha256


def _test_stage(ws: Path, cell: str, sha: str):
    return run_composite_action(
        REPO_ROOT, {"stage": "test", "cell": cell, "project-dir": "proj", "install-wheel": "false",
                    "python": sys.executable, "install": "false", "verify": "false", "matrix-sha256": sha,
                    "fail-on-error": "false"},
        workspace=ws)


@needs_runner
def test_the_test_stage_runs_the_downloaded_plan_not_the_committed_one(tmp_path: Path) -> None:
    ws, cell, plan, sha = _pull_request(tmp_path)
    # the download step: the plan job's artifact, written over the committed plan
    write(ws / ".xcompat-out" / "plan.json", plan)
    (ws / ".xcompat-out" / "matrix.yml").write_text(MATRIX)
    run = _test_stage(ws, cell, sha)
    assert run.outputs["exit-code"] == "1", run.log  # the failing test failed the stage
    assert "removed 1 file(s) the checkout committed under .xcompat-out" in run.step("setup").stdout, run.log
    assert not (ws / ".xcompat-out" / "results" / cell / "planted").exists()
    document = json.loads(Path(run.outputs["result"]).read_text())
    outcomes = {t["nodeid"].rsplit("::", 1)[-1]: t["outcome"] for t in document["tests"]}
    assert outcomes == {"test_fast": "passed", "test_regression": "failed"}, outcomes
    assert document["timeout_s"] == 33  # the signed timeout, not the committed plan's 300


@needs_runner
def test_a_plan_that_is_not_the_verified_matrix_s_is_refused_before_any_test_runs(tmp_path: Path) -> None:
    ws, cell, plan, sha = _pull_request(tmp_path)
    # an artifact swapped on the way: the settings edited, matrix_sha256 left as it was
    forged = json.loads(json.dumps(plan))
    forged["settings"]["tests"]["pytest_args"] = ["-k", "not regression"]
    write(ws / ".xcompat-out" / "plan.json", forged)
    (ws / ".xcompat-out" / "matrix.yml").write_text(MATRIX)
    run = _test_stage(ws, cell, sha)
    assert run.step("run").outcome == "failure" and run.outputs["exit-code"] == "", run.log
    assert "$.settings.tests.pytest_args is not what the verified matrix" in run.log
    assert not (ws / ".xcompat-out" / "results" / cell / "test.json").exists()


@needs_runner
def test_without_the_plan_artifact_the_committed_plan_is_not_used(tmp_path: Path) -> None:
    ws, cell, _, sha = _pull_request(tmp_path)
    run = _test_stage(ws, cell, sha)
    assert run.step("run").outcome == "failure", run.log
    assert "could not read the test settings" in run.log
    assert not (ws / ".xcompat-out" / "plan.json").exists()
    assert not (ws / ".xcompat-out" / "results" / cell / "test.json").exists()
