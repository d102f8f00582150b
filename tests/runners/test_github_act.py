"""The GitHub workflows and the composite action as shipped, run by nektos/act on this machine.

One pull request from a fork goes through the reusable workflow (verify + plan, build, test,
report as a bundle with the read-only token, gate) and is then reported by the two-stage
`xcompat-report.yml`. The pull request also commits an output folder of its own (a plan whose
settings deselect a test and raise the timeout, with the real plan's matrix_sha256, and a result
for its cell): the run keeps the signed settings and counts only what its jobs uploaded. A change with a failing test then runs test -> abi -> report -> gate on
the green run's artifacts and turns red. A version tag then runs `release.yml`'s publish job
on the green run's artifacts: ABI diff, the gate, and the provenance and PyPI steps (stand-ins
that record the files they were given), which must get exactly the wheels the builds recorded;
the same job with a wheel swapped before the gate is refused and publishes nothing. The GitHub API is the loopback fake checked against
GitHub's OpenAPI description.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from tests.helpers import fake_github
from tests.helpers.report import make_test, make_test_result
from tests.runners.harness import (
    OWNER,
    REPO_ROOT,
    REPOSITORY,
    Project,
    commit_all,
    git,
    install_workflow,
    modules_that_ran,
    pin_xcompat,
    run_act,
    sample_project,
    snapshot_xcompat,
)

pytestmark = [
    pytest.mark.timeout(1800),
    pytest.mark.skipif(fake_github.contract_missing_reason() is not None,
                       reason=str(fake_github.contract_missing_reason())),
]

REPO_ID = 4242
FORK = "contributor/sample-ext"
PR_NUMBER = 7


# What the pull request's committed plan would change: a test of the sample deselected, the timeout
# raised; and the summary of the result it commits for its cell.
DESELECTED = "tests/test_core.py::test_version_and_abi"
PLANTED = "passed, as committed by the pull request"


def commit_an_output_folder(project: Project) -> None:
    """The contributor's change commits `.xcompat-out/`: the plan of the signed matrix with other
    test settings (its matrix_sha256 field left as it was) and a passing result for its cell."""
    matrix = project.path / ".xcompat" / "matrix.yml"
    plan = json.loads(subprocess.run([sys.executable, "-m", "xcompat", "matrix", "plan", str(matrix), "--format",
                                      "json"], check=True, capture_output=True, text=True).stdout)
    plan["settings"]["tests"].update(pytest_args=["--deselect", DESELECTED], timeout=999)
    out = project.path / ".xcompat-out"
    out.mkdir()
    (out / "plan.json").write_text(json.dumps(plan))
    planted = make_test_result(project.cell, [make_test("tests/test_planted.py::test_planted")])
    planted["summary"] = PLANTED
    (out / "results" / project.cell / "planted").mkdir(parents=True)
    (out / "results" / project.cell / "planted" / "test.json").write_text(json.dumps(planted))
    # act copies the workspace as .gitignore says, as a checkout does not: the change un-ignores it.
    gitignore = project.path / ".gitignore"
    gitignore.write_text(gitignore.read_text().replace(".xcompat-out/\n", ""))


def readme_caller_workflow() -> str:
    """The caller workflow exactly as the README shows it (the block under "Use it in GitHub Actions")."""
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("## Use it in GitHub Actions", 1)[1]
    return re.search(r"```yaml\n(.*?)```", section, re.DOTALL).group(1)


@dataclass
class GreenRun:
    project: Project
    head: str
    work: Path
    forge: Path
    sha: str
    fake: fake_github.FakeGitHub
    run_id: int


def pull_request_event(project: Project, head: str, *, fork: bool, number: int = PR_NUMBER) -> dict:
    repo = {"id": REPO_ID, "name": "sample-ext", "full_name": REPOSITORY, "owner": {"login": OWNER},
            "url": f"https://api.github.com/repos/{REPOSITORY}", "default_branch": "main"}
    head_repo = {"id": 9999, "full_name": FORK, "name": "sample-ext", "owner": {"login": FORK.split("/")[0]}} \
        if fork else repo
    return {
        "action": "synchronize",
        "number": number,
        "pull_request": {"number": number, "head": {"sha": head, "ref": "topic", "repo": head_repo},
                         "base": {"sha": project.base, "ref": "main", "repo": repo}},
        "repository": repo,
    }


@pytest.fixture(scope="module")
def green(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GreenRun]:
    work = tmp_path_factory.mktemp("act")
    forge = work / "forge"
    sha = snapshot_xcompat(forge)
    project = sample_project(work / "sample-ext")
    # The user's CI: the README's caller, the reusable workflow and the fork report workflow,
    # with the one thing a user fills in (the xcompat commit they reviewed) and a self-hosted
    # build (no docker here, so the native backend instead of cibuildwheel's containers).
    caller = pin_xcompat(readme_caller_workflow(), sha)
    # The sample's edge-case tests use xcompat.testing (hypothesis, numpy): the `testing` extra.
    caller, added = re.subn(r"\n(\s+)(xcompat-ref: .*)\n",
                            r"\n\1\2\n\1extras: testing\n\1build-args: |\n\1  --backend\n\1  native\n", caller, count=1)
    assert added == 1 and yaml.safe_load(caller)["jobs"]["xcompat"]["with"]["build-args"] == "--backend\nnative\n"
    install_workflow(project.path, "ci.yml", caller)
    install_workflow(project.path, "xcompat.yml", (REPO_ROOT / "workflows" / "xcompat.yml").read_text())
    install_workflow(project.path, "xcompat-report.yml",
                     pin_xcompat((REPO_ROOT / "workflows" / "xcompat-report.yml").read_text(), sha))
    commit_all(project.path, "CI workflows")
    project.base = git(project.path, "rev-parse", "HEAD")
    (project.path / "CHANGES.md").write_text("a contributor's change\n")
    commit_an_output_folder(project)
    head = commit_all(project.path, "contributor change")
    assert ".xcompat-out/plan.json" in git(project.path, "ls-files", ".xcompat-out")
    fake = fake_github.start(fake_github.FakeGitHub(fake_github.load_contract(), owner=OWNER, repo="sample-ext"))
    fake.add_pull(PR_NUMBER, head, head_repo=FORK)
    run = run_act(project.path, "pull_request", pull_request_event(project, head, fork=True), work=work,
                  forge=forge, run_id=101, token="read-only-token", api_url=fake.url, workflow="ci.yml",
                  extra_env={"GITHUB_REPOSITORY_ID": str(REPO_ID)})
    try:
        assert run.returncode == 0, run.log[-8000:]
        yield GreenRun(project=project, head=head, work=work, forge=forge, sha=sha, fake=fake, run_id=101)
    finally:
        fake_github.stop(fake)


def artifact(green: GreenRun, name: str, run_id: int | None = None) -> Path:
    return green.work / "artifacts" / str(run_id or green.run_id) / name


def test_fork_pull_request_runs_every_stage_green(green: GreenRun) -> None:
    project = green.project
    plan = json.loads((artifact(green, "xcompat-plan") / "plan.json").read_text())
    assert [c["id"] for c in plan["cells"]] == [project.cell]
    [wheel] = artifact(green, f"xcompat-wheels-{project.cell}").glob("sample_ext-*.whl")
    assert "manylinux" in wheel.name and zipfile.ZipFile(wheel).testzip() is None
    results = {p.name for p in (artifact(green, f"xcompat-results-{project.cell}-test") / project.cell).iterdir()}
    assert {"test.json", "junit.xml"} <= results
    test = json.loads((artifact(green, f"xcompat-results-{project.cell}-test") / project.cell / "test.json").read_text())
    assert test["status"] == "passed", test.get("summary")
    # The signed settings ran, not the committed plan's: nothing deselected, the timeout of the matrix.
    assert DESELECTED in {t["nodeid"] for t in test["tests"]}, sorted(t["nodeid"] for t in test["tests"])
    assert test["timeout_s"] == 120
    # The committed result was neither uploaded with the cell's results nor counted by the report.
    assert not (artifact(green, f"xcompat-results-{project.cell}-test") / project.cell / "planted").exists()
    report = (artifact(green, "xcompat-report") / "report.json").read_text()
    assert PLANTED not in report
    [cell] = json.loads(report)["cells"]
    assert [s["kind"] for s in cell["stages"]].count("test") == 1, cell["stages"]
    # The edge cases (hypothesis + numpy from the testing extra) ran, not skipped at import.
    junit = artifact(green, f"xcompat-results-{project.cell}-test") / project.cell / "junit.xml"
    assert {"tests.test_core", "tests.test_ops", "tests.test_edge_cases"} <= modules_that_ran(junit)
    # The fork's run had a read-only token: nothing was posted; the bundle waits for stage two.
    assert not [r for r in green.fake.requests if r["method"] != "GET"]
    assert (artifact(green, "xcompat-report") / "report.json").is_file()
    assert green.fake.violations == []


def test_report_workflow_posts_the_fork_bundle(green: GreenRun) -> None:
    head = green.head
    event = {
        "action": "completed",
        "workflow_run": {"id": green.run_id, "event": "pull_request", "conclusion": "success", "head_sha": head,
                         "head_branch": "topic", "pull_requests": [],
                         "head_repository": {"full_name": FORK, "owner": {"login": FORK.split("/")[0]}}},
        "repository": {"id": REPO_ID, "full_name": REPOSITORY, "url": f"https://api.github.com/repos/{REPOSITORY}"},
    }
    run = run_act(green.project.path, "workflow_run", event, work=green.work, forge=green.forge, run_id=102,
                  token="good-token", api_url=green.fake.url, workflow="xcompat-report.yml",
                  extra_env={"GITHUB_REPOSITORY_ID": str(REPO_ID)})
    assert run.returncode == 0, run.log[-6000:]
    [check] = [c for c in green.fake.check_runs.values() if c["head_sha"] == head]
    assert check["status"] == "completed" and check["conclusion"] == "success"
    [comment] = green.fake.comments[PR_NUMBER]
    assert green.project.cell in comment["body"]
    assert green.fake.violations == []


RED_WORKFLOW = """\
name: Red cell
on: pull_request
permissions: {}
jobs:
  red:
    runs-on: ubuntu-24.04
    permissions:
      contents: read
      checks: write
      pull-requests: write
    steps:
      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2
        with:
          persist-credentials: false
      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2
        with:
          repository: org/xcompat-action
          ref: XCOMPAT_SHA
          path: .xcompat-action
          persist-credentials: false
      - uses: actions/download-artifact@d3f86a106a0bac45b974a628896c90dbdf5c8093 # v4.3.0
        with:
          name: xcompat-plan
          path: .xcompat-out
          run-id: GREEN_RUN
          github-token: ${{ github.token }}
      - uses: actions/download-artifact@d3f86a106a0bac45b974a628896c90dbdf5c8093 # v4.3.0
        with:
          pattern: xcompat-wheels-*
          merge-multiple: true
          path: .xcompat-out/wheelhouse
          run-id: GREEN_RUN
          github-token: ${{ github.token }}
      - uses: actions/download-artifact@d3f86a106a0bac45b974a628896c90dbdf5c8093 # v4.3.0
        with:
          pattern: xcompat-results-*-build
          merge-multiple: true
          path: .xcompat-out/results
          run-id: GREEN_RUN
          github-token: ${{ github.token }}
      - id: test
        uses: ./.xcompat-action
        with:
          stage: test
          cell: CELL
          frameworks: '{"torch": "2.13"}'
          extras: testing
          fail-on-error: "false"
      - id: abi
        uses: ./.xcompat-action
        with:
          stage: abi
          abi-old: .xcompat/abi-baseline.json.gz
          abi-new: .xcompat-out/wheelhouse
          fail-on-error: "false"
      - id: report
        uses: ./.xcompat-action
        with:
          stage: report
          fail-on-error: "false"
      - id: gate
        uses: ./.xcompat-action
        with:
          stage: gate
          require-kinds: build,test
"""


def branch_with_abi_baseline(green: GreenRun, branch: str) -> Project:
    """A branch from the green head with the ABI baseline the abi stage diffs against (the last
    release's snapshot, as `xcompat abi snapshot` writes it): a snapshot of the green run's wheel."""
    import subprocess
    import sys

    project = green.project
    git(project.path, "checkout", "-q", "-b", branch, green.head)
    [wheel] = artifact(green, f"xcompat-wheels-{project.cell}").glob("*.whl")
    subprocess.run([sys.executable, "-m", "xcompat", "abi", "snapshot", str(wheel), "--output",
                    str(project.path / ".xcompat" / "abi-baseline.json.gz")], check=True, capture_output=True)
    return project


def test_failing_cell_turns_test_report_and_gate_red(green: GreenRun) -> None:
    project = branch_with_abi_baseline(green, "red")
    (project.path / "tests" / "test_regression.py").write_text(
        "def test_scale_is_kept():\n    assert 2 * 3 == 7, 'the scale factor was dropped'\n")
    text = (RED_WORKFLOW.replace("XCOMPAT_SHA", green.sha).replace("GREEN_RUN", str(green.run_id))
            .replace("CELL", project.cell))
    install_workflow(project.path, "red.yml", text)
    head = commit_all(project.path, "a change whose test fails")
    green.fake.add_pull(PR_NUMBER + 1, head)
    run = run_act(project.path, "pull_request", pull_request_event(project, head, fork=False, number=PR_NUMBER + 1),
                  work=green.work, forge=green.forge, run_id=103, token="good-token", api_url=green.fake.url,
                  workflow="red.yml", extra_env={"GITHUB_REPOSITORY_ID": str(REPO_ID)})
    assert run.returncode != 0 and run.jobs.get("Red cell/red") == "failure", run.log[-6000:]
    [check] = [c for c in green.fake.check_runs.values() if c["head_sha"] == head]
    assert check["conclusion"] == "failure"
    assert "test_scale_is_kept" in json.dumps(check.get("_output"))
    assert "collection failed" not in run.log  # red for the failing test, not for the environment
    # test, abi, report and gate each ran and said so; the gate is what turned the job red.
    work = green.work
    assert "release refused" in run.log and "test_scale_is_kept" in run.log
    diffs = list((work / "xdg-cache").rglob(".xcompat-out/abi-diff.json"))
    assert diffs and json.loads(diffs[-1].read_text())["required_bump"] == "none"  # the same wheel as the baseline
    assert green.fake.violations == []


# -- release.yml: a version tag gates and publishes exactly the wheels the passing builds recorded --
# Its `xcompat` job is the reusable workflow the pull request above already ran; its publish job
# runs here on a tag push, on that run's artifacts (plan, results, wheels), as the shipped file
# has it apart from the two download inputs that point at that run and the `needs` on it.

def release_workflow(sha: str) -> str:
    """workflows/release.yml as a user installs it: both pins filled in, plus what this sample
    needs on this machine (the testing extra, the native build backend)."""
    text = pin_xcompat((REPO_ROOT / "workflows" / "release.yml").read_text(), sha)
    text, added = re.subn(r"\n(\s+)(xcompat-ref: .*)\n",
                          r"\n\1\2\n\1extras: testing\n\1build-args: |\n\1  --backend\n\1  native\n", text, count=1)
    assert added == 1 and "<sha>" not in text
    return text


def publish_job(green: GreenRun, name: str, *, swap_a_wheel: bool = False) -> str:
    doc = yaml.safe_load(release_workflow(green.sha))
    # What is not run here is checked as written: the matrix runs first, through the reusable
    # workflow at the pinned xcompat commit, and publishing waits for it.
    matrix_job, job = doc["jobs"]["xcompat"], doc["jobs"]["publish"]
    assert matrix_job["uses"] == "./.github/workflows/xcompat.yml" and matrix_job["with"]["xcompat-ref"] == green.sha
    assert job.pop("needs") == "xcompat"
    for step in job["steps"]:
        if str(step.get("uses", "")).startswith("actions/download-artifact@"):
            step["with"].update({"run-id": str(green.run_id), "github-token": "${{ github.token }}"})
    if swap_a_wheel:  # a compromised step or a poisoned cache between the builds and the gate
        gate_at = next(i for i, s in enumerate(job["steps"]) if s.get("name") == "Release gate")
        job["steps"].insert(gate_at, {"name": "swap a wheel", "shell": "bash", "run": (
            "set -euo pipefail\nw=$(ls dist/*.whl | head -n1)\n"
            "python3 -c \"import sys, zipfile; zipfile.ZipFile(sys.argv[1], 'a').writestr('extra.txt', 'x')\" \"$w\"")})
    return yaml.safe_dump({"name": name, "on": "push", "permissions": {}, "jobs": {"publish": job}}, sort_keys=False)


def tag_push_event(tag: str, head: str) -> dict:
    repo = {"id": REPO_ID, "name": "sample-ext", "full_name": REPOSITORY, "owner": {"login": OWNER},
            "url": f"https://api.github.com/repos/{REPOSITORY}", "default_branch": "main"}
    return {"ref": f"refs/tags/{tag}", "before": "0" * 40, "after": head, "created": True,
            "repository": repo, "pusher": {"name": OWNER}}


def calls(green: GreenRun, run_id: int) -> list[dict]:
    path = green.work / "artifacts" / "calls" / f"{run_id}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


RELEASE_RUN = 105


@pytest.fixture(scope="module")
def release_branch(green: GreenRun) -> Project:
    project = branch_with_abi_baseline(green, "release")  # committed with the release, as release.yml expects
    git(project.path, "tag", "v0.9.0", project.base)  # the previous release
    # The gate verifies the matrix against the default branch's trust list (origin/main).
    git(project.path, "update-ref", "refs/remotes/origin/main", project.base)
    return project


def release(green: GreenRun, project: Project, tag: str, workflow: str, run_id: int):
    head = commit_all(project.path, f"release {tag}")
    git(project.path, "tag", tag, head)
    return run_act(project.path, "push", tag_push_event(tag, head), work=green.work, forge=green.forge,
                   run_id=run_id, token="good-token", api_url=green.fake.url, workflow=workflow,
                   extra_env={"GITHUB_REPOSITORY_ID": str(REPO_ID)})


def test_a_green_tag_is_gated_then_publishes_exactly_the_recorded_wheels(green: GreenRun, release_branch) -> None:
    install_workflow(release_branch.path, "release.yml", publish_job(green, "Release"))
    run = release(green, release_branch, "v1.0.0", "release.yml", RELEASE_RUN)
    assert run.returncode == 0, run.log[-8000:]
    assert run.jobs.get("Release/Gate and publish") == "success", run.jobs
    assert re.search(r"^\[Release/Gate and publish\].*release allowed: all \d+ checks passed", run.log, re.MULTILINE)
    builds = list((green.work / "artifacts" / str(green.run_id)).glob("xcompat-results-*-build/**/build.json"))
    assert builds, "the pull request's run recorded no build"
    recorded = {(w["file"].rsplit("/", 1)[-1], w["sha256"]) for b in builds for w in json.loads(b.read_text())["wheels"]}
    made = calls(green, RELEASE_RUN)
    assert [c["kind"] for c in made] == ["attest", "publish"], made
    for call in made:
        assert {(f["file"], f["sha256"]) for f in call["files"]} == recorded, (call, recorded)
    assert green.fake.violations == []


def test_a_wheel_swapped_after_the_builds_is_refused_and_nothing_is_published(green: GreenRun,
                                                                            release_branch) -> None:
    install_workflow(release_branch.path, "swapped.yml", publish_job(green, "Swapped release", swap_a_wheel=True))
    run = release(green, release_branch, "v1.0.1", "swapped.yml", RELEASE_RUN + 1)
    assert run.returncode != 0, run.log[-8000:]
    assert "swap a wheel" in run.log
    assert re.search(r"release refused: 1 of \d+ checks failed \(wheels\)", run.log), run.log[-8000:]
    assert calls(green, RELEASE_RUN + 1) == []  # neither attested nor published
