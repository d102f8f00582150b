"""What is required: one answer for the report, the gate and ``xcompat run``'s exit code.

``is_required(cell, settings)``: the cell must pass before the report is green or a release
is allowed: the matrix marks it ``required`` (a cell that does not say is), or its backend is
in ``gate.required-backends``.

``required_stages(cell, settings, project)``: which stage kinds such a cell must pass, each
with the reason. ``build`` always; ``test`` unless ``tests.pytest`` is empty; ``kernels``
only when the matrix asks for kernels (``tests.kernels`` is not ``none``) and the project
uses torch (its ``Requires-Dist`` or build requirements name it). ``probe`` and ``abi`` are
judged by their own result (a failed one is red, a skipped one is not).

``coverage_requirement(settings)``: coverage is informational (a skipped coverage stage is not
red: the tools are not installed, or it could not measure) unless the signed matrix sets a
coverage threshold; then a coverage result that is not ``passed`` is red.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xcompat.settings import ProjectFacts, Settings

CELL_STAGES = ("build", "test", "kernels")
# Stages whose "skipped" says nothing against the cell (coverage: see coverage_requirement).
INFORMATIONAL = frozenset({"probe", "abi"})


def _get(cell: Any, name: str) -> Any:
    return cell.get(name) if isinstance(cell, dict) else getattr(cell, name, None)


def is_required(cell: Any, settings: Settings | None) -> bool:
    """A plan cell (``xcompat.model.Cell`` or its dict) gates the report and the release.

    A cell that does not say ``required`` is required, as the matrix's cells are by default
    (``Cell.from_dict`` reads it so too): only ``required: false`` makes a cell optional."""
    marked = _get(cell, "required")
    if marked is None or bool(marked):
        return True
    backend = _get(cell, "backend")
    return settings is not None and backend is not None and backend in settings.gate.required_backends


@dataclass(frozen=True, kw_only=True)
class StageRequirement:
    kind: str
    required: bool
    reason: str


def kernels_requirement(settings: Settings | None, project: ProjectFacts | None) -> StageRequirement:
    if settings is not None and not settings.kernels_requested:
        return StageRequirement(kind="kernels", required=False, reason="the matrix sets tests.kernels: none")
    if project is not None and project.uses_torch is False:
        return StageRequirement(kind="kernels", required=False,
                                reason=f"{project.name or 'the project'} does not use torch "
                                f"({project.torch_evidence})")
    if project is None or project.uses_torch is None:
        # Not known here (a CI report without the project): a skipped kernels stage stays red.
        return StageRequirement(kind="kernels", required=True, reason="the matrix asks for kernels")
    return StageRequirement(kind="kernels", required=True,
                            reason=f"the matrix asks for kernels and the project uses torch ({project.torch_evidence})")


def required_stages(cell: Any, settings: Settings | None, project: ProjectFacts | None = None
                    ) -> dict[str, StageRequirement]:
    """The stage kinds a required cell must pass (``required=False`` entries say why not)."""
    out = {"build": StageRequirement(kind="build", required=True, reason="every cell builds its wheel")}
    if settings is not None and not settings.tests.pytest_paths:
        out["test"] = StageRequirement(kind="test", required=False, reason="tests.pytest is empty")
    else:
        out["test"] = StageRequirement(kind="test", required=True, reason="the project's tests must pass")
    out["kernels"] = kernels_requirement(settings, project)
    return out


def coverage_requirement(settings: Settings | None) -> StageRequirement:
    """Coverage is required only when the signed matrix sets ``coverage.overall`` or ``coverage.diff``."""
    c = settings.coverage if settings is not None else None
    thresholds = [f"{name} {value:g}%" for name, value in (("overall", getattr(c, "overall", None)),
                                                            ("diff", getattr(c, "diff", None))) if value is not None]
    if not thresholds:
        return StageRequirement(kind="coverage", required=False,
                                reason="coverage is informational: the matrix sets no coverage threshold")
    return StageRequirement(kind="coverage", required=True,
                            reason=f"the matrix sets coverage thresholds ({', '.join(thresholds)})")
