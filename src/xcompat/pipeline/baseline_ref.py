"""The ABI baseline a matrix names (``abi.baseline``), found in the project's git history.

``last-release-tag``: the greatest final-release tag (PEP 440, ``v1.2.3``) merged into HEAD.
``base-branch``: the remote's default branch (``origin/HEAD``, else ``origin/main`` or
``origin/master``). The project folder at that ref is exported with ``git archive`` (tracked
files only, members checked before extraction) so it can be built like any project.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path, PurePosixPath

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
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        members = tar.getmembers()
        for member in members:
            name = PurePosixPath(member.name)
            if name.is_absolute() or ".." in name.parts or not (member.isfile() or member.isdir() or member.issym()):
                raise InputError(f"git archive {ref}: refusing member {member.name!r}", file=str(project))
            if member.issym() and (PurePosixPath(member.linkname).is_absolute() or ".." in PurePosixPath(member.linkname).parts):
                raise InputError(f"git archive {ref}: refusing link {member.name!r} -> {member.linkname!r}",
                                 file=str(project))
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, members=members, filter="data")
        else:  # Python before 3.10.12 / 3.11.4: the members were checked above
            tar.extractall(dest, members=members)
    return dest if rel == "." else dest / rel
