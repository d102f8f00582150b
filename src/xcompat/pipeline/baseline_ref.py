"""The ABI baseline's sources: a ref the matrix names (``abi.baseline``), or an sdist.

``last-release-tag``: the greatest final-release tag (PEP 440, ``v1.2.3``) merged into HEAD.
``base-branch``: the remote's default branch (``origin/HEAD``, else ``origin/main`` or
``origin/master``). The project folder at that ref is exported with ``git archive`` (tracked
files only, every member checked by xcompat.archives) so it can be built like any project. An sdist
(``--baseline pkg-1.0.0.tar.gz``) is extracted the same way, through the same member checks.
"""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

from xcompat.errors import InputError

_GIT_TIMEOUT = 120
# A source tree exported for a baseline build; anything bigger is not a project's source.
MAX_ARCHIVE_BYTES = 512 * 1024 * 1024


def _git(folder: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, timeout=_GIT_TIMEOUT,
                              check=False)
    except FileNotFoundError:
        return subprocess.CompletedProcess(args, 127, b"", b"git is not installed")
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, 124, b"", b"git timed out")


def _out(proc: subprocess.CompletedProcess[bytes]) -> str:
    return proc.stdout.decode("utf-8", "replace").strip()


def resolve_baseline_ref(project: Path, baseline: str) -> tuple[str | None, str]:
    """``(ref, what it is)``, or ``(None, why there is none)``."""
    from xcompat.gate.versions import parse_tag_version

    top = _git(project, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        return None, f"{project} is not in a git repository"
    if baseline == "last-release-tag":
        tags = _git(project, "tag", "--merged", "HEAD", "--list")
        best = None
        for name in _out(tags).split():
            version = parse_tag_version(name)
            if version is None or version.is_prerelease or version.is_devrelease:
                continue
            if best is None or version > best[0]:
                best = (version, name)
        if best is None:
            return None, "no release tag (like v1.2.3) in the history of HEAD"
        return f"refs/tags/{best[1]}", f"the last release tag {best[1]}"
    if baseline == "base-branch":
        head = _git(project, "symbolic-ref", "--quiet", "refs/remotes/origin/HEAD")
        candidates = [_out(head)] if head.returncode == 0 and _out(head) else []
        candidates += ["refs/remotes/origin/main", "refs/remotes/origin/master"]
        for ref in candidates:
            if _git(project, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode == 0:
                return ref, f"the base branch {ref.removeprefix('refs/remotes/')}"
        return None, "no origin/HEAD, origin/main or origin/master (fetch the base branch first)"
    return None, f"unknown abi.baseline {baseline!r}"


def export_ref(project: Path, ref: str, dest: Path) -> Path:
    """Extract the project folder as it is at ``ref`` into ``dest``; returns the exported project folder."""
    top = Path(_out(_git(project, "rev-parse", "--show-toplevel")))
    rel = project.resolve().relative_to(top.resolve()).as_posix()
    args = ["archive", "--format=tar", ref]
    if rel != ".":
        args += ["--", rel]
    proc = _git(top, *args)
    if proc.returncode != 0:
        raise InputError(f"git archive {ref} failed: {proc.stderr.decode('utf-8', 'replace').strip()}",
                         file=str(project))
    if len(proc.stdout) > MAX_ARCHIVE_BYTES:
        raise InputError(f"the source at {ref} is larger than {MAX_ARCHIVE_BYTES >> 20} MiB", file=str(project))
    from xcompat.archives import extract_tar

    # Through the member checks of xcompat.archives, into a fresh folder that replaces dest
    # whole. A tracked symlink is written as a copy of what it names: the baseline build runs
    # this tree's code anyway, and projects do track links (README.md -> docs/index.md).
    extract_tar(None, dest, fileobj=io.BytesIO(proc.stdout), label=f"{project} (git archive {ref})",
                what="source tree", links="copy", max_total=MAX_ARCHIVE_BYTES, if_exists="replace")
    return dest if rel == "." else dest / rel


def _project_top(archive: Path, names: list[str]) -> str:
    files = set(names)
    for top in sorted({name.split("/", 1)[0] for name in names}):
        if f"{top}/pyproject.toml" in files or f"{top}/setup.py" in files:
            return top
    raise InputError("the archive has no pyproject.toml or setup.py in its top folder, so it is not an sdist",
                     file=str(archive), hint="pass the sdist of the last release (name-version.tar.gz)")


def sdist_project(archive: Path) -> str:
    """The folder inside an sdist that holds its project (``pkg-1.0.0``), every member checked
    by xcompat.archives; ``InputError`` when it is not a tar archive, holds a member it refuses,
    or has no ``pyproject.toml``/``setup.py`` at its top."""
    from xcompat.archives import extract_tar

    return _project_top(archive, extract_tar(archive, None, what="sdist", max_total=MAX_ARCHIVE_BYTES))


def extract_sdist(archive: Path, dest: Path) -> Path:
    """Extract an sdist into ``dest`` (replaced whole); returns its project folder."""
    from xcompat.archives import extract_tar

    top = sdist_project(archive)
    extract_tar(archive, dest, what="sdist", max_total=MAX_ARCHIVE_BYTES, if_exists="replace")
    return dest / top
