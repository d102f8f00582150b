"""The GitLab component as shipped on a released third-party project, as its maintainer adopts it.

pyahocorasick (a C extension, setup.py only, its tests in tests/): the 2.1.0 release from PyPI
is the default branch, tagged v2.1.0, with a signed matrix of two Pythons (the act tier's
matrix); the 2.2.0 release is a merge request. The README's `.gitlab-ci.yml` includes the
component (`include: local:`, as in test_gitlab_ci_local.py) and gitlab-ci-local runs the merge
request pipeline, then the child pipeline the plan job generates, on a shell runner that has both
Pythons on its PATH. Every stage of a cell's jobs runs for each cell on the cell's Python
(build, then probe, kernels, test, the ABI diff against v2.1.0 built in CI, coverage and the
contracts), and the MR note on the loopback GitLab carries the ABI and coverage summaries.
2.2.0 narrows Requires-Python in a minor release: each cell's ABI diff says so, which turns its
test job, the report and the gate red; every other stage passes. A second head then edits the matrix without re-signing: the component's `xcompat:unverified` job
replaces that note with a red one saying so.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.helpers import fake_gitlab
from tests.helpers.fake_github import start, stop
from tests.runners.harness import (
    ACTION_REPOSITORY,
    PYTHON,
    Project,
    commit_all,
    git,
    run_gitlab_ci_local,
    run_with_child_pipeline,
    shell_runner_copy,
    snapshot_xcompat,
)
from tests.runners.test_github_act_project import MATRIX, NAME, NEW, OLD, OTHER, OWNER, REPO, unpack
from tests.runners.test_gitlab_ci_local import (
    COMPONENT,
    gitlab_ci_yml,
    project_variables,
    readme_gitlab_ci,
    write_variables,
)

from xcompat.interpreters.discover import find_interpreter

pytestmark = pytest.mark.timeout(1800)

# what gitlab-ci-local writes into the project, and the ABI baseline cache of the cell jobs
IGNORED = ".gitlab-ci-local/\n.gitlab-ci-local-variables.yml\n.xcompat-abi-baseline/\n"
CELL_STAGES = ("probe", "kernels", "test", "abi", "coverage", "contracts-stubs", "contracts-runtime-libraries")


@dataclass
class MergeRequest:
    project: Project  # base: the default branch's commit, tagged v2.1.0
    work: Path
    fake: fake_gitlab.FakeGitLab
    runner_bin: Path  # the shell runner's python3.X of both cells, first on its PATH


def _runner_pythons(folder: Path) -> Path:
    """A shell runner with both cells' Pythons: `python3.X` of each on its PATH, as the child
    pipeline's jobs look them up (`command -v python$XCOMPAT_PYTHON`)."""
    folder.mkdir(parents=True)
    for version in (PYTHON, OTHER):
        found = find_interpreter(str(version))
        assert found is not None, version
        (folder / f"python{version}").symlink_to(found.path)
    return folder


def _adopt(repo: Path, source: str) -> None:
    """The 2.1.0 sources with the files a maintainer adds: trust list, signed matrix, the README's
    `.gitlab-ci.yml` with the component (shell-runner copy) and the .gitignore lines for CI output."""
    unpack(OLD, repo)
    xc = repo / ".xcompat"
    xc.mkdir()
    key = repo.parent / "signing-key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ecdsa", "-b", "256", "-N", "", "-C", "maintainer@example.com",
                    "-f", str(key)], check=True)
    kind, public = key.with_name(key.name + ".pub").read_text().split()[:2]
    (xc / "allowed_signers").write_text(f'maintainer@example.com namespaces="xcompat-matrix-v1" {kind} {public}\n')
    (xc / "matrix.yml").write_text(MATRIX.format(repo=f"{OWNER}/{REPO}", python=PYTHON, other=OTHER))
    subprocess.run([sys.executable, "-m", "xcompat", "matrix", "sign", str(xc / "matrix.yml"), "--key", str(key)],
                   check=True, capture_output=True)
    shell_runner_copy(COMPONENT, repo / "templates" / "xcompat.yml")
    # pyahocorasick's tests need pytest alone: the component's default test extras
    text = gitlab_ci_yml(readme_gitlab_ci(), source).replace("      test-extras: testing\n", "")
    (repo / ".gitlab-ci.yml").write_text(text)
    with (repo / ".gitignore").open("a") as ignore:
        ignore.write(IGNORED)


@pytest.fixture(scope="module")
def merge_request(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MergeRequest]:
    if OTHER is None:
        pytest.fail("the runner tier needs a second CPython on this machine (pyenv's 3.12 or 3.13)", pytrace=False)
    work = tmp_path_factory.mktemp("gitlab-project")
    forge = work / "forge"
    sha = snapshot_xcompat(forge)
    # file://localhost/...: the pip that `python3 -m venv` bundles (23.x) refuses `name @ git+file:///path`.
    source = f"git+file://localhost{forge / ACTION_REPOSITORY}@{sha}"
    repo = work / REPO
    repo.mkdir()
    _adopt(repo, source)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "remote", "add", "origin", f"https://gitlab.example.com/{OWNER}/{REPO}.git")
    base = commit_all(repo, f"{NAME} {OLD}")
    git(repo, "tag", f"v{OLD}")
    git(repo, "pack-refs", "--all")  # the project ignores "tags" (ctags' file): keep refs/tags out of that
    git(repo, "checkout", "-q", "-b", "topic")
    for tracked in git(repo, "ls-files").split("\n"):
        if tracked and not tracked.startswith((".xcompat/", "templates/", ".gitlab-ci.yml", ".gitignore")):
            (repo / tracked).unlink(missing_ok=True)
    unpack(NEW, repo)
    with (repo / ".gitignore").open("a") as ignore:  # 2.2.0's own .gitignore, plus the maintainer's lines
        ignore.write(IGNORED)
    commit_all(repo, f"{NAME} {NEW}")
    project = Project(path=repo, base=base, cell="")
    fake = start(fake_gitlab.FakeGitLab(project_id="42", project_path=f"{OWNER}/{REPO}", mr_iid=7))
    write_variables(project, project_variables(project, fake, CI_PROJECT_PATH=f"{OWNER}/{REPO}"))
    try:
        yield MergeRequest(project=project, work=work, fake=fake, runner_bin=_runner_pythons(work / "bin"))
    finally:
        stop(fake)


@pytest.fixture(scope="module")
def pipeline(merge_request: MergeRequest) -> dict[str, list[str]]:
    """The merge request pipeline and its child pipeline; returns each child job's outcomes."""
    run = run_with_child_pipeline(merge_request.project.path, work=merge_request.work,
                                  path_first=merge_request.runner_bin)
    assert run.parent.returncode == 0, run.parent.log[-8000:]
    assert run.parent.jobs.get("xcompat:plan") == "success", run.parent.jobs
    assert run.child is not None, "no child pipeline"
    outcomes: dict[str, list[str]] = {}
    for name, status in run.child.jobs.items():  # gitlab-ci-local's own WARN lines are not jobs
        if job := re.match(r"xcompat:(\w+)", name):
            outcomes.setdefault(job.group(1), []).append(status)
    return outcomes


def _test_job_logs(merge_request: MergeRequest) -> list[str]:
    """gitlab-ci-local's log of each cell's test job (xcompat:test: [CELL,...])."""
    folder = merge_request.project.path / ".gitlab-ci-local" / "output"
    return [p.read_text(errors="replace") for p in sorted(folder.glob("xcompatOgtest*.log"))]


def test_every_stage_runs_for_each_cell_on_its_own_python(merge_request: MergeRequest,
                                                          pipeline: dict[str, list[str]]) -> None:
    # 2.2.0 narrowed Requires-Python (>=3.8 -> >=3.9) in a minor release: the ABI diff gates each
    # cell's test job, so the report and the gate are red too; every other stage passed.
    assert pipeline == {"build": ["success"] * 2, "test": ["failure"] * 2, "report": ["failure"],
                        "gate": ["failure"]}, pipeline
    out = merge_request.project.path / ".xcompat-out"
    cells = [c["id"] for c in json.loads((out / "plan.json").read_text())["cells"]]
    assert sorted(c.split("-")[0] for c in cells) == sorted([f"py{PYTHON}", f"py{OTHER}"]), cells
    for cell in cells:
        python = cell.split("-")[0].removeprefix("py")
        folder = out / "results" / cell
        status = {p.stem: json.loads(p.read_text())["status"] for p in folder.glob("*.json")}
        assert status == {"build": "passed", **dict.fromkeys(CELL_STAGES, "passed"), "kernels": "skipped",
                          "abi": "failed"}, (cell, status)
        assert len(json.loads((folder / "test.json").read_text())["tests"]) > 10
        # the cell's wheel was built by its own Python, and its jobs' venv ran that Python
        [wheel] = (out / "wheelhouse" / cell).glob("*.whl")
        assert f"-{NEW}-cp{python.replace('.', '')}-" in wheel.name, wheel.name
        probe = json.loads((folder / "probe.json").read_text())["python"]
        assert probe["version"].startswith(f"{python}.") and re.search(r"/xcompat-\d+/bin/python$",
                                                                         probe["executable"]), probe
        # the ABI diff against v2.1.0, built in CI by this cell's job and kept in the job's cache
        abi = json.loads((folder / "abi.json").read_text())
        assert f"({OLD} -> {NEW})" in abi["summary"], abi["summary"]
        assert {f["kind"] for f in abi["findings"]} == {"requires_python_narrowed"}, abi["findings"]
        snapshot = f"{cell}-v{OLD}-{merge_request.project.base[:12]}.abi.json.gz"
        assert (merge_request.project.path / ".xcompat-abi-baseline" / snapshot).is_file(), snapshot
    logs = _test_job_logs(merge_request)
    assert len(logs) == 2 and all(f"ABI baseline: the last release tag v{OLD}\n" in log for log in logs)


def _xcompat_notes(merge_request: MergeRequest) -> list[dict[str, object]]:
    return [n for n in merge_request.fake.notes if "xcompat" in str(n["body"])]


def test_the_mr_note_carries_abi_and_coverage(merge_request: MergeRequest, pipeline: dict[str, list[str]]) -> None:
    [note] = _xcompat_notes(merge_request)
    body = str(note["body"])
    assert "ABI needs a major bump" in body and "Requires-Python narrowed" in body, body[:3000]
    # the report job's merge of both cells' coverage, with its figure
    assert re.search(r"### Coverage: \d+(\.\d+)?%", body), body[:3000]
    assert f"py{PYTHON}-linux" in body and f"py{OTHER}-linux" in body
    assert re.search(r"\(http\S+/-/jobs/\d+/artifacts/browse/\.xcompat-out/report\)", body), body[:3000]
    assert merge_request.fake.violations == []


def test_a_head_whose_matrix_did_not_verify_gets_its_own_red_note(merge_request: MergeRequest,
                                                                   pipeline: dict[str, list[str]]) -> None:
    repo = merge_request.project.path
    [before] = _xcompat_notes(merge_request)
    matrix = repo / ".xcompat" / "matrix.yml"
    matrix.write_text(matrix.read_text().replace("timeout: 300", "timeout: 5"))  # not re-signed
    commit_all(repo, "a shorter timeout, not re-signed")
    # the whole parent pipeline: the plan job refuses, xcompat:unverified (when: on_failure) reports
    run = run_gitlab_ci_local(repo, work=merge_request.work, variables={}, path_first=merge_request.runner_bin)
    assert run.returncode != 0, run.log[-6000:]
    # the plan job refuses the matrix; the unverified job posts its red verdict and is red itself
    assert run.jobs.get("xcompat:plan") == "failure" and run.jobs.get("xcompat:unverified") == "failure", run.jobs
    assert "xcompat:cells" not in run.jobs, run.jobs
    [note] = _xcompat_notes(merge_request)  # the same note, edited: never a second one
    assert note["id"] == before["id"]
    body = str(note["body"])
    assert "the matrix signature did not verify" in body, body[:3000]
    assert "Coverage: " not in body and "ABI needs" not in body  # nothing of the first head's verdict
    assert merge_request.fake.violations == []
