"""The bump between two released versions, Cargo-style (PEP 440 versions).

``1.2.3 -> 2.0.0`` is major, ``1.2.3 -> 1.3.0`` minor, ``1.2.3 -> 1.2.4`` patch. Below 1.0
the leftmost non-zero component is the "major" one: ``0.3.1 -> 0.4.0`` is major,
``0.3.1 -> 0.3.2`` minor, and ``0.0.3 -> 0.0.4`` major. Only pre/post/dev/local changes
count as patch; a new version that is not greater than the old one is ``none``.
``next_version`` is the other direction: the release to suggest for a bump.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xcompat.bump import Bump

if TYPE_CHECKING:
    from packaging.version import Version


class VersionError(ValueError):
    pass


def _parse(text: str) -> Version:
    from packaging.version import InvalidVersion, Version

    try:
        return Version(str(text))
    except InvalidVersion:
        raise VersionError(f"{text!r} is not a PEP 440 version") from None


def required_bump_for_versions(old_version: str, new_version: str) -> Bump:
    """The bump that going from ``old_version`` to ``new_version`` *is* (the "actual" bump)."""
    old, new = _parse(old_version), _parse(new_version)
    if new <= old:
        return "none"
    a = (list(old.release) + [0, 0, 0])[:3]
    b = (list(new.release) + [0, 0, 0])[:3]
    if a[0] != b[0]:
        return "major"
    if a[0] == 0:
        if a[1] != b[1]:
            return "major"
        if a[1] == 0:
            return "major" if a[2] != b[2] else "patch"
        return "minor" if a[2] != b[2] else "patch"
    if a[1] != b[1]:
        return "minor"
    if a[2] != b[2] or len(old.release) > 3 or len(new.release) > 3:
        return "patch"
    return "patch"


def next_version(old_version: str, bump: Bump) -> str | None:
    """The release to suggest after ``old_version`` for a change that needs ``bump``.

    The one place a "release as X" is computed (the report and the gate both ask here). It is
    the first plain ``X.Y.Z`` whose step from ``old_version`` is at least ``bump`` by
    ``required_bump_for_versions``, so below 1.0 it follows the same rule: a major change of
    ``0.1.3`` is ``0.2.0`` and one of ``0.0.3`` is ``0.0.4``; a minor change of ``0.1.3`` is
    ``0.1.4``. ``None`` when nothing needs releasing (``bump`` is ``none``); an old version
    that is not PEP 440 raises ``VersionError``.
    """
    old = _parse(old_version)
    if bump == "none":
        return None
    if bump not in ("patch", "minor", "major"):
        raise VersionError(f"{bump!r} is not a bump (none, patch, minor, major)")
    major, minor, micro = (list(old.release) + [0, 0, 0])[:3]
    if bump == "patch" or major == minor == 0:
        # a patch step, and any step of 0.0.z: only z moves (0.0.z -> 0.0.z+1 is already major)
        parts = (major, minor, micro + 1)
    elif bump == "major":
        parts = (major + 1, 0, 0) if major else (0, minor + 1, 0)
    else:  # minor
        parts = (major, minor + 1, 0) if major else (0, minor, micro + 1)
    epoch = f"{old.epoch}!" if old.epoch else ""
    return epoch + ".".join(map(str, parts))
