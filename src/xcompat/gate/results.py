"""Read what the gate judges: the plan's cells and the per-cell stage results.

Stage results are read by ``xcompat.results`` (the one reader the report uses too); this
module only reads the plan's cells, in the shapes a CI job may hold it (``matrix plan
--format json`` or a GitHub ``strategy.matrix``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xcompat.errors import InputError
from xcompat.model import cell_id_problem
from xcompat.results.envelope import STAGE_KINDS, StageResult
from xcompat.results.kinds import RecordedWheel, build_wheels
from xcompat.results.required import is_required
from xcompat.settings import Settings, settings_from_plan

__all__ = ["STAGE_KINDS", "Plan", "PlannedCell", "RecordedWheel", "StageResult", "load_plan", "load_results",
           "wheels_of"]


@dataclass(frozen=True, kw_only=True)
class PlannedCell:
    id: str
    required: bool
    backend: str | None = None
    runs_on: tuple[str, ...] = ()

    def as_spec(self) -> dict[str, Any]:
        return {"id": self.id, "required": self.required, "backend": self.backend}


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What the gate needs from a plan: its cells and the matrix's settings."""

    cells: tuple[PlannedCell, ...]
    matrix_sha256: str | None = None
    tag_pattern: str | None = None
    required_backends: tuple[str, ...] = ()
    settings: Settings | None = None

    def required(self, cell: PlannedCell) -> bool:
        """The one rule (``xcompat.results.is_required``), with this plan's settings."""
        return is_required(cell.as_spec(), self.settings)


def _cells_list(document: Any) -> list[Any] | None:
    if not isinstance(document, dict):
        return None
    for key in ("cells", "include"):
        value = document.get(key)
        if isinstance(value, list):
            return value
    matrix = document.get("matrix")
    if isinstance(matrix, dict):
        return _cells_list(matrix)
    github = document.get("github")
    if isinstance(github, dict):
        return _cells_list(github)
    return None


def load_plan(path: Path) -> Plan:
    """The cells of a plan written by ``xcompat matrix plan --format json`` (or a GitHub ``strategy.matrix``)."""
    from xcompat.jsonio import read_json

    document = read_json(path)
    cells = _cells_list(document)
    if cells is None:
        raise InputError("not a plan: expected a 'cells' (or GitHub 'include') list",
                         file=path, hint="write it with: xcompat matrix plan MATRIX --format json")
    planned: list[PlannedCell] = []
    seen: set[str] = set()
    for index, cell in enumerate(cells):
        where = f"$.cells[{index}]"
        if not isinstance(cell, dict):
            raise InputError(f"{where}: a cell must be an object", file=path)
        cid = cell.get("id", cell.get("cell_id", cell.get("cell")))
        if not isinstance(cid, str) or not cid:
            raise InputError(f"{where}: a cell needs a non-empty string 'id'", file=path)
        problem = cell_id_problem(cid)
        if problem:
            raise InputError(f"{where}.id: {problem}", file=path, hint="use the plan that `xcompat matrix plan` wrote")
        if cid in seen:
            raise InputError(f"{where}: cell id {cid!r} appears twice", file=path)
        seen.add(cid)
        required = cell.get("required", True)
        if not isinstance(required, bool):
            raise InputError(f"{where}.required: must be true or false, got {required!r}", file=path)
        labels = cell.get("runs_on", cell.get("runs-on", ()))
        runs_on = (labels,) if isinstance(labels, str) else tuple(labels) if isinstance(labels, list) else ()
        backend = cell.get("backend")
        planned.append(
            PlannedCell(id=cid, required=required, backend=backend if isinstance(backend, str) else None,
                        runs_on=tuple(str(label) for label in runs_on))
        )
    raw_settings = document.get("settings")
    settings: dict[str, Any] = raw_settings if isinstance(raw_settings, dict) else {}
    raw_gate = settings.get("gate")
    gate: dict[str, Any] = raw_gate if isinstance(raw_gate, dict) else {}
    pattern = gate.get("tag_pattern")
    backends = gate.get("required_backends", [])
    if pattern is not None and not isinstance(pattern, str):
        raise InputError(f"$.settings.gate.tag_pattern: expected a string, got {pattern!r}", file=path)
    if not isinstance(backends, list) or not all(isinstance(b, str) for b in backends):
        raise InputError(f"$.settings.gate.required_backends: expected a list of names, got {backends!r}", file=path)
    sha = document.get("matrix_sha256")
    resolved = settings_from_plan(document, source=str(path)) if isinstance(raw_settings, dict) else None
    return Plan(
        cells=tuple(planned),
        matrix_sha256=sha if isinstance(sha, str) and sha else None,
        tag_pattern=pattern,
        required_backends=tuple(backends),
        settings=resolved,
    )


def wheels_of(result: StageResult) -> tuple[RecordedWheel, ...]:
    return build_wheels(result) if result.kind == "build" else ()


def load_results(folders: Iterable[Path]) -> tuple[StageResult, ...]:
    """Every per-cell stage result under ``folders`` (searched recursively, e.g. downloaded artifacts).

    Read by ``xcompat.results.load_results``: a result file that does not read, parse or check
    is refused, never skipped; its stand-in (a failed result, ``StageResult.refused``) is kept
    whatever its kind, so a truncated result never reads as "no result".
    """
    from xcompat.results.collect import load_results as collect

    paths = list(folders)
    for folder in paths:
        if not folder.is_dir():
            raise InputError("results folder not found", file=folder, hint="download the stage artifacts there first")
    loaded = collect(paths)
    return tuple(r for r in loaded.results if r.kind in STAGE_KINDS or r.refused)
