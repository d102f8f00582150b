"""The bump between two released versions, Cargo-style (PEP 440 versions).

``1.2.3 -> 2.0.0`` is major, ``1.2.3 -> 1.3.0`` minor, ``1.2.3 -> 1.2.4`` patch. Below 1.0
the leftmost non-zero component is the "major" one: ``0.3.1 -> 0.4.0`` is major,
``0.3.1 -> 0.3.2`` minor, and ``0.0.3 -> 0.0.4`` major. Only pre/post/dev/local changes
count as patch; a new version that is not greater than the old one is ``none``.
"""

from __future__ import annotations

from xcompat.abi.rules import Bump


class VersionError(ValueError):
    pass


def _parse(text: str):
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
