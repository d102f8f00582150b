"""abi.baseline found in git: the last release tag or the base branch, exported with git archive."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from xcompat.errors import InputError
from xcompat.pipeline.baseline_ref import export_ref, resolve_baseline_ref

ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@example.org"}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=ENV)


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "1.0"\n')
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    return repo


def test_not_a_repository_says_so(tmp_path: Path):
    ref, why = resolve_baseline_ref(tmp_path, "last-release-tag")
    assert ref is None and "not in a git repository" in why


def test_the_greatest_final_release_tag_is_taken(tmp_path: Path):
    repo = _repo(tmp_path)
    assert resolve_baseline_ref(repo / "pkg", "last-release-tag")[0] is None
    for tag in ("v1.0.0", "v1.2.0", "v1.10.0rc1", "not-a-version"):
        _git(repo, "tag", tag)
    ref, what = resolve_baseline_ref(repo / "pkg", "last-release-tag")
    assert ref == "refs/tags/v1.2.0" and "v1.2.0" in what


def test_base_branch_needs_a_remote_branch(tmp_path: Path):
    repo = _repo(tmp_path)
    ref, why = resolve_baseline_ref(repo, "base-branch")
    assert ref is None and "origin/main" in why
    _git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    assert resolve_baseline_ref(repo, "base-branch")[0] == "refs/remotes/origin/main"


def test_export_gives_the_project_folder_at_the_ref(tmp_path: Path):
    repo = _repo(tmp_path)
    _git(repo, "tag", "v1.0.0")
    (repo / "pkg" / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "2.0"\n')
    (repo / "pkg" / "untracked.py").write_text("x = 1\n")
    exported = export_ref(repo / "pkg", "refs/tags/v1.0.0", tmp_path / "out")
    assert exported == tmp_path / "out" / "pkg"
    assert 'version = "1.0"' in (exported / "pyproject.toml").read_text()
    assert not (exported / "untracked.py").exists()


def test_export_writes_a_tracked_symlink_as_a_copy_of_what_it_names(tmp_path: Path):
    repo = _repo(tmp_path)
    (repo / "pkg" / "docs").mkdir()
    (repo / "pkg" / "docs" / "index.md").write_text("hello\n")
    (repo / "pkg" / "README.md").symlink_to("docs/index.md")
    (repo / "pkg" / "docs" / "pyproject.toml").symlink_to("../pyproject.toml")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "two")
    exported = export_ref(repo / "pkg", "HEAD", tmp_path / "out")
    assert (exported / "README.md").read_text() == "hello\n"
    assert (exported / "docs" / "pyproject.toml").read_text() == (exported / "pyproject.toml").read_text()
    assert not [p for p in (tmp_path / "out").rglob("*") if p.is_symlink()]


def test_export_refuses_a_tracked_symlink_out_of_the_tree_and_keeps_the_last_export(tmp_path: Path):
    repo = _repo(tmp_path)
    _git(repo, "tag", "v1.0.0")
    (repo / "pkg" / "passwd").symlink_to("/etc/passwd")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "two")
    export_ref(repo / "pkg", "refs/tags/v1.0.0", tmp_path / "out")
    with pytest.raises(InputError, match=r"refusing member 'pkg/passwd'") as info:
        export_ref(repo / "pkg", "HEAD", tmp_path / "out")
    assert info.value.exit_code == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "repo"]  # no half-written folder beside it
    assert (tmp_path / "out" / "pkg" / "pyproject.toml").is_file() and not (tmp_path / "out" / "pkg" / "passwd").exists()
