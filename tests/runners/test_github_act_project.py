"""The shipped CI on a released third-party project, as its maintainer adopts it.

pyahocorasick (a C extension, setup.py only, its tests in tests/): the 2.1.0 release from PyPI
is the protected main branch, tagged v2.1.0, with a signed matrix of two Pythons; the 2.2.0
release is a pull request. The README's caller workflow and the reusable workflow run under act
against the GitHub API stand-in. Every stage of the matrix runs for each cell on its own Python
(build, probe, kernels, test, the ABI diff against v2.1.0 built in CI, coverage, the contracts),
and the check run and the sticky comment carry the ABI and coverage summaries. A second head
then edits the matrix without re-signing: it gets a red check run of its own, and the comment
says so instead of showing the first head's verdict.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.helpers import fake_github
from tests.runners.harness import (
    PYTHON,
    REPO_ROOT,
    ActRun,
    cache_dir,
    commit_all,
    git,
    install_workflow,
    pin_xcompat,
    run_act,
    snapshot_xcompat,
)
from tests.runners.test_github_act import readme_caller_workflow

from xcompat.interpreters.discover import find_interpreter

NAME, OLD, NEW = "pyahocorasick", "2.1.0", "2.2.0"
OWNER, REPO = "acme", "pyahocorasick"
REPO_ID, PR = 4343, 11
# a second Python of this machine (pyenv's): the matrix's other cell
OTHER = next((v for v in ("3.12", "3.13", "3.10") if v != PYTHON and find_interpreter(v)), None)

pytestmark = [
    pytest.mark.timeout(2400),
    pytest.mark.skipif(fake_github.contract_missing_reason() is not None,
                       reason=str(fake_github.contract_missing_reason())),
]

MATRIX = """\
xcompat: 1
repo: {repo}
serial: 1
expires: 2036-12-31
python: ["{python}", "{other}"]
platforms:
  linux:
    archs: [x86_64]
backends:
  cpu:
    required: true
    runs-on: [ubuntu-24.04]
tests:
  kernels: none
  pytest: [tests]
  isolation: file
  timeout: 300
"""


def sdist(version: str) -> Path:
    """The release's sdist from the package index, cached."""
    folder = cache_dir() / "sdists"
    found = folder / f"{NAME}-{version}.tar.gz"
    if not found.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        f"{NAME}=={version}", "-d", str(folder)], check=True, capture_output=True)
    return found


def unpack(version: str, dest: Path) -> None:
    """The release's sources as the repository holds them (the sdist's top folder stripped), with
    the lines a maintainer adds to its .gitignore for xcompat's output."""
    with tarfile.open(sdist(version)) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts[1:]
            if not parts or not (member.isfile() or member.isdir()):
                continue
            member.name = str(Path(*parts))
            tar.extract(member, dest, filter="data")
    ignore = dest / ".gitignore"
    text = ignore.read_text() if ignore.is_file() else ""
    ignore.write_text(text + "\n.xcompat-out/\n")


@dataclass
class Adopted:
    path: Path
    work: Path
    forge: Path
    fake: fake_github.FakeGitHub
    key: Path


def _sign(repo: Path, key: Path) -> None:
    subprocess.run([sys.executable, "-m", "xcompat", "matrix", "sign", str(repo / ".xcompat" / "matrix.yml"),
                    "--key", str(key)], check=True, capture_output=True)


@pytest.fixture(scope="module")
def adopted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Adopted]:
    if OTHER is None:
        pytest.fail("the runner tier needs a second CPython on this machine (pyenv's 3.12 or 3.13)", pytrace=False)
    work = tmp_path_factory.mktemp("act-project")
    forge = work / "forge"
    sha = snapshot_xcompat(forge)
    repo = work / REPO
    repo.mkdir()
    unpack(OLD, repo)
    xc = repo / ".xcompat"
    xc.mkdir()
    key = work / "signing-key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ecdsa", "-b", "256", "-N", "", "-C", "maintainer@example.com",
                    "-f", str(key)], check=True)
    public = key.with_name(key.name + ".pub").read_text().split()
    (xc / "allowed_signers").write_text(f'maintainer@example.com namespaces="xcompat-matrix-v1" '
                                        f"{public[0]} {public[1]}\n")
    (xc / "matrix.yml").write_text(MATRIX.format(repo=f"{OWNER}/{REPO}", python=PYTHON, other=OTHER))
    _sign(repo, key)
    # The README's caller, as a maintainer copies it: the pinned xcompat commit filled in, and the
    # native build (no docker on this machine for cibuildwheel's containers).
    caller, added = re.subn(r"\n(\s+)(xcompat-ref: .*)\n", r"\n\1\2\n\1build-args: |\n\1  --backend\n\1  native\n",
                            pin_xcompat(readme_caller_workflow(), sha), count=1)
    assert added == 1
    install_workflow(repo, "ci.yml", caller)
    install_workflow(repo, "xcompat.yml", (REPO_ROOT / "workflows" / "xcompat.yml").read_text())
    git(repo, "init", "-q", "-b", "main")
    git(repo, "remote", "add", "origin", f"https://github.com/{OWNER}/{REPO}.git")
    commit_all(repo, f"{NAME} {OLD}")
    git(repo, "tag", f"v{OLD}")
    # act copies the workspace as .gitignore says, and this project ignores "tags" (ctags'
    # file), which drops .git/refs/tags from the copy; packed, the tag travels as on GitHub,
    # whose checkout with fetch-depth: 0 fetches it.
    git(repo, "pack-refs", "--all")
    fake = fake_github.start(fake_github.FakeGitHub(fake_github.load_contract(), owner=OWNER, repo=REPO))
    try:
        yield Adopted(path=repo, work=work, forge=forge, fake=fake, key=key)
    finally:
        fake_github.stop(fake)


def _pull_request(adopted: Adopted, head: str, base: str, run_id: int) -> ActRun:
    repo = {"id": REPO_ID, "name": REPO, "full_name": f"{OWNER}/{REPO}", "owner": {"login": OWNER},
            "url": f"https://api.github.com/repos/{OWNER}/{REPO}", "default_branch": "main"}
    event = {"action": "synchronize", "number": PR, "repository": repo,
             "pull_request": {"number": PR, "head": {"sha": head, "ref": "topic", "repo": repo},
                              "base": {"sha": base, "ref": "main", "repo": repo}}}
    adopted.fake.add_pull(PR, head)
    return run_act(adopted.path, "pull_request", event, work=adopted.work, forge=adopted.forge, run_id=run_id,
                   token="good-token", api_url=adopted.fake.url, workflow="ci.yml",
                   extra_env={"GITHUB_REPOSITORY_ID": str(REPO_ID)})


@pytest.fixture(scope="module")
def pull_request(adopted: Adopted) -> Iterator[tuple[str, str]]:
    """The 2.2.0 release as a pull request on the 2.1.0 main branch; ``(base, head)``."""
    repo = adopted.path
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "-b", "topic")
    for tracked in git(repo, "ls-files").split("\n"):
        if tracked and not tracked.startswith((".xcompat/", ".github/")):
            (repo / tracked).unlink(missing_ok=True)
    unpack(NEW, repo)
    head = commit_all(repo, f"{NAME} {NEW}")
    run = _pull_request(adopted, head, base, run_id=301)
    (adopted.work / "pull-request.log").write_text(run.log)
    yield base, head
    assert adopted.fake.violations == []


def _cells(adopted: Adopted, run_id: int) -> dict[str, Path]:
    folders = (adopted.work / "artifacts" / str(run_id)).glob("xcompat-results-*-test")
    return {f.name.removeprefix("xcompat-results-").removesuffix("-test"): f for f in folders}


def test_every_stage_runs_for_each_cell_on_its_own_python(adopted: Adopted, pull_request: tuple[str, str]) -> None:
    cells = _cells(adopted, 301)
    assert {cell.split("-")[0] for cell in cells} == {f"py{PYTHON}", f"py{OTHER}"}, sorted(cells)
    for cell, folder in cells.items():
        results = {p.name for p in (folder / cell).iterdir()}
        assert {"probe.json", "kernels.json", "test.json", "abi.json", "coverage.json"} <= results, (cell, results)
        test = json.loads((folder / cell / "test.json").read_text())
        assert test["status"] == "passed" and len(test["tests"]) > 10, test.get("summary")
        kernels = json.loads((folder / cell / "kernels.json").read_text())
        assert kernels["status"] == "skipped" and "tests.kernels: none" in kernels["summary"]
        abi = json.loads((folder / cell / "abi.json").read_text())
        assert abi["cell_id"] == cell and abi["status"] in ("passed", "failed"), abi.get("summary")
        # the cell's wheel was built by its own Python
        python = cell.split("-")[0].removeprefix("py").replace(".", "")
        [wheel] = (adopted.work / "artifacts" / "301" / f"xcompat-wheels-{cell}").glob("*.whl")
        assert f"-cp{python}-" in wheel.name, wheel.name
    log = (adopted.work / "pull-request.log").read_text()
    assert f"xcompat-venv-0.1.0-py{OTHER}" in log  # the other cell's jobs ran xcompat on its Python
    assert f"ABI baseline: the last release tag v{OLD}" in log  # built in CI from the tag


def test_the_check_run_and_the_comment_carry_abi_and_coverage(adopted: Adopted,
                                                              pull_request: tuple[str, str]) -> None:
    _, head = pull_request
    [check] = [c for c in adopted.fake.check_runs.values() if c["head_sha"] == head]
    assert check["status"] == "completed"
    text = json.dumps(check.get("_output"))  # what the report stage posted
    assert "ABI" in text and "overage" in text, text[:3000]
    [comment] = adopted.fake.comments[PR]
    assert "ABI" in comment["body"] and "overage" in comment["body"]
    assert f"py{OTHER}" in comment["body"] and f"py{PYTHON}" in comment["body"]


def test_a_head_whose_matrix_did_not_verify_gets_its_own_red_verdict(adopted: Adopted,
                                                                      pull_request: tuple[str, str]) -> None:
    base, _ = pull_request
    repo = adopted.path
    matrix = repo / ".xcompat" / "matrix.yml"
    matrix.write_text(matrix.read_text().replace("timeout: 300", "timeout: 5"))  # not re-signed
    head = commit_all(repo, "a shorter timeout, not re-signed")
    run = _pull_request(adopted, head, base, run_id=302)
    assert run.returncode != 0, run.log[-6000:]
    [check] = [c for c in adopted.fake.check_runs.values() if c["head_sha"] == head]
    assert check["conclusion"] == "failure"
    assert "the matrix signature did not verify" in json.dumps(check.get("_output"))
    [comment] = adopted.fake.comments[PR]  # edited in place, never a second one
    assert "the matrix signature did not verify" in comment["body"]
    shutil.rmtree(adopted.work / "artifacts" / "302", ignore_errors=True)
