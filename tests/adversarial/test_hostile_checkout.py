"""A pull request's checkout cannot stand in for xcompat or for the modules its CI scripts import.

Every Python the action, the workflows and the GitLab templates start runs in the checkout's folder.
Without isolation (`python -I`, or a venv entry point whose sys.path[0] is the venv's bin folder) a
checkout holding ``xcompat/__main__.py``, ``packaging/``, ``json.py`` or ``venv/`` would run its own
code in a job that holds a write token. The command lines are the ones in the YAML files, run in a
checkout seeded with such modules; each planted module records that it ran.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.helpers.action import (
    GITLAB_COMPONENT,
    GITLAB_INCLUDE,
    REPO_ROOT,
    Repo,
    envelope,
    expressions_available,
    git,
    run_composite_action,
    split_component,
    write,
)
from tests.helpers.matrix import matrix_text

from xcompat.cli import main

WORKFLOWS = sorted((REPO_ROOT / "workflows").glob("*.yml")) + sorted((REPO_ROOT / ".github" / "workflows").glob("*.yml"))
SAMPLE = REPO_ROOT / "examples" / "sample-ext"

# Modules a script or xcompat imports that are not loaded before sys.path is set up.
PLANTED = ("xcompat/__init__.py", "xcompat/__main__.py", "packaging/__init__.py", "packaging/tags.py",
           "packaging/utils.py", "json.py", "uuid.py", "pathlib.py", "venv/__init__.py", "venv/__main__.py",
           "pip/__init__.py", "pip/__main__.py", "yaml.py")


def plant(checkout: Path, evidence: Path) -> None:
    """Seed ``checkout`` with modules that append their name to ``evidence`` and stop the process."""
    for name in PLANTED:
        path = checkout / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"open({str(evidence)!r}, 'a').write({name!r} + '\\n')\nraise SystemExit(97)\n")


def ran_from_checkout(evidence: Path) -> list[str]:
    return evidence.read_text().split() if evidence.exists() else []


# -- every interpreter start in the CI files is isolated ---------------------------------

# An interpreter started by a script: a bare python/python3, or the shell variables the action keeps it in.
_INTERPRETER = re.compile(r'(?<![\w/.-])(python3?|"\$py"|"\$XCOMPAT_PY(?:THON)?"|"\$venv/bin/python")[ \t]+(\S+)')


def scripts() -> list[tuple[str, str]]:
    """``(where, script text)`` for every run: step and GitLab script in the action, workflows and templates."""
    found: list[tuple[str, str]] = []
    action = yaml.safe_load((REPO_ROOT / "action.yml").read_text())
    for step in action["runs"]["steps"]:
        if "run" in step:
            found.append((f"action.yml step {step.get('id')}", step["run"]))
    for path in WORKFLOWS:
        if path.name == "CODEOWNERS":
            continue
        for job_name, job in (yaml.safe_load(path.read_text()).get("jobs") or {}).items():
            for index, step in enumerate(job.get("steps") or []):
                if "run" in step:
                    found.append((f"{path.name} job {job_name} step {index}", step["run"]))
    _, body = split_component(GITLAB_COMPONENT.read_text())
    for path, text in ((GITLAB_COMPONENT, body), (GITLAB_INCLUDE, GITLAB_INCLUDE.read_text())):
        for job_name, job in yaml.safe_load(re.sub(r"\$\[\[ inputs\.[\w-]+ \]\]", "x", text)).items():
            if isinstance(job, dict) and "script" in job:
                found.append((f"{path.name} job {job_name}", "\n".join(job["script"])))
    return found


def test_every_interpreter_in_the_ci_files_runs_isolated() -> None:
    found = scripts()
    assert len(found) >= 8, f"too few scripts found: {[w for w, _ in found]}"
    starts = []
    for where, text in found:
        for line in text.splitlines():
            if line.lstrip().startswith("#"):
                continue
            for match in _INTERPRETER.finditer(line):
                if match.group(2)[0] in "];)":  # a test of the path, not a start
                    continue
                starts.append((where, line.strip(), match.group(2)))
    assert len(starts) >= 10, starts  # the pattern still finds the interpreters the files start
    exposed = [(where, line) for where, line, first in starts if first != "-I"]
    assert exposed == [], "these start Python with the working directory on sys.path:\n" + "\n".join(
        f"  {where}: {line}" for where, line in exposed)


def test_the_scan_above_can_fail() -> None:
    assert _INTERPRETER.search('x=("$XCOMPAT_PY" -m xcompat)').group(2) == "-m"
    assert _INTERPRETER.search("python3 - <<'PY'").group(2) == "-"
    assert _INTERPRETER.search("/tmp/xcompat/bin/python -m pip") is None  # a venv path is matched by name only


# -- the composite action in a hostile checkout -------------------------------------------

needs_runner = pytest.mark.skipif(expressions_available() is not None,
                                  reason=f"composite action runner unavailable: {expressions_available()}")

# a cell of the interpreter running the stages (the minimal matrix has 3.11 and 3.12): a cell stage
# refuses a job on another Python
CELL = f"py{sys.version_info.major}.{sys.version_info.minor}-linux-x86_64-cpu-torch2.13"


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    """A checkout with a committed trust list, results and a plan, and the planted modules."""
    checkout = tmp_path / "pr"
    repo = Repo(checkout)
    repo.commit()
    repo.tag("v1.0.0")
    repo.commit()
    repo.tag("v1.1.0")
    out = checkout / ".xcompat-out"
    (checkout / ".xcompat").mkdir()
    (checkout / ".xcompat" / "matrix.yml").write_text(matrix_text())
    # a real plan (with the matrix's settings, which the test stage reads), made before the planting
    assert main(["matrix", "plan", str(checkout / ".xcompat" / "matrix.yml"), "--format", "json",
                 "--output", str(out / "plan.json")]) == 0
    write(out / "results" / CELL / "test.json", envelope("test", CELL, "passed", "1 passed"))
    (out / "wheelhouse").mkdir()
    evidence = tmp_path / "evidence.txt"
    plant(checkout, evidence)
    return checkout, evidence


STAGE_INPUTS: list[tuple[str, dict[str, str]]] = [
    ("plan", {"trust-ref": "HEAD"}),
    ("test", {"cell": CELL, "frameworks": "{}", "args": "--isolate\nnone"}),
    ("report", {"github-token": ""}),
    ("gate", {"verify": "false", "require-kinds": "test"}),
]


@needs_runner
@pytest.mark.parametrize(("stage", "inputs"), STAGE_INPUTS, ids=[s for s, _ in STAGE_INPUTS])
def test_action_stage_runs_xcompat_not_the_checkout(hostile: tuple[Path, Path], stage: str,
                                                    inputs: dict[str, str]) -> None:
    checkout, evidence = hostile
    run = run_composite_action(REPO_ROOT, {"stage": stage, "python": sys.executable, "install": "false",
                                           "fail-on-error": "false", **inputs}, workspace=checkout, timeout=300)
    assert ran_from_checkout(evidence) == [], f"the checkout's modules ran in the {stage} stage:\n{run.log}"
    assert run.step("setup").outcome == "success", run.log
    # the real xcompat ran the stage: its exit code is one of the documented ones, not the planted 97
    assert run.outputs["exit-code"] in {"0", "1", "2", "3", "4", "5"}, run.log


# -- the workflows' own scripts -----------------------------------------------------------

def _workflow_env(spec: dict[str, Any]) -> dict[str, str]:
    values = {"NEEDS": json.dumps({"plan": {"result": "success"}}), "GATE": "success"}
    return {str(k): values.get(str(k), "x") for k in spec}


@pytest.mark.parametrize("path", [p for p in WORKFLOWS if "python3 -I - <<" in p.read_text()], ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_workflow_python_steps_ignore_the_checkout(tmp_path: Path, path: Path) -> None:
    checkout = tmp_path / "pr"
    checkout.mkdir()
    evidence = tmp_path / "evidence.txt"
    plant(checkout, evidence)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python3").symlink_to(sys.executable)
    steps = [step for job in yaml.safe_load(path.read_text())["jobs"].values() for step in job.get("steps") or []
             if "python" in str(step.get("run", "")) and not re.search(r"\bpip\b", str(step.get("run", "")))]
    assert steps  # (steps that pip-install from PyPI are covered by the scan above, not run here)
    for step in steps:
        output = tmp_path / "github_output"
        output.touch()
        env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path), "GITHUB_OUTPUT": str(output),
               **_workflow_env(step.get("env") or {})}
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=checkout,
                              env=env, capture_output=True, text=True, timeout=60, check=False)
        assert ran_from_checkout(evidence) == [], proc.stdout + proc.stderr
        assert proc.returncode == 0, proc.stdout + proc.stderr


# -- the GitLab plan job, for real, on the sample with planted modules ---------------------

@pytest.mark.skipif(not (SAMPLE / ".xcompat" / "matrix.yml.sig").is_file(), reason="the sample's signed matrix is absent")
def test_gitlab_plan_job_ignores_the_checkout(tmp_path: Path) -> None:
    root = tmp_path / "project"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    Repo(root)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    base = git(root, "rev-parse", "HEAD").strip()
    evidence = tmp_path / "evidence.txt"
    plant(root, evidence)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the pull request")
    _, body = split_component(GITLAB_COMPONENT.read_text())
    inputs = yaml.safe_load(split_component(GITLAB_COMPONENT.read_text())[0])["spec"]["inputs"]
    for name, spec in inputs.items():
        value = spec.get("default", "")
        value = ("true" if value else "false") if isinstance(value, bool) else str(value)
        body = body.replace(f"$[[ inputs.{name} ]]", json.dumps(value))
    job = yaml.safe_load(body)["xcompat:plan"]
    # Every line as written except the pip installs (they need the network); `xcompat` is this
    # checkout's console script, found on PATH after the job's own venv folder.
    script = [line for line in job["script"] if "pip install" not in line]
    assert any("-m venv" in line for line in script) or any("-m venv" in line for line in job["script"])
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python3").symlink_to(sys.executable)
    (bindir / "xcompat").symlink_to(Path(sys.executable).parent / "xcompat")
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path), "TMPDIR": str(tmp_path), "CI": "true",
           "CI_PROJECT_DIR": str(root), "CI_JOB_ID": "77", "CI_PIPELINE_SOURCE": "merge_request_event",
           "CI_MERGE_REQUEST_DIFF_BASE_SHA": base, "CI_DEFAULT_BRANCH": "main",
           **{k: str(v) for k, v in job["variables"].items()}}
    text = "set -eo pipefail\n" + "\n".join(script).replace("/tmp/xcompat", str(tmp_path / "xcompat")) + "\n"
    proc = subprocess.run(["bash", "-c", text], cwd=root, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert ran_from_checkout(evidence) == [], proc.stdout + proc.stderr
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (root / ".xcompat-out" / "plan.json").is_file(), proc.stdout + proc.stderr
