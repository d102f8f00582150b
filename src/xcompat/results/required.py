"""What is required: one answer for the report, the gate and ``xcompat run``'s exit code.

``is_required(cell, settings)``: the cell must pass before the report is green or a release
is allowed: the matrix marks it ``required`` (a cell that does not say is), or its backend is
in ``gate.required-backends``.

``required_stages(cell, settings, project)``: which stage kinds such a cell must pass, each
with the reason: the kinds a cell is asked for (``StageKind.demanded``), each judged by its
``requirement`` in the one table of stage kinds (``xcompat.results.stages``), which also holds
``kernels_requirement`` and ``coverage_requirement``. Kinds without a requirement (``probe``,
``abi``) are judged by their own result: a failed one is red, a skipped one is not.
"""

from __future__ import annotations

from typing import Any

from xcompat.results.stages import (
    STAGES,
    StageRequirement,
    coverage_requirement,
    kernels_requirement,
    requirements,
)
from xcompat.settings import ProjectFacts, Settings

__all__ = ["StageRequirement", "coverage_requirement", "is_required", "kernels_requirement", "required_stages"]


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


def required_stages(cell: Any, settings: Settings | None, project: ProjectFacts | None = None
                    ) -> dict[str, StageRequirement]:
    """The stage kinds a required cell must pass (``required=False`` entries say why not)."""
    found = requirements(settings, project)
    return {name: found[name] for name, kind in STAGES.items() if kind.demanded is not None and name in found}
