"""The project's own CI files pass the linters users would run on them: zizmor (security) and
check-jsonschema's vendored SchemaStore/GitLab schemas, plus the rules the linters cannot see."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from tests.helpers.action import (
    GITLAB_COMPONENT,
    GITLAB_INCLUDE,
    REPO_ROOT,
    gitlab_include_from_component,
    split_component,
)

BIN = Path(sys.executable).parent
ACTION = REPO_ROOT / "action.yml"
GITHUB_WORKFLOWS = sorted((REPO_ROOT / ".github" / "workflows").glob("*.yml")) + sorted(
    (REPO_ROOT / "workflows").glob("*.yml")
)
GITHUB_SNIPPET = REPO_ROOT / "docs" / "snippets" / "github-workflow.yml"
GITLAB_SNIPPET = REPO_ROOT / "docs" / "snippets" / "gitlab-ci.yml"
ALL_GITHUB = [ACTION, *GITHUB_WORKFLOWS, GITHUB_SNIPPET]
SHA_PIN = re.compile(r"^[\w.-]+/[\w.-]+(/[^@]+)?@[0-9a-f]{40}$")


def tool(name: str) -> str:
    path = BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install {name})")
    return found


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO_ROOT, check=False)


def rel(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT))


# -- zizmor --------------------------------------------------------------------------------


def _describe(finding: dict) -> str:
    location = finding["locations"][0]
    path = location["symbolic"]["key"].get("Local", {}).get("verbatim_path", "?")
    row = location.get("concrete", {}).get("location", {}).get("start_point", {}).get("row", -1) + 1
    return f"{finding['ident']} at {path}:{row}"


def test_zizmor_reports_nothing() -> None:
    # The auditor persona: every audit, pedantic ones included (concurrency, obfuscation, ...).
    proc = run(tool("zizmor"), "--offline", "--persona=auditor", "--format", "json", *map(rel, ALL_GITHUB))
    findings = json.loads(proc.stdout or "[]")
    summary = [_describe(f) for f in findings]
    assert proc.returncode == 0 and findings == [], f"zizmor findings: {summary}\n{proc.stderr[-2000:]}"


def test_zizmor_does_flag_an_injection(tmp_path: Path) -> None:
    """The gate above can fail: the same zizmor, offline, catches what our rules forbid."""
    bad = tmp_path / "action.yml"
    bad.write_text(
        "name: bad\ndescription: bad\ninputs:\n  x:\n    description: x\nruns:\n  using: composite\n"
        "  steps:\n    - shell: bash\n      run: echo ${{ inputs.x }}\n"
        "    - uses: actions/checkout@v4\n"
    )
    proc = run(tool("zizmor"), "--offline", "--format", "json", str(bad))
    findings = json.loads(proc.stdout)
    assert {"template-injection", "unpinned-uses"} <= {f["ident"] for f in findings}
    assert "action.yml:" in _describe(findings[0])


def test_zizmor_auditor_persona_is_stricter_than_the_default(tmp_path: Path) -> None:
    """The persona above is really in effect: it flags what the default persona lets through."""
    wf = tmp_path / "wf.yml"
    wf.write_text("name: x\non:\n  push:\n    tags: [\"v*\"]\npermissions: {}\njobs:\n  a:\n    name: a\n"
                  "    runs-on: ubuntu-latest\n    permissions: {}\n    steps:\n      - run: echo hi\n")
    default = json.loads(run(tool("zizmor"), "--offline", "--format", "json", str(wf)).stdout or "[]")
    auditor = json.loads(run(tool("zizmor"), "--offline", "--persona=auditor", "--format", "json", str(wf)).stdout)
    assert default == [] and "concurrency-limits" in {f["ident"] for f in auditor}


# -- check-jsonschema ----------------------------------------------------------------------


def check_schema(schema: str, *files: Path | str) -> None:
    proc = run(tool("check-jsonschema"), "--builtin-schema", schema, *map(str, files))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_action_matches_github_actions_schema() -> None:
    check_schema("vendor.github-actions", ACTION)


@pytest.mark.parametrize("workflow", [*GITHUB_WORKFLOWS, GITHUB_SNIPPET], ids=rel)
def test_workflow_matches_github_workflows_schema(workflow: Path) -> None:
    check_schema("vendor.github-workflows", workflow)


def test_schema_check_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "wf.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    stepz: []\n")
    with pytest.raises(AssertionError, match="stepz|steps"):
        check_schema("vendor.github-workflows", bad)


def test_gitlab_component_header_and_body_match_gitlab_ci_schema(tmp_path: Path) -> None:
    # check-jsonschema reads one YAML document per file: split the `spec:` header from the body.
    head, body = split_component(GITLAB_COMPONENT.read_text())
    (tmp_path / "spec.yml").write_text(head)
    (tmp_path / "body.yml").write_text(body)
    check_schema("vendor.gitlab-ci", tmp_path / "spec.yml", tmp_path / "body.yml")
    spec = yaml.safe_load(head)["spec"]["inputs"]
    used = set(re.findall(r"\$\[\[ inputs\.([\w-]+) \]\]", body))
    assert used == set(spec), f"inputs declared but unused: {set(spec) - used}; used but undeclared: {used - set(spec)}"


def test_gitlab_include_template_and_snippet_match_gitlab_ci_schema() -> None:
    check_schema("vendor.gitlab-ci", GITLAB_INCLUDE, GITLAB_SNIPPET)


def test_gitlab_include_template_is_generated_from_the_component() -> None:
    expected = gitlab_include_from_component(GITLAB_COMPONENT.read_text())
    assert GITLAB_INCLUDE.read_text() == expected, "regenerate: python -m tests.helpers.action --write-gitlab-include"


# -- what the linters cannot see -----------------------------------------------------------


def _steps(document: dict) -> list[dict]:
    if "runs" in document:
        return document["runs"]["steps"]
    return [step for job in document["jobs"].values() for step in job.get("steps", [])]


@pytest.mark.parametrize("path", ALL_GITHUB, ids=rel)
def test_no_expression_inside_run_and_every_uses_pinned(path: Path) -> None:
    document = yaml.safe_load(path.read_text())
    for step in _steps(document):
        if "run" in step:
            assert "${{" not in step["run"], f"{rel(path)}: expression inside run: ({step.get('name', step['run'][:40])})"
        uses = step.get("uses")
        if uses and not uses.startswith("./"):
            assert SHA_PIN.match(uses), f"{rel(path)}: {uses} is not pinned to a full commit SHA"
            line = next(line for line in path.read_text().splitlines() if uses in line)
            assert re.search(r"# v\d", line), f"{rel(path)}: {uses} lacks a version comment"
        if uses and uses.startswith("actions/checkout@"):
            assert step.get("with", {}).get("persist-credentials") is False, f"{rel(path)}: checkout persists credentials"


@pytest.mark.parametrize("path", [*GITHUB_WORKFLOWS, GITHUB_SNIPPET], ids=rel)
def test_workflows_grant_least_permissions(path: Path) -> None:
    document = yaml.safe_load(path.read_text())
    assert document.get("permissions") == {}, f"{rel(path)}: top-level permissions must be {{}}"
    for name, job in document["jobs"].items():
        assert "permissions" in job, f"{rel(path)}: job {name} must state its permissions"
        granted = job["permissions"]
        assert isinstance(granted, dict) and "write-all" not in str(granted)
        writes = {k for k, v in granted.items() if v == "write"}
        assert writes <= {"checks", "pull-requests", "id-token", "attestations"}, f"{name}: {writes}"


def test_action_passes_every_input_through_env_only() -> None:
    document = yaml.safe_load(ACTION.read_text())
    declared = set(document["inputs"])
    referenced: set[str] = set()
    for step in _steps(document):
        for value in (step.get("env") or {}).values():
            referenced |= set(re.findall(r"inputs\.([\w-]+)", str(value)))
        assert step.get("shell") == "bash"
    assert declared - referenced == set(), f"inputs never used: {declared - referenced}"


def test_reusable_workflow_copies_are_identical() -> None:
    assert (REPO_ROOT / ".github" / "workflows" / "xcompat.yml").read_bytes() == (
        REPO_ROOT / "workflows" / "xcompat.yml"
    ).read_bytes()


def test_aggregating_job_checks_every_needs_result() -> None:
    document = yaml.safe_load((REPO_ROOT / "workflows" / "xcompat.yml").read_text())
    jobs = document["jobs"]
    final = jobs["xcompat"]
    assert final["if"] == "always()"
    assert set(final["needs"]) == set(jobs) - {"xcompat"}, "the aggregating job must need every other job"
    verdict = next(step for step in final["steps"] if step.get("id") == "verdict")
    assert verdict["env"]["NEEDS"] == "${{ toJSON(needs) }}"
    assert 'job["result"] != "success"' in verdict["run"]


def test_release_publishes_from_the_callers_job_on_linux_x86_64() -> None:
    document = yaml.safe_load((REPO_ROOT / "workflows" / "release.yml").read_text())
    publish = document["jobs"]["publish"]
    assert publish["runs-on"] == "ubuntu-latest" and publish["environment"]["name"] == "pypi"
    uses = [step.get("uses", "") for step in publish["steps"]]
    gate = next(i for i, step in enumerate(publish["steps"]) if step.get("with", {}).get("stage") == "gate")
    attest = next(i for i, u in enumerate(uses) if u.startswith("actions/attest-build-provenance@"))
    upload = next(i for i, u in enumerate(uses) if u.startswith("pypa/gh-action-pypi-publish@"))
    assert gate < attest < upload
    assert publish["steps"][gate]["with"]["dist"] == "dist"
    assert publish["steps"][attest]["with"]["subject-path"] == "dist/*.whl"


def test_codeowners_template_covers_the_trust_inputs() -> None:
    template = (REPO_ROOT / "workflows" / "CODEOWNERS").read_text()
    owned = [line.split()[0] for line in template.splitlines() if line and not line.startswith("#")]
    assert {"/.xcompat/**", "/.github/**"} <= set(owned)


# -- the GitLab child pipeline generated from a real plan -----------------------------------


def _plan_job_script(text: str) -> list[str]:
    _, body = split_component(text)
    return yaml.safe_load(body)["xcompat:plan"]["script"]


def test_generated_child_pipeline_is_valid_gitlab_ci(tmp_path: Path) -> None:
    sample = REPO_ROOT / "examples" / "sample-ext" / ".xcompat" / "matrix.yml"
    if not sample.is_file():
        pytest.skip("the sample project's matrix is not there yet")
    out = tmp_path / ".xcompat-out"
    out.mkdir()
    plan = run(sys.executable, "-m", "xcompat", "matrix", "plan", str(sample), "--format", "gitlab",
               "--output", str(out / "plan-gitlab.json"))
    assert plan.returncode == 0, plan.stderr
    generator = next(item for item in _plan_job_script(GITLAB_COMPONENT.read_text()) if "child.yml" in item)
    proc = subprocess.run(["bash", "-ec", generator], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={"PATH": f"{BIN}:/usr/bin:/bin", "XCOMPAT_CELL_IMAGE": "python:3.12-slim"}, check=False)
    assert proc.returncode == 0, proc.stderr
    child_path = out / "child.yml"
    check_schema("vendor.gitlab-ci", child_path)
    child = yaml.safe_load(child_path.read_text())
    cells = json.loads((out / "plan-gitlab.json").read_text())["parallel"]["matrix"]
    for job in ("xcompat:build", "xcompat:test"):
        assert child[job]["parallel"]["matrix"] == cells
        assert child[job]["tags"] == ["$XCOMPAT_RUNNER_TAG"]
        assert all(isinstance(v, str) for cell in cells for v in cell.values()), "GitLab expands lists into jobs"
    assert len(cells) <= 200, "GitLab allows at most 200 jobs per parallel:matrix"
    reports = child["xcompat:report"]["artifacts"]["reports"]
    assert set(reports) == {"junit", "codequality", "coverage_report"}
    assert reports["coverage_report"]["coverage_format"] == "cobertura"
    assert child["xcompat:gate"]["when"] == "always" and child["xcompat:report"]["when"] == "always"
    for name, job in child.items():
        if isinstance(job, dict) and "script" in job:
            _assert_shell_syntax(f"child {name}", job["script"])


def _assert_shell_syntax(what: str, lines: list[str]) -> None:
    # GitLab runs a job's script lines in one shell session; check them as one script.
    for shell in ("sh", "bash"):
        proc = subprocess.run([shell, "-n"], input="\n".join(lines) + "\n", capture_output=True, text=True,
                              check=False)
        assert proc.returncode == 0, f"{what}: {shell} -n: {proc.stderr}"


def test_component_job_scripts_parse_as_shell() -> None:
    _, body = split_component(GITLAB_COMPONENT.read_text())
    for name, job in yaml.safe_load(body).items():
        if isinstance(job, dict) and "script" in job:
            _assert_shell_syntax(name, job["script"])


def test_component_and_include_template_run_on_tags_merge_requests_and_default_branch() -> None:
    for text in (split_component(GITLAB_COMPONENT.read_text())[1], GITLAB_INCLUDE.read_text()):
        document = yaml.safe_load(text)
        for job in ("xcompat:plan", "xcompat:cells"):
            rules = [rule["if"] for rule in document[job]["rules"]]
            assert "$CI_COMMIT_TAG" in rules
            assert '$CI_PIPELINE_SOURCE == "merge_request_event"' in rules
        assert document["xcompat:cells"]["trigger"]["strategy"] == "depend"


@pytest.mark.parametrize(("doc", "snippet"), [("github-action.md", GITHUB_SNIPPET), ("gitlab.md", GITLAB_SNIPPET)])
def test_docs_show_the_linted_snippets_verbatim(doc: str, snippet: Path) -> None:
    assert f"```yaml\n{snippet.read_text()}```" in (REPO_ROOT / "docs" / doc).read_text()


@pytest.mark.parametrize("path", ALL_GITHUB, ids=rel)
def test_run_steps_parse_as_bash(path: Path) -> None:
    for step in _steps(yaml.safe_load(path.read_text())):
        if "run" in step:
            proc = subprocess.run(["bash", "-n"], input=step["run"], capture_output=True, text=True,
                                  check=False)
            assert proc.returncode == 0, f"{rel(path)} ({step.get('name') or step.get('id')}): {proc.stderr}"


@pytest.mark.parametrize("snippet", [GITHUB_SNIPPET, GITLAB_SNIPPET], ids=rel)
def test_readme_shows_the_linted_snippets_verbatim(snippet: Path) -> None:
    readme = REPO_ROOT / "README.md"
    assert f"```yaml\n{snippet.read_text()}```" in readme.read_text(), (
        f"README.md must carry {rel(snippet)} verbatim: it is the copy that zizmor and the schemas check"
    )


def test_child_generator_refuses_a_cell_without_runner_tag(tmp_path: Path) -> None:
    out = tmp_path / ".xcompat-out"
    out.mkdir()
    cell = {"XCOMPAT_CELL": "py3.12-linux-x86_64-cpu", "XCOMPAT_RUNNER_TAG": ""}
    (out / "plan-gitlab.json").write_text(json.dumps({"version": 1, "parallel": {"matrix": [cell]}}))
    generator = next(item for item in _plan_job_script(GITLAB_COMPONENT.read_text()) if "child.yml" in item)
    proc = subprocess.run(["bash", "-ec", generator], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={"PATH": f"{BIN}:/usr/bin:/bin"}, check=False)
    assert proc.returncode != 0
    assert "cells without a runner label: py3.12-linux-x86_64-cpu" in proc.stderr
    assert not (out / "child.yml").exists()
