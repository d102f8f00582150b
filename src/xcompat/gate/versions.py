"""Release versions from git tags, and the semver bump between two of them.

The bump order is ``xcompat.results.status.BUMP_ORDER``; versions are parsed with
``packaging`` (PEP 440), so ``v1.2.0``, ``1.2.0rc1`` and ``1.2.0.post1`` all work. Tags that
are not versions are ignored when looking for the previous release.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from xcompat.errors import InputError, ToolError, UnavailableError
from xcompat.results.status import BUMP_ORDER, Bump, bump_rank

if TYPE_CHECKING:
    from packaging.version import Version

# One Bump and one bump order (``xcompat.results.status``): a required bump is satisfied
# by any actual bump at the same rank or above.
__all__ = ["BUMP_ORDER", "Bump", "ReleaseStep", "bump_rank", "parse_tag_version", "release_step", "version_bump"]


def parse_tag_version(tag: str, prefix: str = "") -> Version | None:
    """The PEP 440 version a tag names (``v1.2.3``, ``pkg-1.2.3`` with ``prefix="pkg-"``), or None."""
    from packaging.version import InvalidVersion, Version

    if prefix:
        if not tag.startswith(prefix):
            return None
        tag = tag[len(prefix) :]
    try:
        return Version(tag)  # packaging accepts and drops a leading "v"
    except InvalidVersion:
        return None


def version_bump(previous: Version, current: Version) -> Bump:
    """The semver size of the step from ``previous`` to ``current``.

    The same rules ``xcompat abi diff --against-version`` applies (one implementation,
    ``xcompat.abi.semver``): a change of X in ``X.y.z`` is major, of y minor, of z patch;
    below 1.0 the leftmost non-zero component is the major one (``0.3 -> 0.4`` is major,
    ``0.3.1 -> 0.3.2`` minor). A change of epoch is major.
    """
    from xcompat.abi.semver import required_bump_for_versions

    if previous.epoch != current.epoch:
        return "major"
    return required_bump_for_versions(str(previous), str(current))


@dataclass(frozen=True, kw_only=True)
class ReleaseStep:
    """The step from the last release tag to the tag being released."""

    tag: str
    version: str
    previous_tag: str | None
    previous_version: str | None
    bump: Bump | None  # None on a first release (nothing to compare with)
    how_found: str  # "given", "git tag --merged <ref>", "no earlier release tag"


def _git(repo: Path, *args: str) -> str:
    try:
        proc = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False, timeout=60
        )
    except FileNotFoundError:
        raise UnavailableError("git is not installed; it is needed to find the previous release tag",
                               hint="install git or pass --previous-tag") from None
    if proc.returncode != 0:
        raise ToolError(f"git {' '.join(args)} failed: {proc.stderr.strip() or proc.stdout.strip()}",
                        hint=f"is {repo} a git checkout with its tags fetched?")
    return proc.stdout


def _ref_exists(repo: Path, ref: str) -> bool:
    proc = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        capture_output=True, text=True, check=False, timeout=60,
    )
    return proc.returncode == 0


def is_shallow(repo: Path) -> bool:
    return _git(repo, "rev-parse", "--is-shallow-repository").strip() == "true"


def find_previous_release(repo: Path, tag: str, *, prefix: str = "") -> tuple[str | None, str]:
    """The greatest final-release tag below ``tag`` reachable from it (what ``git describe`` would see).

    Pre-releases and dev releases are skipped as candidates: ``2.0.0rc2`` is compared with the
    last real release, not with ``2.0.0rc1``. Returns ``(tag or None, how it was found)``.
    """
    current = parse_tag_version(tag, prefix)
    if current is None:
        raise InputError(f"tag {tag!r} is not a PEP 440 version" + (f" after prefix {prefix!r}" if prefix else ""),
                         hint="tag releases like v1.2.3, or pass --tag-prefix")
    ref = f"refs/tags/{tag}" if _ref_exists(repo, f"refs/tags/{tag}") else "HEAD"
    listed = _git(repo, "tag", "--merged", ref, "--list").split()
    best: tuple[Version, str] | None = None
    for name in listed:
        version = parse_tag_version(name, prefix)
        if version is None or name == tag or version.is_prerelease or version.is_devrelease:
            continue
        if version >= current:
            continue
        if best is None or version > best[0]:
            best = (version, name)
    how = f"git tag --merged {ref}"
    return (best[1] if best else None), how


def release_step(repo: Path, tag: str, *, previous_tag: str | None = None, prefix: str = "") -> ReleaseStep:
    current = parse_tag_version(tag, prefix)
    if current is None:
        raise InputError(f"tag {tag!r} is not a PEP 440 version" + (f" after prefix {prefix!r}" if prefix else ""),
                         hint="tag releases like v1.2.3, or pass --tag-prefix")
    how = "given"
    if previous_tag is None:
        previous_tag, how = find_previous_release(repo, tag, prefix=prefix)
        if previous_tag is None:
            if is_shallow(repo):
                raise InputError(
                    "no earlier release tag found in a shallow clone",
                    hint="fetch the full history and tags (actions/checkout: fetch-depth: 0; "
                    "GitLab: GIT_DEPTH: 0) or pass --previous-tag",
                )
            return ReleaseStep(tag=tag, version=str(current), previous_tag=None, previous_version=None,
                               bump=None, how_found="no earlier release tag")
    previous = parse_tag_version(previous_tag, prefix)
    if previous is None:
        raise InputError(f"previous tag {previous_tag!r} is not a PEP 440 version",
                         hint="pass --previous-tag with a version tag")
    return ReleaseStep(
        tag=tag,
        version=str(current),
        previous_tag=previous_tag,
        previous_version=str(previous),
        bump=version_bump(previous, current) if current > previous else None,
        how_found=how,
    )
