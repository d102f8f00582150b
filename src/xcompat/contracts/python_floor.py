"""The python-floor check: the lowest Python the project's own sources need, against the
lowest one it claims (``Requires-Python``) and the lowest one its matrix tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from xcompat.contracts.requires_python import floor_of, show
from xcompat.contracts.result import Finding, result_document
from xcompat.contracts.sources import package_sources
from xcompat.contracts.vermin_run import Requirement, run_vermin
from xcompat.errors import InputError

KIND = "contracts-python-floor"


def floor_findings(requirements: Sequence[Requirement], targets: Sequence[tuple[str, tuple[int, int]]]
                   ) -> list[Finding]:
    """One finding per construct above the lowest of ``targets`` (label, version) it exceeds."""
    ordered = sorted(targets, key=lambda t: t[1])
    findings: list[Finding] = []
    for req in requirements:
        above = next(((label, v) for label, v in ordered if req.minimum > v), None)
        if above is None:
            continue
        label, version = above
        code = "above-requires-python" if label == "Requires-Python" else "above-lowest-python"
        findings.append(Finding(code, f"{req.file}:{req.line}: {req.feature} requires {show(req.minimum)}; "
                                      f"{label} allows {show(version)}",
                                {"file": req.file, "line": req.line, "construct": req.feature,
                                 "requires": show(req.minimum), "against": label, "floor": show(version)}))
    return findings


def check_python_floor(root: Path, *, requires_python: str | None, source: str,
                       lowest_python: tuple[int, int] | None = None, python: str | None = None
                       ) -> dict[str, object]:
    """The result document for the project at ``root``. ``requires_python`` is the claim
    (read from ``source``: pyproject.toml or a wheel); ``lowest_python`` the matrix's lowest."""
    targets: list[tuple[str, tuple[int, int]]] = []
    claimed = floor_of(requires_python, source=source) if requires_python else None
    if claimed is not None:
        targets.append(("Requires-Python", claimed))
    if lowest_python is not None:
        targets.append(("the lowest Python of the matrix", lowest_python))
    if not targets:
        raise InputError("no floor to check against: the project declares no Requires-Python floor",
                         file=source, hint="declare [project] requires-python or give --lowest-python")
    files = package_sources(root)
    requirements = run_vermin(root, files, python=python)
    needed = max((r.minimum for r in requirements), default=None)
    findings = floor_findings(requirements, targets)
    return result_document(KIND, None, findings, clean=f"{len(files)} files need at most Python "
                           f"{show(needed) if needed else '3.0'}; the floor {show(min(v for _, v in targets))} "
                           "holds", extra={
                               "requires_python": requires_python,
                               "lowest_python": show(lowest_python) if lowest_python else None,
                               "needed": show(needed) if needed else None,
                               "files": len(files),
                           })
