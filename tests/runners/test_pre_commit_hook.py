"""The pre-commit hook this repository ships, run by pre-commit itself (`try-repo`): pre-commit
builds its own environment from this checkout and runs the hook on the staged matrix files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.runners.harness import SAMPLE, clean_environ, git, snapshot_xcompat

pytestmark = pytest.mark.timeout(900)


def test_matrix_validate_hook_passes_a_good_matrix_and_stops_a_broken_one(tmp_path: Path) -> None:
    pre_commit = Path(sys.executable).parent / "pre-commit"
    if not pre_commit.is_file():
        pytest.fail("pre-commit is not installed in this venv; run `make test-runners`", pytrace=False)
    forge = tmp_path / "forge"
    snapshot_xcompat(forge)  # try-repo clones a git repository: this checkout's files, committed
    project = tmp_path / "project"
    (project / ".xcompat").mkdir(parents=True)
    (project / "pkg" / ".xcompat").mkdir(parents=True)
    shutil.copy(SAMPLE / ".xcompat" / "matrix.yml", project / ".xcompat" / "matrix.yml")
    broken = (SAMPLE / ".xcompat" / "matrix.yml").read_text().replace("backends:", "backendz:", 1)
    (project / "pkg" / ".xcompat" / "matrix.yml").write_text(broken)
    (project / "README.md").write_text("not a matrix\n")
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    env = {**clean_environ(tmp_path), "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
           "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))}

    def run(*files: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(pre_commit), "try-repo", str(forge / "org" / "xcompat-action"),
                               "xcompat-matrix-validate", "--files", *files], cwd=project, env=env,
                              capture_output=True, text=True, timeout=600, check=False)

    ok = run(".xcompat/matrix.yml", "README.md")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "xcompat matrix validate" in ok.stdout and "Passed" in ok.stdout
    bad = run(".xcompat/matrix.yml", "pkg/.xcompat/matrix.yml")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "Failed" in bad.stdout and "pkg/.xcompat/matrix.yml" in bad.stdout and "backendz" in bad.stdout
