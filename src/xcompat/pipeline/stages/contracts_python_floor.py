"""The python-floor stage: the lowest Python the project's own sources need, once for the project.

``xcompat contracts python-floor`` (vermin) on the project's folder, against the
``Requires-Python`` of the run's wheel (its METADATA says what users get, whatever builds it;
``pyproject.toml`` when the build made none) and the lowest Python of the matrix's cells. The
result belongs to no cell: the sources are the same in every one. How it counts is the
matrix's ``contracts.python-floor`` (``xcompat.results.contracts``).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xcompat.pipeline.context import RunContext
from xcompat.pipeline.local import StageResult
from xcompat.results.contracts import FLOOR


def lowest_python(cells: Iterable[Mapping[str, Any]]) -> str | None:
    """The lowest ``X.Y`` of the cells' Pythons (a free-threaded ``3.13t`` counts as 3.13)."""
    found = []
    for cell in cells:
        text = str(cell.get("python") or "").removesuffix("t")
        major, _, minor = text.partition(".")
        if major.isdigit() and minor.isdigit():
            found.append((int(major), int(minor)))
    return f"{min(found)[0]}.{min(found)[1]}" if found else None


def _matrix_cells(context: RunContext) -> Sequence[Mapping[str, Any]]:
    """Every cell of the matrix (the verify stage checked it), else the cells this machine serves."""
    from xcompat.errors import XcompatError
    from xcompat.matrix import load_matrix, read_matrix_bytes
    from xcompat.matrix.plan import expand

    matrix = context.cfg.matrix
    try:
        return [c.to_dict() for c in expand(load_matrix(read_matrix_bytes(matrix), source=str(matrix)))]
    except XcompatError:
        return context.cells


@dataclass(frozen=True)
class PythonFloorStage:
    name: str = FLOOR.kind
    runs_when_halted: bool = False

    def run(self, context: RunContext) -> StageResult:
        if importlib.util.find_spec("vermin") is None:
            return StageResult(name=self.name, status="skipped",
                               detail="not run: vermin is not installed (pip install 'xcompat[contracts]')")
        project = context.cfg.project
        lowest = lowest_python(_matrix_cells(context))
        wheel = next(iter(context.wheels), None)
        if wheel is None and not (project / "pyproject.toml").is_file() and lowest is None:
            return StageResult(name=self.name, status="skipped",
                               detail="not run: no wheel, no pyproject.toml and no Python in the plan to compare with")
        p = context.pipe
        result = context.result_path(self.name)
        result.parent.mkdir(parents=True, exist_ok=True)
        argv: list[str | os.PathLike[str]] = ["contracts", "python-floor", project, "-o", result]
        if wheel is not None:
            argv += ["--wheel", wheel]
        if lowest is not None:
            argv += ["--lowest-python", lowest]
        return p.run_command(self.name, p.xcompat(*argv), cwd=result.parent, outputs=[result])


STAGE = PythonFloorStage()
