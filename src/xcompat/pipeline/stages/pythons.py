"""The pythons stage: the matrix's cells of the other Pythons this machine has.

The run's own stages run the cells of the interpreter xcompat runs on. Each other Python the
matrix names for this platform, arch and device backends, when this machine has it (pyenv's
versions, uv-managed Pythons, ``python3.X`` on PATH: ``xcompat.interpreters``), runs its cells
in a child ``xcompat run`` of the same project and matrix, in a venv of that interpreter
(``xcompat.interpreters.venv``): plan, build, probe, kernels and test. The ABI and coverage are
compared once, on the run's own cell. Children run side by side as the cores allow (one per two
cores). Their results join this run's under ``pythons/<python>/`` and the plan lists their
cells, so the report and the verdict judge them with the others; a Python this machine lacks
stays "not run here", saying where it was looked for.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xcompat import jsonio
from xcompat.pipeline.context import RunContext
from xcompat.pipeline.local import StageResult, load_json, python_tag

CHILD_STAGES = ("plan", "build", "probe", "kernels", "test")
CHILD_TIMEOUT_S = 3 * 3600.0
NOT_HERE = "not on this machine (looked in pyenv's versions, uv-managed Pythons and PATH)"
# A child's own documents, which this run has its own of: never copied as results.
_RUN_DOCUMENTS = frozenset({"plan.json", "run.json", "settings.json", "report.json", "gate.json"})


@dataclass(frozen=True)
class _Outcome:
    python: str
    cells: list[dict[str, Any]]  # the child's planned cells (empty: none ran)
    detail: str


@dataclass(frozen=True)
class PythonsStage:
    name: str = "pythons"
    runs_when_halted: bool = False

    def run(self, context: RunContext) -> StageResult:
        if context.cfg.lane is not None:
            return StageResult(name="pythons", status="skipped", detail="an emulated lane has its root's one Python")
        if context.cfg.cell is not None:
            return StageResult(name="pythons", status="skipped", detail="--cell names the one cell to run")
        if not context.cfg.other_pythons:
            return StageResult(name="pythons", status="skipped", detail="--pythons here: this interpreter's cells only")
        plan_path = context.pipe.path("plan.json")
        plan = load_json(plan_path)
        if not isinstance(plan, dict):
            return StageResult(name="pythons", status="skipped", detail="no plan (the plan stage did not run)")
        wanted = other_pythons(plan)
        if not wanted:
            return StageResult(name="pythons", status="skipped", detail="the matrix names no other Python here")
        outcomes = run_children(context, wanted)
        _join(context, plan, outcomes)
        jsonio.write_json(plan_path, plan)
        return StageResult(name="pythons", status="passed", detail="; ".join(o.detail for o in outcomes))


def other_pythons(plan: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The Pythons of the cells the plan left out only for their Python -> those cells."""
    here = python_tag()
    found: dict[str, list[dict[str, Any]]] = {}
    for cell in plan.get("not_run_here") or []:
        python = cell.get("python") if isinstance(cell, dict) else None
        if isinstance(python, str) and python != here and cell.get("only_python"):
            found.setdefault(python, []).append(cell)
    return found


def run_children(context: RunContext, wanted: dict[str, list[dict[str, Any]]]) -> list[_Outcome]:
    from xcompat.interpreters.discover import find_interpreter

    jobs = []
    outcomes = []
    for python, cells in sorted(wanted.items()):
        interpreter = find_interpreter(python)
        if interpreter is None:
            outcomes.append(_Outcome(python=python, cells=[], detail=f"Python {python}: {NOT_HERE}"))
        else:
            jobs.append((python, interpreter, cells))
    workers = max(1, (os.cpu_count() or 2) // 2)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        outcomes += list(pool.map(lambda job: _child(context, *job), jobs))
    return outcomes


def _frameworks(cells: list[dict[str, Any]]) -> dict[str, str]:
    """The newest version of each framework the cells name (a child runs with what it installs)."""
    from packaging.version import InvalidVersion, Version

    chosen: dict[str, str] = {}
    for cell in cells:
        for name, version in (cell.get("frameworks") or {}).items():
            try:
                newer = name not in chosen or Version(str(version)) > Version(chosen[name])
            except InvalidVersion:
                newer = name not in chosen
            if newer:
                chosen[name] = str(version)
    return chosen


def _child(context: RunContext, python: str, interpreter: Any, cells: list[dict[str, Any]]) -> _Outcome:
    from xcompat.interpreters.venv import VenvError, prepare

    pipe = context.pipe
    log = pipe.path("logs", f"pythons-{python}.log")
    try:
        venv_python = prepare(interpreter, _frameworks(cells), log)
    except VenvError as exc:
        return _Outcome(python=python, cells=[], detail=f"Python {python}: {exc} (logs/pythons-{python}.log)")
    out = pipe.path(".pythons", python)
    cfg = context.cfg
    argv = [str(venv_python), "-I", "-m", "xcompat", "run", str(cfg.project), "--matrix", str(cfg.matrix),
            "--out", str(out), "--backend", cfg.backend, "--no-coverage"]
    for stage in CHILD_STAGES:
        argv += ["--stage", stage]
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"$ {' '.join(argv)}\n")
        fh.flush()
        try:
            done = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT, timeout=CHILD_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return _Outcome(python=python, cells=[], detail=f"Python {python}: its run did not finish ({exc})")
    child_plan = load_json(out / "plan.json") if out.is_dir() else None
    if not isinstance(child_plan, dict):
        return _Outcome(python=python, cells=[], detail=f"Python {python}: its run stopped before planning "
                        f"(exit {done.returncode}; logs/pythons-{python}.log)")
    ran = [c for c in child_plan.get("cells", []) if isinstance(c, dict)]
    _copy_results(out, pipe.path("pythons", python))
    where = f"{interpreter.path}, Python {interpreter.version}"
    return _Outcome(python=python, cells=ran, detail=f"Python {python}: {len(ran)} cell(s) run ({where})")


def _copy_results(child: Path, dest: Path) -> None:
    """The child's results and logs, without its own run documents and hidden work folders."""
    if not child.is_dir():
        return
    for path in sorted(child.rglob("*")):
        rel = path.relative_to(child)
        if not path.is_file() or any(part.startswith(".") for part in rel.parts):
            continue
        if len(rel.parts) == 1 and rel.name in _RUN_DOCUMENTS:
            continue
        if rel.suffix not in (".json", ".log", ".xml", ".txt"):
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest / rel)


def _join(context: RunContext, plan: dict[str, Any], outcomes: list[_Outcome]) -> None:
    """The children's cells into this run's plan; the why of the cells still not run here."""
    ran = {c["id"]: c for o in outcomes for c in o.cells if isinstance(c.get("id"), str)}
    plan["cells"] = [*plan.get("cells", []), *ran.values()]
    why = {o.python: o.detail.split(": ", 1)[1] for o in outcomes if not o.cells}
    kept = []
    for cell in plan.get("not_run_here") or []:
        if cell.get("id") in ran:
            continue
        if cell.get("only_python") and cell.get("python") in why:
            cell = {**cell, "why": f"Python {cell['python']}: {why[cell['python']]}"}
        kept.append(cell)
    plan["not_run_here"] = kept
    context.cells = [*context.cells, *ran.values()]


STAGE = PythonsStage()
