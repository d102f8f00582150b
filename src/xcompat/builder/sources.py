"""The private copy of a project's sources that every native build runs in.

A build in the user's checkout reads whatever an earlier build left there (setuptools reuses
``build/`` objects whose sources look unchanged, so a ``CFLAGS=--coverage`` build's
instrumented objects end up in the wheel) and writes ``build/``, ``*.egg-info`` and
in-place modules into it. Building from a copy, as build frontends do from an sdist, keeps
both out: the copy holds the project's sources and nothing a build made.

Which files: in a git work tree, the files git knows (tracked, plus untracked ones that are
not ignored), as they are on disk; elsewhere, a copy of the folder without build output.
Either way the top-level ``build/`` and ``dist/`` (what setuptools prunes from sdists too),
``*.egg-info``, ``__pycache__``, VCS folders, virtualenvs, tool caches and output folders
(xcompat's, and any folder whose ``.gitignore`` is ``*``) are left out. Symlinks are copied as what they point to (a source folder shared
through a link outside the project must still be there).

A git checkout's copy gets a private repository that borrows the checkout's objects
(``git clone --shared``): version plugins (setuptools-scm, hatch-vcs, ``git describe`` in a
setup.py) read the same history and see the same changes, and whatever git writes during the
build goes to the copy's repository, never the checkout's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path

from xcompat.log import get_logger

# Folders never copied, wherever they are: VCS data, caches, bytecode, packaging metadata.
SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", "__pycache__", ".eggs", ".tox", ".nox", ".pytest_cache", ".mypy_cache",
    ".ruff_cache", ".hypothesis", ".ipynb_checkpoints",
})
# Folders never copied at the project's top: setuptools' build base and the sdist/wheel folder.
SKIP_TOP_DIRS = frozenset({"build", "dist", "wheelhouse"})
# Files a build or a test run makes next to the sources (objects, coverage notes and counts,
# bytecode), and Python extension modules built in place; skipped unless git tracks them.
SKIP_SUFFIXES = (".o", ".obj", ".gcda", ".gcno", ".pyc", ".pyo", ".pyd", ".abi3.so")
_EXTENSION_MARKERS = (".cpython-", ".pypy")

_GIT_TIMEOUT = 120


def _ignores_itself(path: Path) -> bool:
    """A folder whose ``.gitignore`` is ``*``: a cache or output folder (pytest's, mypy's,
    xcompat run's, its staging folder) by the convention they all follow."""
    try:
        with open(path / ".gitignore", encoding="utf-8", errors="replace") as fh:
            text = fh.read(4096)
    except OSError:
        return False
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")] == ["*"]


def _skipped_dir(path: Path, rel: Path) -> bool:
    name = path.name
    if name in SKIP_DIRS or name.endswith(".egg-info") or name.lstrip(".").startswith("xcompat-out"):
        return True
    if len(rel.parts) == 1 and name in SKIP_TOP_DIRS:
        return True
    # A virtualenv (venv, virtualenv, uv) or conda environment, whatever its name.
    return (path / "pyvenv.cfg").is_file() or (path / "conda-meta").is_dir() or _ignores_itself(path)


def _skipped_file(name: str) -> bool:
    if name == ".git" or name.endswith(SKIP_SUFFIXES):  # a submodule's link to its repository
        return True
    return name.endswith((".so", ".dylib")) and any(m in name for m in _EXTENSION_MARKERS)


def _inside(path: Path, folders: Iterable[Path]) -> bool:
    return any(path == f or f in path.parents for f in folders)


def _git(folder: Path, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    try:
        proc = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, timeout=_GIT_TIMEOUT,
                              check=False, env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc if proc.returncode == 0 else None


def _git_files(project: Path) -> tuple[list[str], set[str]] | None:
    """(every file git knows under ``project``, the untracked ones), or None when ``project`` is
    not part of a git work tree (or git lists neither its pyproject.toml nor its setup.py: the
    folder is ignored there, e.g. an export below an ignored output folder)."""
    known = _git(project, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    untracked = _git(project, "ls-files", "-z", "--others", "--exclude-standard")
    if known is None or untracked is None:
        return None
    names = sorted({n for n in known.stdout.decode("utf-8", "surrogateescape").split("\0") if n})
    if not {"pyproject.toml", "setup.py"} & set(names):
        return None
    return names, {n for n in untracked.stdout.decode("utf-8", "surrogateescape").split("\0") if n}


def _walk(root: Path, top: Path, exclude: tuple[Path, ...]) -> Iterator[Path]:
    """Files below ``root`` (links followed, each real folder once), without build output."""
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        here = Path(dirpath)
        real = os.path.realpath(here)
        if real in seen:
            dirnames[:] = []
            continue
        seen.add(real)
        dirnames[:] = sorted(
            d for d in dirnames
            if not _skipped_dir(here / d, (here / d).relative_to(top)) and not _inside(here / d, exclude)
        )
        for name in sorted(filenames):
            if not _skipped_file(name):
                yield here / name


def _copy_file(source: Path, target: Path) -> None:
    if not source.exists():  # deleted but still in git's index, or a dangling link
        return
    if source.is_dir():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target)  # follows links: the copy holds what they point to


def _copy_listed(project: Path, dest: Path, names: list[str], untracked: set[str],
                 exclude: tuple[Path, ...]) -> None:
    for name in names:
        rel = Path(name)
        source = project / rel
        parts = rel.parts
        if any(p in SKIP_DIRS or p.endswith(".egg-info") or p.lstrip(".").startswith("xcompat-out")
               for p in parts[:-1]):
            continue
        if len(parts) > 1 and parts[0] in SKIP_TOP_DIRS:
            continue
        if _inside(source, exclude) or (name in untracked and _skipped_file(rel.name)):
            continue
        if source.is_dir():
            # A submodule, or a link to a folder: its files, by the same rules.
            if not _skipped_dir(source, rel):
                copy_sources(source, dest / rel, exclude=exclude, repository=False)
            continue
        _copy_file(source, dest / rel)


def _private_repository(project: Path, dest: Path) -> None:
    """Give the copy ``dest`` of ``project`` a git repository of its own that shares the
    checkout's objects, with HEAD and an index matching the checkout's HEAD."""
    top = _git(project, "rev-parse", "--show-toplevel")
    if top is None:
        return
    toplevel = Path(top.stdout.decode("utf-8", "surrogateescape").strip()).resolve()
    if toplevel != project.resolve():
        # A project below the top of its repository: only the project is copied, and a
        # repository for it alone would see the rest of the tree as deleted.
        return
    scratch = dest.parent / f".{dest.name}.git"
    made = _git(dest.parent, "clone", "--quiet", "--shared", "--no-checkout", str(toplevel), str(scratch))
    head = _git(project, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    if made is None or head is None:
        shutil.rmtree(scratch, ignore_errors=True)
        get_logger().debug(f"{project}: the build copy has no git history (git clone --shared failed)")
        return
    os.replace(scratch / ".git", dest / ".git")
    shutil.rmtree(scratch, ignore_errors=True)
    commit = head.stdout.decode().strip()
    # The clone's HEAD is the checkout's branch; a detached checkout's commit is set here. Then an
    # index of it, so the copy's changes show as the checkout's do.
    cloned = _git(dest, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    moved = cloned is None or cloned.stdout.decode().strip() != commit
    if moved and _git(dest, "update-ref", "--no-deref", "HEAD", commit) is None:
        get_logger().debug(f"{project}: the build copy's git HEAD could not be set to {commit}")
        return
    if _git(dest, "read-tree", commit) is None:
        get_logger().debug(f"{project}: the build copy's git index could not be written")


def copy_sources(project: Path, dest: Path, *, exclude: Iterable[Path] = (), repository: bool = True) -> Path:
    """Copy the sources of ``project`` into the new folder ``dest`` and return ``dest``.

    ``exclude``: more folders left out (the build's own output folder when it lies inside the
    project). ``repository``: give a git checkout's copy a private repository (above).
    """
    project = Path(project).resolve()
    dest = Path(dest)
    skip = tuple(Path(p).resolve() for p in exclude)
    dest.mkdir(parents=True, exist_ok=False)
    listed = _git_files(project)
    if listed is not None:
        names, untracked = listed
        _copy_listed(project, dest, names, untracked, skip)
        if repository:
            _private_repository(project, dest)
    else:
        for source in _walk(project, project, skip):
            _copy_file(source, dest / source.relative_to(project))
    return dest
