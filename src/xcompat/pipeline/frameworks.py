"""The framework versions a local run can serve: the matrix's cells against what is installed here.

A local run uses the torch and numpy installed in its environment; CI installs the versions
each cell names. The plan stage and the check before the first build
(``xcompat.pipeline.preflight``) keep the same cells, by :func:`pick_framework_versions`.
"""

from __future__ import annotations

from typing import Any


def installed_frameworks() -> dict[str, str]:
    """The installed torch and numpy, ``name -> version`` without a local part (``+cpu``)."""
    from importlib import metadata

    found: dict[str, str] = {}
    for name in ("torch", "numpy"):
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        found[name] = version.split("+")[0]
    return found


def matches(wanted: str, installed: str) -> bool:
    """Whether ``installed`` is the version ``wanted`` names (``2.5`` matches ``2.5.1``)."""
    wanted_parts = wanted.split(".")
    return installed.split(".")[: len(wanted_parts)] == wanted_parts


def pick_framework_versions(
    cells: list[dict[str, Any]], installed: dict[str, str]
) -> tuple[list[dict[str, Any]], list[str]]:
    """Keep the cells whose framework versions match what is installed here.

    For each framework the cells name: keep the cells whose listed version matches the
    installed one; when none does, keep the cells of the newest listed version and say so
    (a local run uses what is installed; CI runs the real versions). A framework that is
    not installed at all keeps no cell.
    """
    from packaging.version import InvalidVersion, Version

    def key(v: str) -> Version:
        try:
            return Version(v)
        except InvalidVersion:
            return Version("0")

    notes: list[str] = []
    names = sorted({name for cell in cells for name in (cell.get("frameworks") or {})})
    for name in names:
        listed = sorted({str(c["frameworks"][name]) for c in cells if name in (c.get("frameworks") or {})}, key=key)
        if name not in installed:
            notes.append(f"{name} is not installed here: its cells are left to CI")
            cells = [c for c in cells if name not in (c.get("frameworks") or {})]
            continue
        matching = [v for v in listed if matches(v, installed[name])]
        chosen = matching[-1] if matching else listed[-1]
        if not matching:
            notes.append(f"{name} {installed[name]} is installed; the matrix lists {', '.join(listed)}: "
                         f"running the {chosen} cell with {installed[name]}")
        cells = [c for c in cells if str((c.get("frameworks") or {}).get(name, chosen)) == chosen]
    return cells, notes
