"""Which lines a change added or modified, relative to a base ref.

Parsing ``git diff`` is delegated to diff-cover's ``GitDiffReporter`` (a well-kept parser
that handles renames, quoted names, merge conflicts and staged/unstaged changes). We do
not use diff-cover's report generation: it reads a coverage XML back from disk and
returns line lists, while xcompat already holds the merged line data in memory and needs
per-language attribution and structured uncovered ranges. diff-cover's own ``GitDiffTool``
runs git in the current working directory, so a small tool with the same interface runs
it in the repository (``git -C``) instead.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from xcompat.errors import InputError, UnavailableError


@dataclass(frozen=True)
class ChangedLines:
    base_ref: str
    files: dict[str, tuple[int, ...]]  # path relative to the source root -> added/changed lines
    prefix: str = ""  # the source root relative to the git top level ("" or "sub/dir/")


class _RepoGitDiff:
    """The interface diff-cover's ``GitDiffReporter`` expects, run in ``repo``."""

    range_notation = "..."

    def __init__(self, repo: Path) -> None:
        self.repo = repo

    def _git(self, *args: str) -> str:
        cmd = [
            "git",
            "-C",
            str(self.repo),
            "-c",
            "diff.mnemonicprefix=no",
            "-c",
            "diff.noprefix=no",
            "diff",
            "--no-color",
            "--no-ext-diff",
            "-U0",
            *args,
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, check=False)
        except FileNotFoundError:
            raise UnavailableError("git is not installed; diff coverage needs it") from None
        if proc.returncode != 0:
            msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise InputError(
                f"git diff failed: {msg[0] if msg else proc.returncode}",
                file=self.repo,
                hint="fetch the base ref first (e.g. git fetch origin main --depth=50)",
            )
        return proc.stdout.decode("utf-8", "surrogateescape")

    def diff_committed(self, compare_branch: str) -> str:
        return self._git(f"{compare_branch}{self.range_notation}HEAD")

    def diff_staged(self) -> str:
        return self._git("--cached")

    def diff_unstaged(self) -> str:
        return self._git()

    def untracked(self) -> list[str]:
        return []


def changed_lines(repo: Path, base_ref: str, *, include_uncommitted: bool = True) -> ChangedLines:
    """Lines added or changed since the merge base of ``base_ref`` and HEAD, per source-root path."""
    try:
        from diff_cover.diff_reporter import GitDiffReporter
        from diff_cover.git_diff import GitDiffError
    except ImportError:
        raise UnavailableError(
            "diff-cover is not installed", hint="pip install 'xcompat[coverage]'"
        ) from None
    repo = repo.resolve()
    proc = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--show-prefix"], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise InputError("not inside a git checkout; diff coverage needs one", file=repo)
    prefix = proc.stdout.strip()
    reporter = GitDiffReporter(
        compare_branch=base_ref,
        git_diff=_RepoGitDiff(repo),
        ignore_staged=not include_uncommitted,
        ignore_unstaged=not include_uncommitted,
    )
    files: dict[str, tuple[int, ...]] = {}
    try:
        for path in reporter.src_paths_changed():
            if prefix and not path.startswith(prefix):
                continue
            lines = reporter.lines_changed(path)
            if lines:
                files[path[len(prefix) :]] = tuple(lines)
    except GitDiffError as exc:
        raise InputError(f"cannot parse git diff against {base_ref}: {exc}", file=repo) from None
    return ChangedLines(base_ref=base_ref, files=files, prefix=prefix)
