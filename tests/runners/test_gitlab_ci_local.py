"""The GitLab CI/CD component and the include template as shipped, run by gitlab-ci-local.

The README's `.gitlab-ci.yml`, with the component included by `include: local:` and
`inputs:` (gitlab-ci-local cannot fetch `component:` includes from a server), runs a merge
request pipeline: verify + plan, then the child pipeline the plan job generates (build, test,
report, gate per cell) through gitlab-ci-local's downstream pipelines. xcompat is installed
by every job from `install-source` (a git URL of a snapshot of this checkout, as the default
points at the component's own project). The Notes API is the loopback fake GitLab. The failing
change's test job is first handed a plan whose settings skip the failing test (its matrix_sha256
field kept), and refuses it; the change also commits a result for its cell, which is not counted.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from tests.helpers import fake_gitlab
from tests.helpers.fake_github import start, stop
from tests.helpers.report import make_test, make_test_result
from tests.runners.harness import (
    ACTION_REPOSITORY,
    REPO_ROOT,
    REPOSITORY,
    Project,
    child_variables,
    commit_all,
    git,
    modules_that_ran,
    run_gitlab_ci_local,
    run_with_child_pipeline,
    sample_project,
    shell_runner_copy,
    snapshot_xcompat,
)

pytestmark = pytest.mark.timeout(1800)

COMPONENT = REPO_ROOT / "templates" / "xcompat.yml"
INCLUDE = REPO_ROOT / "templates" / "include" / "xcompat.gitlab-ci.yml"
MR_IID = 7


def readme_gitlab_ci() -> str:
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("## Use it in GitLab CI", 1)[1]
    return re.search(r"```yaml\n(.*?)```", section, re.DOTALL).group(1)


@dataclass
class Pipeline:
    project: Project
    work: Path
    fake: fake_gitlab.FakeGitLab
    source: str
    variables: dict[str, str]
    trigger: dict = field(default_factory=dict)  # the parent's trigger job, once the green pipeline ran


def project_variables(project: Project, fake: fake_gitlab.FakeGitLab, **extra: str) -> dict[str, str]:
    """Variables a project's CI/CD settings and the merge request give every job, child pipelines included."""
    return {
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_MERGE_REQUEST_IID": str(MR_IID),
        "CI_MERGE_REQUEST_DIFF_BASE_SHA": project.base,
        "CI_PROJECT_ID": "42",
        "CI_PROJECT_PATH": REPOSITORY,
        "CI_DEFAULT_BRANCH": "main",
        "CI_API_V4_URL": f"{fake.url}/api/v4",
        "XCOMPAT_GITLAB_TOKEN": "glpat-good",
        # Shell runners: no image for the jobs the plan generates.
        "XCOMPAT_IMAGE": "",
        "XCOMPAT_CELL_IMAGE": "",
        **extra,
    }


def write_variables(project: Project, variables: dict[str, str]) -> None:
    # gitlab-ci-local's project variables file: like GitLab's CI/CD settings, they reach child pipelines.
    (project.path / ".gitlab-ci-local-variables.yml").write_text(yaml.safe_dump(variables))


def gitlab_ci_yml(readme: str, source: str) -> str:
    """The README's pipeline with the component included locally, plus the inputs this machine needs."""
    text, n = re.subn(r"  - component: \S+/xcompat@\S+\n    inputs:\n",
                      "  - local: templates/xcompat.yml\n    inputs:\n"
                      f"      install-source: {source}\n"
                      "      build-args: --backend native\n"
                      # the sample's edge-case tests use xcompat.testing (hypothesis, numpy)
                      "      test-extras: testing\n", readme)
    assert n == 1, "the README no longer includes the component as `- component: .../xcompat@<version>`"
    return text


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipeline]:
    work = tmp_path_factory.mktemp("gitlab")
    forge = work / "forge"
    sha = snapshot_xcompat(forge)
    # file://localhost/...: the pip that `python3 -m venv` bundles (23.x) refuses `name @ git+file:///path`.
    source = f"git+file://localhost{forge / ACTION_REPOSITORY}@{sha}"
    project = sample_project(work / "sample-ext")
    shell_runner_copy(COMPONENT, project.path / "templates" / "xcompat.yml")
    (project.path / ".gitlab-ci.yml").write_text(gitlab_ci_yml(readme_gitlab_ci(), source))
    (project.path / ".gitignore").write_text((project.path / ".gitignore").read_text()
                                             + ".gitlab-ci-local-variables.yml\n")
    project.base = commit_all(project.path, "GitLab CI")
    (project.path / "CHANGES.md").write_text("a merge request's change\n")
    commit_all(project.path, "change")
    fake = start(fake_gitlab.FakeGitLab(project_id="42", project_path=REPOSITORY, mr_iid=MR_IID))
    variables = project_variables(project, fake)
    write_variables(project, variables)
    try:
        yield Pipeline(project=project, work=work, fake=fake, source=source, variables=variables)
    finally:
        stop(fake)


def test_rendered_component_and_include_match_gitlab_schema(pipeline: Pipeline, tmp_path: Path) -> None:
    """The component's header and body as GitLab renders them, and the include template, against
    GitLab's published CI schema (vendored by check-jsonschema)."""
    header, body = COMPONENT.read_text().split("\n---\n", 1)
    spec = yaml.safe_load(header)
    rendered = body
    for name, value in spec["spec"]["inputs"].items():
        default = value.get("default", "")
        default = ("true" if default else "false") if isinstance(default, bool) else str(default)
        # GitLab interpolates into the parsed YAML: an empty input stays an empty string.
        rendered = rendered.replace(f"$[[ inputs.{name} ]]", json.dumps(default))
    rendered = rendered.replace("$[[ component.sha ]]", json.dumps("0" * 40))
    assert "$[[" not in rendered
    files = {"header.yml": header, "body.yml": rendered, "include.yml": INCLUDE.read_text()}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.gitlab-ci",
                           *(str(tmp_path / n) for n in files)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # ... and the child pipeline the plan job generates (written by the green pipeline below).
    child = pipeline.project.path / ".xcompat-out" / "child.yml"
    if child.is_file():
        proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.gitlab-ci",
                               str(child)], capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_merge_request_pipeline_runs_every_stage_green(pipeline: Pipeline) -> None:
    run = run_with_child_pipeline(pipeline.project.path, work=pipeline.work)
    pipeline.trigger = run.trigger
    assert run.parent.returncode == 0, run.parent.log[-8000:]
    assert run.child is not None and run.child.returncode == 0, run.child.log[-8000:] if run.child else ""
    project = pipeline.project
    out = project.path / ".xcompat-out"
    plan = json.loads((out / "plan.json").read_text())
    assert [c["id"] for c in plan["cells"]] == [project.cell]
    assert run.parent.jobs.get("xcompat:plan") == "success", run.parent.jobs
    for job in ("xcompat:build", "xcompat:test", "xcompat:report", "xcompat:gate"):
        assert [r for name, r in run.child.jobs.items() if name.startswith(job)] == ["success"], run.child.jobs
    test_json = next(out.rglob(f"results/{project.cell}/test.json"))
    assert json.loads(test_json.read_text())["status"] == "passed"
    # The edge cases (hypothesis + numpy from test-extras: testing) ran, not skipped at import.
    modules = modules_that_ran(test_json.with_name("junit.xml"))
    assert {"tests.test_core", "tests.test_ops", "tests.test_edge_cases"} <= modules, modules
    assert json.loads((out / "gate.json").read_text())["allowed"] is True
    [note] = [n for n in pipeline.fake.notes if "xcompat" in n["body"]]
    assert project.cell in note["body"]
    assert pipeline.fake.violations == []


def test_failing_cell_turns_the_child_pipeline_red(pipeline: Pipeline) -> None:
    """A change whose test fails: test -> report -> gate again on the green run's plan and wheel."""
    project = pipeline.project
    out = project.path / ".xcompat-out"
    assert (out / "child.yml").is_file() and pipeline.trigger, "the green pipeline did not run"
    (project.path / "tests" / "test_regression.py").write_text(
        "def test_scale_is_kept():\n    assert 2 * 3 == 7, 'the scale factor was dropped'\n")
    # The change also commits a passing result for its cell, beside the ones the jobs will write.
    planted = make_test_result(project.cell, [make_test("tests/test_planted.py::test_planted")])
    planted["summary"] = "passed, as committed by the merge request"
    (out / "results" / project.cell / "planted").mkdir(parents=True)
    (out / "results" / project.cell / "planted" / "test.json").write_text(json.dumps(planted))
    git(project.path, "add", "--force", str(out / "results" / project.cell / "planted" / "test.json"))
    commit_all(project.path, "a change whose test fails")
    variables = child_variables(pipeline.trigger, 42)

    # A plan the plan job did not write (a swapped artifact): the failing test deselected, the
    # matrix_sha256 field as the verified plan's. The test job refuses it before running anything.
    genuine = (out / "plan.json").read_text()
    forged = json.loads(genuine)
    forged["settings"]["tests"]["pytest_args"] = ["--deselect", "tests/test_regression.py::test_scale_is_kept"]
    (out / "plan.json").write_text(json.dumps(forged))
    try:
        refused = run_gitlab_ci_local(project.path, work=pipeline.work, file=".xcompat-out/child.yml",
                                      variables=variables, jobs=["xcompat:test"])
    finally:
        (out / "plan.json").write_text(genuine)
    assert refused.returncode != 0, refused.log[-6000:]
    assert "$.settings.tests.pytest_args is not what the verified matrix" in refused.log, refused.log[-6000:]

    run = run_gitlab_ci_local(project.path, work=pipeline.work, file=".xcompat-out/child.yml",
                              variables=variables, jobs=["xcompat:test", "xcompat:report", "xcompat:gate"])
    assert run.returncode != 0, run.log[-6000:]
    statuses = {name.split(":")[1].split()[0]: status for name, status in run.jobs.items()}
    assert statuses == {"test": "failure", "report": "failure", "gate": "failure"}, run.jobs
    test = json.loads(next(out.rglob(f"results/{project.cell}/test.json")).read_text())
    assert test["status"] == "failed"
    gate = json.loads((out / "gate.json").read_text())
    assert gate["allowed"] is False
    notes = [n for n in pipeline.fake.notes if "xcompat" in n["body"]]
    assert len(notes) == 1, "the MR note is updated in place, not posted again"
    assert "test_scale_is_kept" in notes[0]["body"]
    # The committed result went before the jobs read the folder: not counted, not in the report.
    assert not (out / "results" / project.cell / "planted").exists()
    report = (out / "report" / "report.json").read_text()
    assert "as committed by the merge request" not in report
    [cell] = json.loads(report)["cells"]
    assert [s["kind"] for s in cell["stages"]].count("test") == 1, cell["stages"]
    assert pipeline.fake.violations == []


def test_include_template_plan_job(pipeline: Pipeline, tmp_path: Path) -> None:
    """The include template (for instances without components) runs its plan job the same way."""
    project = pipeline.project
    git(project.path, "checkout", "-q", "-b", "include-template")
    shell_runner_copy(INCLUDE, project.path / "templates" / "include.yml")
    (project.path / ".gitlab-ci.yml").write_text(
        "include:\n  - local: templates/include.yml\n"
        "stages: [verify, test]\n"
        f"variables:\n  XCOMPAT_INSTALL_SOURCE: {pipeline.source}\n")
    commit_all(project.path, "include template")
    run = run_gitlab_ci_local(project.path, work=pipeline.work, variables={}, jobs=["xcompat:plan"])
    assert run.returncode == 0, run.log[-6000:]
    child = yaml.safe_load((project.path / ".xcompat-out" / "child.yml").read_text())
    assert set(child) >= {"xcompat:build", "xcompat:test", "xcompat:report", "xcompat:gate"}
