"""Run the composite action's steps as GitHub's runner would, with GitHub's own expression library.

The action is run from this checkout (``GITHUB_ACTION_PATH`` = the repository root) with
``install: 'false'`` and this test environment's Python, so no pip install happens here; every
other step runs exactly as in Actions.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.action import (
    REPO_ROOT,
    Repo,
    envelope,
    expressions_available,
    git,
    plan_document,
    run_composite_action,
    write,
)

from xcompat.jsonio import validate

REASON = expressions_available()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"composite action runner unavailable: {REASON}")

LOCAL = {"python": sys.executable, "install": "false"}
UNSIGNED = {**LOCAL, "verify": "false"}  # the crafted workspaces below carry no signed matrix
CELLS = ("py3.12-linux-x86_64-cpu", "py3.12-linux-aarch64-cpu")


@pytest.fixture
def workspace(tmp_path: Path) -> Repo:
    path = tmp_path / "ws"
    path.mkdir()
    repo = Repo(path)
    repo.commit()
    repo.tag("v1.0.0")
    repo.commit()
    repo.tag("v1.1.0")
    out = path / ".xcompat-out"
    write(out / "plan.json", plan_document((CELLS[0], True), (CELLS[1], True)))
    for cid in CELLS:
        write(out / "results" / cid / "test.json", envelope("test", cid, "passed", "5 passed"))
    write(out / "abi-diff.json", {"version": 1, "required_bump": "minor", "findings": []})
    return repo


def gate(workspace: Repo, **inputs: str):
    return run_composite_action(
        REPO_ROOT, {"stage": "gate", "abi-diff": ".xcompat-out/abi-diff.json", **UNSIGNED, **inputs},
        workspace=workspace.path,
        github={"ref": "refs/tags/v1.1.0", "ref_name": "v1.1.0", "ref_type": "tag"},
    )


def test_gate_stage_allows_a_good_release(workspace: Repo) -> None:
    run = gate(workspace, **{"require-kinds": "test"})
    assert run.status == "success", run.log
    assert [s.id for s in run.steps if s.ran] == ["setup", "run"]
    assert run.step("verify").outcome == "skipped" and run.step("plan").outcome == "skipped"
    assert run.outputs["conclusion"] == "success"
    assert run.outputs["exit-code"] == "0"
    assert run.outputs["xcompat-version"] == __import__("xcompat").__version__
    result = Path(run.outputs["result"])
    assert result == workspace.path / ".xcompat-out" / "gate.json"
    document = json.loads(result.read_text())
    validate("gate", document)
    assert document["allowed"] is True and document["tag"] == "v1.1.0"
    assert document["release"]["previous_tag"] == "v1.0.0"
    assert "xcompat release gate" in run.summary
    # inputs reach the shell through env only
    assert run.step("run").env["XCOMPAT_REQUIRE_KINDS"] == "test"
    # the token reaches only the report stage: build and test run the project's code
    assert run.step("run").env["GITHUB_TOKEN"] == ""


def test_gate_stage_refusal_fails_the_step_but_keeps_outputs(workspace: Repo) -> None:
    (workspace.path / ".xcompat-out" / "results" / CELLS[1] / "test.json").unlink()
    run = gate(workspace)
    assert run.status == "failure"
    assert run.step("run").outcome == "failure"
    assert run.outputs["conclusion"] == "failure"
    assert run.outputs["exit-code"] == "1"
    document = json.loads(Path(run.outputs["result"]).read_text())
    assert document["allowed"] is False
    assert any(c["name"] == f"cell:{CELLS[1]}" and not c["passed"] for c in document["checks"])
    assert "::error::release refused" in run.step("run").stderr + run.step("run").stdout


def test_fail_on_error_false_reports_the_conclusion_instead(workspace: Repo) -> None:
    write(workspace.path / ".xcompat-out" / "abi-diff.json", {"version": 1, "required_bump": "major"})
    run = gate(workspace, **{"fail-on-error": "false"})
    assert run.status == "success", run.log
    assert run.outputs["conclusion"] == "failure"
    assert run.outputs["exit-code"] == "1"


def test_args_are_passed_one_per_line_without_shell_parsing(workspace: Repo) -> None:
    # A hostile value stays one literal argument: nothing is executed, the file is not created.
    run = gate(workspace, args="--previous-tag\nv1.0.0; touch pwned\n", **{"fail-on-error": "false"})
    assert not (workspace.path / "pwned").exists()
    assert run.outputs["exit-code"] == "2", run.log
    assert "'v1.0.0; touch pwned' is not a PEP 440 version" in run.log


def test_unknown_stage_stops_in_setup(workspace: Repo) -> None:
    run = run_composite_action(REPO_ROOT, {"stage": "deploy", **LOCAL}, workspace=workspace.path)
    assert run.status == "failure"
    assert run.step("setup").outcome == "failure"
    assert "unknown stage 'deploy'" in run.step("setup").stdout
    assert all(s.outcome == "skipped" for s in run.steps[1:])
    assert run.outputs["conclusion"] == ""


def test_python_without_this_xcompat_is_refused(workspace: Repo, tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "python-fake"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 0.0.1\n")
    fake.chmod(0o755)
    run = run_composite_action(REPO_ROOT, {"stage": "gate", "python": str(fake), "install": "false"},
                               workspace=workspace.path)
    assert run.step("setup").outcome == "failure"
    assert "xcompat 0.0.1 is installed but this action is" in run.step("setup").stdout


def test_windows_runner_is_refused(workspace: Repo) -> None:
    run = run_composite_action(REPO_ROOT, {"stage": "gate", **LOCAL}, workspace=workspace.path,
                               runner_os="Windows")
    assert run.step("setup").outcome == "failure"
    assert "runs on Linux and macOS runners" in run.step("setup").stdout


SAMPLE = REPO_ROOT / "examples" / "sample-ext"


def _plan_commands_ready() -> str | None:
    if not (SAMPLE / ".xcompat" / "matrix.yml").is_file():
        return "examples/sample-ext/.xcompat/matrix.yml does not exist yet"
    proc = subprocess.run([sys.executable, "-m", "xcompat", "matrix", "plan", "--help"], capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        return "xcompat matrix plan is not available in this installation"
    return None


def _sample_repository(project: Path) -> str:
    import yaml

    return yaml.safe_load((project / ".xcompat" / "matrix.yml").read_text())["repo"]


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    reason = _plan_commands_ready()
    if reason:
        pytest.skip(reason)
    project = tmp_path / "ws" / "sample-ext"
    shutil.copytree(SAMPLE, project, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    return project


def test_plan_stage_on_the_sample_project(sample: Path) -> None:
    inputs = {"stage": "plan", "project-dir": str(sample), **LOCAL}
    run = run_composite_action(REPO_ROOT, inputs, workspace=sample.parent,
                               github={"repository": _sample_repository(sample)})
    assert run.status == "success", run.log
    assert run.step("verify").outcome == "success"
    assert "Good " in run.step("verify").stdout + run.step("verify").stderr
    matrix = json.loads(run.outputs["matrix"])
    assert matrix["include"], "the plan has no cells"
    assert all("cell" in cell and "runs-on" in cell for cell in matrix["include"])
    plan = json.loads(Path(run.outputs["plan"]).read_text())
    assert int(run.outputs["cells"]) == len(plan["cells"]) == len(matrix["include"])
    assert [c["id"] for c in plan["cells"]] == [c["cell"] for c in matrix["include"]]
    assert run.outputs["conclusion"] == "success"
    assert run.outputs["result"] == run.outputs["plan"]
    assert run.step("run").outcome == "skipped"


def test_plan_stage_verifies_against_the_pull_request_base(sample: Path) -> None:
    """On a pull_request event the trust list comes from the PR's base commit, not the checkout."""
    repo = Repo(sample.parent)
    git(repo.path, "add", "-A")
    git(repo.path, "commit", "-q", "-m", "base")
    base = git(repo.path, "rev-parse", "HEAD").strip()
    matrix = sample / ".xcompat" / "matrix.yml"
    matrix.write_text(matrix.read_text().replace("serial:", "# tampered\nserial:", 1))
    git(repo.path, "commit", "-q", "-am", "head: edit the matrix without re-signing")
    run = run_composite_action(
        REPO_ROOT, {"stage": "plan", "project-dir": str(sample), **LOCAL}, workspace=repo.path,
        github={"repository": _sample_repository(sample), "event_name": "pull_request",
                "event": {"pull_request": {"base": {"sha": base}, "number": 7}}},
    )
    assert run.status == "failure"
    assert run.step("verify").outcome == "failure"
    assert run.step("verify").env["XCOMPAT_PR_BASE_SHA"] == base
    assert run.step("verify").outputs["exit-code"] == "3"
    # the plan step only reports the conclusion: nothing was planned from an unverified matrix
    assert run.step("plan").outcome == "failure"
    assert "nothing was planned" in run.step("plan").stdout
    assert not (sample.parent / ".xcompat-out" / "plan.json").exists()
    assert run.outputs["matrix"] == ""
    assert (run.outputs["conclusion"], run.outputs["exit-code"]) == ("failure", "3")
    # why, for this head's own red report (the report stage's verification-failed input)
    assert run.outputs["verify-error"].startswith(".xcompat/matrix.yml: signature does not match"), run.outputs
    reported = run_composite_action(
        REPO_ROOT, {"stage": "report", "project-dir": str(sample), "verification-failed": run.outputs["verify-error"],
                    "fail-on-error": "false", "github-token": "", **LOCAL}, workspace=repo.path,
        github={"repository": _sample_repository(sample), "event_name": "pull_request"})
    assert reported.outputs["conclusion"] == "failure", reported.log
    report = (repo.path / ".xcompat-out" / "report" / "report.md").read_text()
    assert "the matrix signature did not verify: .xcompat/matrix.yml: signature does not match" in report


def test_plan_then_gate_on_the_sample_project(sample: Path) -> None:
    """The whole release decision through the action: signed matrix -> plan -> results -> gate on a tag."""
    github = {"repository": _sample_repository(sample), "ref": "refs/tags/v0.2.0", "ref_name": "v0.2.0",
              "ref_type": "tag"}
    planned = run_composite_action(REPO_ROOT, {"stage": "plan", "project-dir": str(sample), **LOCAL},
                                   workspace=sample.parent, github=github)
    assert planned.status == "success", planned.log
    assert re.fullmatch(r"[0-9a-f]{64}", planned.step("plan").env["XCOMPAT_VERIFIED_SHA256"])
    plan = json.loads(Path(planned.outputs["plan"]).read_text())
    results = sample.parent / ".xcompat-out" / "results"
    for cell in plan["cells"]:
        for kind in ("build", "test"):
            write(results / cell["id"] / f"{kind}.json", envelope(kind, cell["id"], "passed"))
    inputs = {"stage": "gate", "project-dir": str(sample), "require-kinds": "build, test", **LOCAL}
    gated = run_composite_action(REPO_ROOT, inputs, workspace=sample.parent, github=github)
    assert gated.status == "success", gated.log
    document = json.loads(Path(gated.outputs["result"]).read_text())
    validate("gate", document)
    names = {c["name"] for c in document["checks"]}
    assert {"matrix-signature", "plan-source"} <= names
    assert sum(n.startswith("cell:") for n in names) == sum(1 for c in plan["cells"] if c["required"]) or \
        plan["settings"]["gate"]["required_backends"]
    # one required cell loses its test result: the same run is refused
    required = next(c["id"] for c in plan["cells"] if c["required"])
    (results / required / "test.json").unlink()
    refused = run_composite_action(REPO_ROOT, {**inputs, "fail-on-error": "false"}, workspace=sample.parent,
                                   github=github)
    assert refused.outputs["conclusion"] == "failure"
    document = json.loads(Path(refused.outputs["result"]).read_text())
    failed = [c for c in document["checks"] if not c["passed"]]
    assert [c["name"] for c in failed] == [f"cell:{required}"]
    assert failed[0]["reason"] == "got results for build, expected also test"


def test_report_stage_posts_to_github_as_its_openapi_contract_allows(workspace: Repo) -> None:
    """The report stage against a loopback GitHub that checks every request against @octokit/openapi."""
    from tests.helpers import fake_github

    reason = fake_github.contract_missing_reason()
    if reason:
        pytest.skip(reason)
    fake = fake_github.start(fake_github.FakeGitHub(fake_github.load_contract()))
    sha = "b" * 40
    fake.add_pull(7, sha)
    try:
        run = run_composite_action(
            REPO_ROOT, {"stage": "report", "github-token": "good-token", **UNSIGNED}, workspace=workspace.path,
            github={"repository": "octo/proj", "event_name": "pull_request", "sha": sha,
                    "event": {"pull_request": {"number": 7, "head": {"sha": sha, "repo": {"full_name": "octo/proj"}}}}},
            env={"GITHUB_API_URL": fake.url},
        )
    finally:
        fake_github.stop(fake)
    assert run.step("run").env["GITHUB_TOKEN"] == "good-token"
    assert fake.violations == []
    assert fake.check_runs, run.log
    assert [c["body"] for c in fake.comments.get(7, [])], run.log
    assert Path(run.outputs["result"]).is_file(), run.log
    assert "xcompat" in run.summary.lower()
    assert run.outputs["conclusion"] == "success", run.log


def test_test_stage_then_gate(tmp_path: Path) -> None:
    """test (with the cell's framework pins installed) -> results -> gate, on a tiny project."""
    from importlib.metadata import version

    workspace = tmp_path / "ws"
    (workspace / "proj" / "tests").mkdir(parents=True)
    (workspace / "proj" / "tests" / "test_ok.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    cell = "py3.11-linux-x86_64-cpu"
    major = version("pytest").split(".")[0]
    run = run_composite_action(
        REPO_ROOT,
        {"stage": "test", "cell": cell, "project-dir": "proj", "install-wheel": "false",
         "frameworks": json.dumps({"pytest": major}), "args": "--isolate\nnone\n--no-warm-torch", **UNSIGNED},
        workspace=workspace,
    )
    assert run.status == "success", run.log
    result = Path(run.outputs["result"])
    assert result == workspace / ".xcompat-out" / "results" / cell / "test.json"
    document = json.loads(result.read_text())
    assert (document["kind"], document["cell_id"], document["status"]) == ("test", cell, "passed")
    assert (result.parent / "junit.xml").is_file()
    write(workspace / ".xcompat-out" / "plan.json", plan_document((cell, True)))
    gated = run_composite_action(REPO_ROOT, {"stage": "gate", "require-kinds": "test", **UNSIGNED},
                                 workspace=workspace)
    assert gated.outputs["conclusion"] == "success", gated.log


@pytest.mark.slow
@pytest.mark.network
def test_real_install_path_builds_the_actions_own_venv(tmp_path: Path) -> None:
    """`install: 'true'` as in Actions: a fresh venv from the runner's Python, pip install $GITHUB_ACTION_PATH."""
    system_python = shutil.which("python3", path="/usr/bin:/usr/local/bin")
    if system_python is None:
        pytest.skip("no system python3 to build the venv from")
    run = run_composite_action(REPO_ROOT, {"stage": "gate", "verify": "false", "python": system_python,
                                           "fail-on-error": "false"}, workspace=tmp_path)
    setup = run.step("setup")
    if setup.outcome != "success" and re.search(r"NewConnectionError|Could not find a version|No matching distribution",
                                                setup.stderr):
        pytest.skip("PyPI is not reachable from here: " + setup.stderr.strip().splitlines()[-1])
    assert setup.outcome == "success", run.log
    venv_python = Path(setup.outputs["python"])
    # one venv per xcompat version and interpreter: a runner serves cells of several Pythons
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert venv_python.name == "python" and venv_python.parent.parent.name == \
        f"xcompat-venv-{__import__('xcompat').__version__}-py{here}"
    assert str(venv_python) != sys.executable
    assert run.outputs["xcompat-version"] == __import__("xcompat").__version__
    # the venv's xcompat really ran the stage (and refused: no plan here)
    assert run.outputs["exit-code"] == "2"


@pytest.mark.parametrize("stage", ["build", "test"])
def test_build_and_test_stages_install_the_cells_frameworks_under_the_jobs_pip_constraints(
        tmp_path: Path, stage: str) -> None:
    """The frameworks of a cell go through pip with the job's PIP_CONSTRAINT (how CI pins the CPU torch).
    A constraint no release satisfies makes the install fail before anything is installed, which
    shows the constraint was read; the stage then reports it instead of building or testing."""
    from importlib.metadata import version

    workspace = tmp_path / "ws"
    (workspace / "proj" / "tests").mkdir(parents=True)
    (workspace / "proj" / "pyproject.toml").write_text('[project]\nname = "proj"\nversion = "1.0"\n')
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("pytest==0.0.1\n")  # no such release
    major = version("pytest").split(".")[0]
    # the build stage builds the cell from the verified matrix the plan artifact carries
    verified = workspace / ".xcompat-out" / "matrix.yml"
    verified.parent.mkdir()
    verified.write_text('xcompat: 1\nrepo: acme/proj\nserial: 1\npython: ["3.11"]\n'
                        "platforms: {linux: {archs: [x86_64]}}\nbackends: {cpu: {required: true}}\n")
    run = run_composite_action(
        REPO_ROOT,
        {"stage": stage, "cell": "py3.11-linux-x86_64-cpu", "project-dir": "proj", "install-wheel": "false",
         "frameworks": json.dumps({"pytest": major}), "fail-on-error": "false", **UNSIGNED},
        workspace=workspace, env={"PIP_CONSTRAINT": str(constraints)},
    )
    step = run.step("run")
    assert run.outputs["conclusion"] == "failure", run.log
    assert "could not install the frameworks" in step.stdout + step.stderr, run.log
    # Without the constraint pytest==<installed major>.* is already satisfied (test_test_stage_then_gate).
    assert "conflicting dependencies" in step.stderr, run.log
    assert version("pytest").split(".")[0] == major  # nothing was installed or replaced
