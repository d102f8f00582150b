"""The cell's Python in a CI job: the job must run the interpreter the cell names.

A cell of the plan names its Python ("3.12", "3.13t"). Its build (native backend), test,
probe, kernels and coverage jobs run xcompat with the interpreter they test, so that
interpreter must be the cell's: a job on another one would build a wheel for the wrong
Python, or find no wheel that installs and fail its tests for a reason nobody can see.
Hosted runners get the cell's Python from the workflow (actions/setup-python with
``matrix.python``); self-hosted ones must have it.
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

from xcompat.pipeline.ci.step import CiInputs, StageRefused

EXIT_WRONG_PYTHON = 5  # the runner cannot run this cell: as for an unsupported runner


def running_python() -> str:
    """This interpreter in the matrix's spelling: "3.12", "3.13t"."""
    free = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    return f"{sys.version_info.major}.{sys.version_info.minor}{'t' if free else ''}"


def plan_cell(inputs: CiInputs) -> dict[str, object] | None:
    """The plan's entry for ``inputs.cell`` (None: no cell, no plan, or a plan without it: the
    stage's own checks refuse those)."""
    from xcompat.jsonio import read_json

    if not inputs.cell or not inputs.plan_path.is_file():
        return None
    try:
        document = read_json(inputs.plan_path)
    except Exception:  # noqa: BLE001 - an unreadable plan is refused by the stage's own reader
        return None
    cells = document.get("cells") if isinstance(document, dict) else None
    for cell in cells if isinstance(cells, list) else []:
        if isinstance(cell, dict) and cell.get("id") == inputs.cell:
            return cell
    return None


def cell_python(inputs: CiInputs) -> str | None:
    """The Python the plan names for ``inputs.cell``."""
    python = (plan_cell(inputs) or {}).get("python")
    return python if isinstance(python, str) else None


def check_cell_python(inputs: CiInputs, stage: str) -> None:
    """``StageRefused`` when this job's interpreter is not the one its cell names."""
    want = cell_python(inputs)
    have = running_python()
    if want is None or want == have:
        return
    raise StageRefused(
        f"this runner has no Python {want} for cell {inputs.cell}: the {stage} job runs Python {have} "
        f"({Path(sys.executable)}); hosted runners: keep the workflow's setup-python step (setup-python: "
        f"true), self-hosted runners: install python{want} on the runner's PATH", EXIT_WRONG_PYTHON)


def wheel_does_not_fit(wheels: list[Path], cell: str) -> str:
    """Why none of ``wheels`` installs on this interpreter, naming the wheels and the interpreter."""
    from packaging.tags import sys_tags

    best = next(iter(sys_tags()))
    found = ", ".join(w.name for w in wheels) if wheels else "no wheel at all"
    where = f" of cell {cell}" if cell else ""
    return (f"no wheel{where} installs on this job's Python {running_python()} ({sys.executable}, best tag "
            f"{best}): found {found}; build the wheel with the cell's Python, or test it with the one it "
            "was built for")
