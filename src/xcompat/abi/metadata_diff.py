"""Differences between the packaging metadata of two wheels: Requires-Python and the
version ranges of their dependencies.

A dependency's range is judged by what it does to environments that worked: a new or raised
floor (``(any) -> >=1.7.1``) is ``requires_dist_floor_raised``, since every newer version of
the dependency is still allowed and an installer gets there by upgrading it; versions cut
off above or in the middle of the range (a new upper bound, an ``!=``) are
``requires_dist_narrowed``, since an environment that has them cannot take the new release
without downgrading. The bump of each kind is in ``rules.json``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xcompat.abi.tags_diff import WHEEL

if TYPE_CHECKING:
    from collections.abc import Iterable

    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

    from xcompat.abi.findings import Collector
    from xcompat.abi.manifest import Manifest

_PY_CANDIDATES = [f"{major}.{minor}{patch}" for major in (2, 3) for minor in range(21) for patch in ("", ".0", ".99")]


def diff_requires(old: Manifest, new: Manifest, c: Collector) -> None:
    if not (old.requires_python or new.requires_python or old.requires_dist or new.requires_dist):
        return
    if old.requires_python != new.requires_python and old.kind != "library" and new.kind != "library":
        _diff_requires_python(old, new, c)
    _diff_requires_dist(old, new, c)


def _diff_requires_python(old: Manifest, new: Manifest, c: Collector) -> None:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        sa = SpecifierSet(old.requires_python or "")
        sb = SpecifierSet(new.requires_python or "")
    except InvalidSpecifier as exc:
        c.add("requires_python_narrowed", WHEEL, None, f"Requires-Python cannot be parsed: {exc}")
        return
    lost = [v for v in _PY_CANDIDATES if v in sa and v not in sb and not v.endswith((".0", ".99"))]
    if lost or [v for v in _PY_CANDIDATES if v in sa and v not in sb]:
        shown = ", ".join(lost) or "some patch releases"
        c.add("requires_python_narrowed", WHEEL, None,
              f"Requires-Python {old.requires_python or '(any)'} -> {new.requires_python}: drops {shown}",
              old=old.requires_python, new=new.requires_python)
    else:
        c.add("requires_python_widened", WHEEL, None,
              f"Requires-Python {old.requires_python} -> {new.requires_python or '(any)'}",
              old=old.requires_python, new=new.requires_python)


def _requirements(items: Iterable[str]) -> dict[str, Requirement]:
    """The parseable requirements that are not behind an extra, by canonical name."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    out: dict[str, Requirement] = {}
    for text in items:
        try:
            r = Requirement(text)
        except InvalidRequirement:
            continue
        if r.marker is not None and "extra" in str(r.marker):
            continue
        out[canonicalize_name(r.name)] = r
    return out


def _diff_requires_dist(old: Manifest, new: Manifest, c: Collector) -> None:
    ra, rb = _requirements(old.requires_dist), _requirements(new.requires_dist)
    for name in sorted(rb.keys() - ra.keys()):
        c.add("requires_dist_added", WHEEL, None, f"new dependency {rb[name]}", new=str(rb[name]))
    for name in sorted(ra.keys() - rb.keys()):
        c.add("requires_dist_removed", WHEEL, name, f"dependency {ra[name]} dropped", old=str(ra[name]))
    for name in sorted(ra.keys() & rb.keys()):
        a, b = ra[name].specifier, rb[name].specifier
        if str(a) == str(b):
            continue
        candidates = _version_candidates(a, b)
        lost = [v for v in candidates if a.contains(v, prereleases=False) and not b.contains(v, prereleases=False)]
        if not lost:
            continue
        from packaging.version import Version

        allowed = [Version(v) for v in candidates if b.contains(v, prereleases=False)]
        floor_only = bool(allowed) and all(Version(v) < min(allowed) for v in lost)
        if floor_only:
            c.add("requires_dist_floor_raised", WHEEL, name,
                  f"{name}: {a or '(any)'} -> {b}: needs a newer {name}, no longer allows {', '.join(lost[-4:])}",
                  old=str(a) or None, new=str(b))
        else:
            c.add("requires_dist_narrowed", WHEEL, name,
                  f"{name}: {a or '(any)'} -> {b}: no longer allows {', '.join(lost[:4])}",
                  old=str(a) or None, new=str(b))


def _version_candidates(*specs: SpecifierSet) -> list[str]:
    from packaging.version import InvalidVersion, Version

    points: set[Version] = set()
    for spec in specs:
        for s in spec:
            try:
                v = Version(s.version.replace(".*", ""))
            except InvalidVersion:
                continue
            rel = list(v.release) + [0, 0]
            major, minor, micro = rel[0], rel[1], rel[2]
            for cand in (
                (major, minor, micro),
                (major, minor, micro + 1),
                (major, minor + 1, 0),
                (major + 1, 0, 0),
                (major, max(minor - 1, 0), 0),
                (max(major - 1, 0), 0, 0),
                (major, minor, max(micro - 1, 0)),
            ):
                points.add(Version(".".join(map(str, cand))))
    return [str(v) for v in sorted(points)]
