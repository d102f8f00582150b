"""The GitLab component's jobs, run as a GitLab runner runs them: each job's script lines in one
bash session with `set -eo pipefail`, the job's variables and GitLab's predefined ones.

The parent `xcompat:plan` job runs for real on the sample project (real signature check against
the merge request's base commit, real plan, the child pipeline generated from it). The child
pipeline's jobs then run with `xcompat` standing in as a recorder that parses every command line
with the real CLI, so no wheel is built here, but every option they pass must exist.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from tests.helpers.action import GITLAB_COMPONENT, REPO_ROOT, Repo, git, split_component

SAMPLE = REPO_ROOT / "examples" / "sample-ext"
RECORDER = """#!{python}
import json, os, sys
argv = sys.argv[1:]
if argv[:3] == ["-I", "-m", "pip"]:  # the cell's environment `xcompat stage` installs: recorded
    with open(os.environ["XCOMPAT_PIP_LOG"], "a", encoding="utf-8") as fh:
        fh.write(" ".join(argv[3:]) + "\\n")
    sys.exit(0)
if argv[:3] == ["-I", "-m", "xcompat"]:  # a command `xcompat stage` starts
    argv = argv[3:]
from xcompat.cli import build_parser
try:
    ok = getattr(build_parser(argv).parse_args(argv), "_module", None) is not None
except SystemExit:
    ok = False
with open(os.environ["XCOMPAT_ARGV_LOG"], "a", encoding="utf-8") as fh:
    fh.write(json.dumps({{"argv": argv, "ok": ok}}) + "\\n")
if argv[:2] == ["matrix", "settings"] or (ok and argv[:1] == ["stage"]):
    # real: the test job runs what the settings print; a stage's own commands come back here
    sys.executable = os.path.abspath(__file__)
    from xcompat.cli import main
    sys.exit(main(argv))
"""

pytestmark = pytest.mark.skipif(not (SAMPLE / ".xcompat" / "matrix.yml.sig").is_file(),
                                reason="the sample project's signed matrix is not there yet")


def component_jobs() -> dict:
    head, body = split_component(GITLAB_COMPONENT.read_text())
    inputs = yaml.safe_load(head)["spec"]["inputs"]
    for name, spec in inputs.items():
        value = spec.get("default", "")
        value = ("true" if value else "false") if isinstance(value, bool) else str(value)
        # GitLab interpolates into the parsed YAML, so an empty input stays an empty string.
        body = body.replace(f"$[[ inputs.{name} ]]", json.dumps(value))
    return yaml.safe_load(body)


def run_job(script: list[str], *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    text = "set -eo pipefail\n" + "\n".join(script) + "\n"
    return subprocess.run(["bash", "-c", text], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


SOURCE = "${XCOMPAT_INSTALL_SOURCE:-git+$CI_SERVER_URL/org/xcompat-action.git@$XCOMPAT_COMPONENT_SHA}"
LOCKED = '"$XCOMPAT_VENV/bin/python" -I -m pip install --quiet --require-hashes --no-deps -r "$XCOMPAT_SRC/locks/action.txt"'
ITSELF = '"$XCOMPAT_VENV/bin/python" -I -m pip install --quiet --no-deps --no-build-isolation "$XCOMPAT_SRC"'
EXTRAS = re.compile(r'^extras="(?P<extras>[^"]*)"; if \[ -n "\$extras" \]; then "\$XCOMPAT_VENV/bin/python" -I -m pip '
                    r'install --quiet --no-build-isolation "\$XCOMPAT_SRC\[\$extras\]"; fi$')


INSTALL_STEPS = ('XCOMPAT_VENV="${TMPDIR:-/tmp}/xcompat-$CI_JOB_ID"', 'src="', '"$XCOMPAT_VENV/bin/python" -I -m pip install',
                 'extras="')


def installed_extras(script: list[str]) -> str:
    """The extras a job installs. Every job installs the same way: the component's own project
    cloned at the component's commit, its dependencies from the hashed lock with no resolver,
    then xcompat with --no-deps; only an extra the lock leaves open is resolved after that."""
    lines = "\n".join(item for item in script if item.startswith(INSTALL_STEPS)).splitlines()
    clone = [line for line in lines if "git clone" in line]
    assert len(clone) == 1 and "${src%@*}" in clone[0], clone
    assert any(SOURCE in line for line in lines), "not installed from the component's own project"
    assert lines.count(LOCKED) == 1 and lines.count(ITSELF) == 1, "\n".join(lines)
    assert lines.index(LOCKED) < lines.index(ITSELF)
    pips = [line for line in lines if "-m pip install" in line and line not in (LOCKED, ITSELF)]
    if not pips:
        return ""
    [line] = pips
    match = EXTRAS.match(line)
    assert match, f"unexpected install line: {line}"
    return match.group("extras")


def without_install(script: list[str]) -> list[str]:
    # The jobs install xcompat from the component's project; here the checkout's own is on PATH.
    return [line for line in script if not line.startswith(INSTALL_STEPS)]


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, str]:
    """The sample as the merge request's checkout, with the base commit it targets."""
    root = tmp_path / "project"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    Repo(root)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root, git(root, "rev-parse", "HEAD").strip()


def gitlab_env(root: Path, **extra: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("HOME", "LANG", "TMPDIR")}
    return {**keep, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "CI": "true", "GITLAB_CI": "true",
            "CI_PROJECT_DIR": str(root), "CI_PROJECT_PATH": "xcompat-demo/sample-ext", "CI_PIPELINE_ID": "41",
            "CI_DEFAULT_BRANCH": "main", "CI_COMMIT_BEFORE_SHA": "0" * 40, **extra}


def test_plan_job_then_child_jobs(project: tuple[Path, str], tmp_path: Path) -> None:
    root, base = project
    jobs = component_jobs()
    plan_job = jobs["xcompat:plan"]
    env = gitlab_env(root, CI_PIPELINE_SOURCE="merge_request_event", CI_MERGE_REQUEST_DIFF_BASE_SHA=base,
                     **{k: str(v) for k, v in plan_job["variables"].items()})
    proc = run_job(without_install(plan_job["script"]), cwd=root, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = root / ".xcompat-out"
    verify = json.loads((out / "verify.json").read_text())
    assert verify["verified"] is True
    plan = json.loads((out / "plan.json").read_text())
    assert plan["matrix_sha256"] == verify["sha256"]
    child = yaml.safe_load((out / "child.yml").read_text())
    cells = json.loads((out / "plan-gitlab.json").read_text())["parallel"]["matrix"]
    assert len(child["xcompat:build"]["parallel"]["matrix"]) == len(plan["cells"]) == len(cells)
    # Every job removes its own venv, whatever its outcome: a shell runner keeps /tmp between jobs.
    drop = ['rm -rf "${TMPDIR:-/tmp}/xcompat-$CI_JOB_ID"']
    venv_line = 'XCOMPAT_VENV="${TMPDIR:-/tmp}/xcompat-$CI_JOB_ID" && python3 -I -m venv "$XCOMPAT_VENV"'
    for name, job in [("xcompat:plan", plan_job), *((n, j) for n, j in child.items() if n.startswith("xcompat:"))]:
        assert job["after_script"] == drop, name
        if name in ("xcompat:build", "xcompat:test"):
            # a cell's jobs make their venv with the cell's Python, or say the runner has none
            assert job["script"][0].startswith('XCOMPAT_PY=$(command -v "python$XCOMPAT_PYTHON") || '), name
            assert job["script"][1] == venv_line.replace("python3 -I", '"$XCOMPAT_PY" -I'), name
        else:
            assert job["script"][0] == venv_line, name

    # The child pipeline: the trigger job's variables reach it, plus the cell's matrix variables.
    venv = tmp_path / "venv"  # the job's venv: its bin/ holds the recorders (git stands in for the fetch)
    recorder_dir = venv / "bin"
    recorder_dir.mkdir(parents=True)
    (recorder_dir / "xcompat").write_text(RECORDER.format(python=sys.executable))
    (recorder_dir / "git").write_text("#!/bin/sh\nexit 0\n")  # the gate's `git fetch origin`
    pip_log = tmp_path / "pip.txt"
    (recorder_dir / "pip").write_text(f'#!/bin/sh\necho "$@" >> {pip_log}\n')  # the cell's environment
    for tool in ("xcompat", "git", "pip"):
        (recorder_dir / tool).chmod(0o755)
    log = tmp_path / "argv.jsonl"
    trigger_vars = {k: str(v) for k, v in jobs["xcompat:cells"]["variables"].items()}
    trigger_vars["PARENT_PIPELINE_ID"] = "41"
    tagged = gitlab_env(root, CI_COMMIT_TAG="v0.2.0", XCOMPAT_ARGV_LOG=str(log), XCOMPAT_PIP_LOG=str(pip_log))
    # a cell of this interpreter's Python: its jobs refuse to run on another
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    cell = next(c for c in cells if c["XCOMPAT_PYTHON"] == here)
    tagged.update({**trigger_vars, **cell, "XCOMPAT_ABI_BASELINE": "baseline.json.gz"})
    tagged["PATH"] = f"{Path(sys.executable).parent}:{tagged['PATH']}"  # python3.X of the cell
    tagged["PATH"] = f"{recorder_dir}:{tagged['PATH']}"
    tagged["XCOMPAT_VENV"] = str(venv)  # set by the install line the test leaves out
    # what the build job leaves for the cell (its build is recorded here, not run): a wheel of its Python
    tag = f"cp{here.replace('.', '')}"
    wheel = root / ".xcompat-out" / "wheelhouse" / cell["XCOMPAT_CELL"] / f"sample_ext-0.1.0-{tag}-{tag}-linux_x86_64.whl"
    wheel.parent.mkdir(parents=True)
    with zipfile.ZipFile(wheel, "w") as zf:
        info = "sample_ext-0.1.0.dist-info"
        zf.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: sample-ext\nVersion: 0.1.0\n")
        zf.writestr(f"{info}/WHEEL", f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {tag}-{tag}-linux_x86_64\n")
        zf.writestr("sample_ext/__init__.py", "")
        zf.writestr(f"{info}/RECORD", "")
    for name in ("xcompat:build", "xcompat:test", "xcompat:report", "xcompat:gate"):
        proc = run_job(without_install(child[name]["script"]), cwd=root, env=tagged)
        assert proc.returncode == 0, f"{name}: {proc.stdout}{proc.stderr}"
    frameworks = cell["XCOMPAT_FRAMEWORKS"].split()
    # The build job builds against the cell's frameworks; the test job's stages run with them, and
    # those that import the project (kernels, test, runtime libraries) with the cell's wheel.
    wanted = ["install", "--disable-pip-version-check", "--no-input", "--quiet", *(f"{f}.*" for f in frameworks)]
    with_wheel = [*wanted[:4], str(wheel.relative_to(root)), *wanted[4:]]
    assert pip_log.read_text().splitlines() == [" ".join(line) for line in (
        wanted, wanted, with_wheel, with_wheel, wanted, wanted, with_wheel)]
    # Only the extras each job needs: no torch (nor build tools) in plan, report and gate.
    extras = {name: installed_extras(child[name]["script"]) for name in child if name.startswith("xcompat:")}
    assert extras == {"xcompat:build": "build",
                      "xcompat:test": "runner,abi,build,coverage,contracts${XCOMPAT_TEST_EXTRAS:+,$XCOMPAT_TEST_EXTRAS}",
                      "xcompat:report": "coverage,contracts",
                      # the ABI diff's Python-API part, on tag pipelines with an abi-baseline only
                      "xcompat:gate": "${CI_COMMIT_TAG:+${XCOMPAT_ABI_BASELINE:+abi}}"}
    assert installed_extras(plan_job["script"]) == ""
    assert jobs["xcompat:cells"]["variables"]["XCOMPAT_TEST_EXTRAS"] == "runner"
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    refused = [c["argv"] for c in calls if not c["ok"]]
    assert refused == [], f"the CLI refuses: {refused}"
    commands = [c["argv"][0] if c["argv"][0] not in ("abi", "matrix", "contracts", "kernels", "coverage")
                else " ".join(c["argv"][:2]) for c in calls]
    # Each job runs its stages (`xcompat stage NAME`), which run the stages' commands: the cell's
    # every stage in the test job, in the order `xcompat run` runs them.
    assert [c["argv"][1] for c in calls if c["argv"][0] == "stage"] == [
        "build", "probe", "kernels", "test", "abi", "coverage", "contracts-stubs", "contracts-runtime-libraries",
        "contracts-python-floor", "coverage", "report", "abi", "gate"]
    calls = [c for c in calls if c["argv"][0] != "stage"]
    commands = [c for c in commands if c != "stage"]
    # (no release tag in this history: the cell's abi stage says so and runs no diff)
    assert commands == ["matrix settings", "build", "probe", "matrix settings", "kernels run", "kernels operators",
                        "matrix settings", "test", "matrix settings", "matrix settings", "run", "matrix settings", "contracts stubs",
                        "matrix settings", "contracts libraries", "matrix settings", "contracts python-floor",
                        "matrix settings", "coverage merge", "report", "matrix settings", "abi diff", "gate"]
    # The build job builds from the verified matrix bytes the plan artifact carries, not the checkout's file.
    build = calls[1]["argv"]
    assert Path(build[build.index("--matrix") + 1]) == out / "matrix.yml"
    # The build and test jobs take the plan only if it is the one the verified bytes yield, checked
    # against the hash the plan job verified (written into the child pipeline), and the test job
    # runs that plan's tests settings (not the checkout's matrix).
    for settings in (calls[0]["argv"], calls[commands.index("test") - 1]["argv"]):
        assert Path(settings[settings.index("--plan") + 1]) == out / "plan.json"
        assert Path(settings[settings.index("--matrix") + 1]) == out / "matrix.yml"
        assert settings[settings.index("--expect-sha256") + 1] == verify["sha256"]
    test_argv = calls[commands.index("test")]["argv"]
    signed = plan["settings"]["tests"] if "settings" in plan else None
    assert "--timeout" in test_argv and "--isolate" in test_argv, test_argv
    if signed is not None:
        assert test_argv[test_argv.index("--timeout") + 1] == str(signed["timeout"]).removesuffix(".0")
    gate = calls[-1]["argv"]
    for option in ("--plan", "--results", "--require-kind", "--matrix", "--allowed-signers", "--trust-ref", "--abi"):
        assert option in gate, f"the tag pipeline's gate lacks {option}: {gate}"
    assert gate[gate.index("--trust-ref") + 1] == "origin/main"


def test_plan_job_refuses_a_matrix_the_base_does_not_trust(project: tuple[Path, str]) -> None:
    root, base = project
    matrix = root / ".xcompat" / "matrix.yml"
    matrix.write_text(matrix.read_text().replace("serial:", "# edited without re-signing\nserial:", 1))
    git(root, "commit", "-q", "-am", "head")
    plan_job = component_jobs()["xcompat:plan"]
    env = gitlab_env(root, CI_PIPELINE_SOURCE="merge_request_event", CI_MERGE_REQUEST_DIFF_BASE_SHA=base,
                     **{k: str(v) for k, v in plan_job["variables"].items()})
    proc = run_job(without_install(plan_job["script"]), cwd=root, env=env)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert not (root / ".xcompat-out" / "child.yml").exists()


def test_a_pipeline_whose_matrix_did_not_verify_posts_its_own_red_note(project: tuple[Path, str]) -> None:
    root, base = project
    matrix = root / ".xcompat" / "matrix.yml"
    matrix.write_text(matrix.read_text().replace("serial:", "# edited without re-signing\nserial:", 1))
    git(root, "commit", "-q", "-am", "head")
    jobs = component_jobs()
    plan_job = jobs["xcompat:plan"]
    env = gitlab_env(root, CI_PIPELINE_SOURCE="merge_request_event", CI_MERGE_REQUEST_DIFF_BASE_SHA=base,
                     **{k: str(v) for k, v in plan_job["variables"].items()})
    assert run_job(without_install(plan_job["script"]), cwd=root, env=env).returncode == 3
    unverified = jobs["xcompat:unverified"]
    assert unverified["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"', "when": "on_failure"}]
    assert unverified["needs"] == [{"job": "xcompat:plan", "artifacts": True}]
    # the job as GitLab runs it after the failed plan job, with its artifacts; no GitLab here, so
    # the note is not posted: its text is the report's
    env = gitlab_env(root, CI_PIPELINE_SOURCE="merge_request_event",
                     **{**{k: str(v) for k, v in unverified["variables"].items()}, "XCOMPAT_POST_NOTE": "false"})
    proc = run_job(without_install(unverified["script"]), cwd=root, env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the report is red
    note = (root / ".xcompat-out" / "report" / "report.md").read_text()
    assert "the matrix signature did not verify: .xcompat/matrix.yml: signature does not match" in note, note
