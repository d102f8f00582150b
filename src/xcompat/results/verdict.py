"""The one verdict: which cells passed, which did not and why, and whether the whole is green.

``judge`` is what the report's conclusion, the release gate's cell checks and
``xcompat run``'s exit code are all computed from. Rules (docs/run.md, "Verdict"):

* a cell's status is its worst counted stage (``xcompat.results.status.SEVERITY``);
  a planned cell with no result is ``missing``;
* a ``skipped`` stage counts against the cell unless the stage is not required for it (each
  kind's ``requirement`` in ``xcompat.results.stages``): ``probe`` and ``abi`` never are,
  ``coverage`` only when the matrix sets a coverage threshold, ``kernels`` is not when the
  matrix sets ``tests.kernels: none`` or the project does not use torch;
* a required cell (``is_required``) that is not ``passed`` makes the verdict red, and so
  does a required stage kind without a result: the gate's ``--require-kind``; ``test``
  whenever the settings are known (a plan carries them) and ``tests.pytest`` is not
  empty; every required stage when the project is known, as in ``xcompat run`` (each
  kind's ``demanded``);
* a result not tied to a cell (ABI diff, merged coverage) is red when failed, crashed or
  a fallback, and a skipped coverage result too when coverage is required;
* a result whose kind has a matrix key that excuses it (``excused``: the contract kinds in
  ``report`` mode) is shown but not counted, in a cell or not; a stub finding on an object the
  ABI diff reports as removed or changed is the ABI stage's (``reported_once``);
* a result that names another cell, or no cell (a run-level ABI diff or merged coverage),
  but lies in a cell's folder (``<cell>/`` or a CI artifact ``xcompat-results-<cell>-<stage>/``)
  is not counted and makes the verdict red: a cell's job, which runs the project's code, may
  report only its own cell (``owning_cell``);
* a result file that was refused (it did not read, parse or check: ``xcompat.results.collect``)
  is a failed result saying ``result refused: FILE: why``, counted for the cell whose folder
  it lies in, else the cell it names, else the run; the verdict is red.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePath
from typing import Any, Literal

from xcompat.results.contracts import reported_once
from xcompat.results.envelope import StageResult
from xcompat.results.kinds import expand_build
from xcompat.results.required import is_required
from xcompat.results.stages import STAGES, StageRequirement, demanded_kinds, excused
from xcompat.results.stages import requirements as stage_requirements
from xcompat.results.status import CellStatus, severity, worst
from xcompat.settings import ProjectFacts, Settings

Conclusion = Literal["success", "failure", "neutral"]
RED_GLOBAL = frozenset({"failed", "crashed", "fallback"})


@dataclass(frozen=True, kw_only=True)
class StageJudgement:
    result: StageResult
    counted: bool  # False: shown, but a skip the settings allow
    reason: str = ""  # why a skip does not count


@dataclass(frozen=True, kw_only=True)
class CellVerdict:
    id: str
    spec: Mapping[str, Any]  # the plan's cell (or what the results say about it)
    required: bool
    planned: bool
    status: CellStatus
    reason: str
    stages: tuple[StageJudgement, ...]

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(sorted({s.result.kind for s in self.stages}))

    @property
    def problem(self) -> bool:
        return self.required and self.status != "passed"


@dataclass(frozen=True, kw_only=True)
class Verdict:
    cells: tuple[CellVerdict, ...]
    global_results: tuple[StageResult, ...]
    problems: tuple[str, ...]
    warnings: tuple[str, ...]
    conclusion: Conclusion
    misplaced: tuple[str, ...] = ()  # results for another cell found in a cell's folder (also in problems)
    refused: tuple[str, ...] = ()  # "FILE: why" of each result file that was refused (also in problems)
    unplanned: tuple[str, ...] = ()  # results for cells the plan does not list (also in warnings)

    @property
    def green(self) -> bool:
        return self.conclusion == "success"


def expand(results: Iterable[StageResult]) -> list[StageResult]:
    out: list[StageResult] = []
    for result in results:
        out.extend(expand_build(result))
    return out


ARTIFACT_PREFIX = "xcompat-results-"  # CI artifacts: xcompat-results-<cell>-<stage>


def owning_cell(source: str, cell_ids: Collection[str]) -> str | None:
    """The cell whose folder ``source`` lies in: the outermost enclosing folder named after a
    planned cell, or a CI artifact folder ``xcompat-results-<cell>-<stage>`` of one; None when
    there is none (a run's own output, a folder of loose results). The outermost, because a
    job writes what it likes *inside* its own folder (``results/A/B/test.json`` is cell A's)."""
    for folder in PurePath(source).parts[:-1]:
        if folder in cell_ids:
            return folder
        if folder.startswith(ARTIFACT_PREFIX):
            rest = folder[len(ARTIFACT_PREFIX):]
            cell = rest.rpartition("-")[0]
            if cell in cell_ids:
                return cell
    return None


def _judge_stage(result: StageResult, requirements: Mapping[str, StageRequirement],
                 settings: Settings | None = None) -> StageJudgement:
    if result.status != "skipped":
        why = excused(result, settings)
        return StageJudgement(result=result, counted=why is None, reason=why or "")
    kind = STAGES.get(result.kind)
    if kind is not None and kind.requirement is None:
        return StageJudgement(result=result, counted=False, reason=f"{result.kind} is informational")
    req = requirements.get(result.kind)
    if req is not None and not req.required:
        return StageJudgement(result=result, counted=False, reason=req.reason)
    return StageJudgement(result=result, counted=True)


@dataclass(frozen=True, kw_only=True)
class _Placed:
    """Expanded results, each where it counts: in its cell, for the run, or not at all."""

    by_cell: dict[str, list[StageResult]]
    global_results: list[StageResult]
    misplaced: list[str]
    refused: list[str]


def _place(all_results: Iterable[StageResult], planned_ids: Collection[str]) -> _Placed:
    placed = _Placed(by_cell={}, global_results=[], misplaced=[], refused=[])
    for result in all_results:
        owner = owning_cell(result.source, planned_ids) if planned_ids and result.source else None
        if result.refused:
            placed.refused.append(result.refused)
            # Red where it would have counted: the job whose folder it came in wrote it.
            counted_for = owner or result.cell_id
            if counted_for != result.cell_id:
                result = replace(result, cell_id=counted_for, data={**result.data, "cell_id": counted_for})
        elif owner is not None and result.cell_id != owner:
            what = (f"a run-level {result.kind} result (for no cell)" if result.cell_id is None
                    else f"a {result.kind} result for cell {result.cell_id}")
            placed.misplaced.append(f"{result.source}: {what} in the folder of cell {owner}; a cell's job may "
                                    "report only its own cell, so it is not counted")
            continue
        if result.cell_id is None:
            placed.global_results.append(result)
        else:
            placed.by_cell.setdefault(result.cell_id, []).append(result)
    return placed


def _cell_specs(plan_cells: Sequence[Mapping[str, Any]] | None, by_cell: Mapping[str, list[StageResult]],
                cell_spec: Any) -> tuple[dict[str, tuple[Mapping[str, Any], bool]], list[str]]:
    """Every cell to judge, ``id -> (spec, planned)``, and a warning for each the plan does not list."""
    unplanned: list[str] = []
    specs: dict[str, tuple[Mapping[str, Any], bool]] = {}
    for spec in plan_cells or ():
        specs[str(spec["id"])] = (spec, True)
    for cid, items in by_cell.items():
        if cid not in specs:
            spec = cell_spec(cid, items) if cell_spec is not None else {"id": cid, "required": True}
            if plan_cells is not None:
                unplanned.append(f"{len(items)} result(s) for {cid}, which the plan does not list "
                                 f"(e.g. {items[0].source})")
                spec = {**spec, "required": False}
            specs[cid] = (spec, plan_cells is None)
    return specs, unplanned


def _judge_cell(cid: str, spec: Mapping[str, Any], planned: bool, items: Sequence[StageResult], *,
                required: bool, requirements: Mapping[str, StageRequirement], needed: Sequence[str],
                settings: Settings | None = None) -> CellVerdict:
    stages = tuple(_judge_stage(r, requirements, settings) for r in items)
    counted = [s.result for s in stages if s.counted]
    reason = ""
    if not items:
        status: CellStatus = "missing"
        reason = "no result: the job did not run or its artifact was not uploaded"
    elif not counted:
        status = "skipped"
        reason = "; ".join(f"{s.result.kind}: {s.result.summary}" for s in stages)
    else:
        status = worst(r.status for r in counted)
        if status != "passed":
            bad = max(counted, key=lambda r: severity(r.status))
            reason = f"{bad.kind} {bad.status}" + (f": {bad.summary}" if bad.summary else "")
    have = {s.result.kind for s in stages if s.counted or s.result.status != "skipped"}
    lacking = [k for k in needed if k not in have]
    if items and status == "passed" and lacking:
        status = "missing"
        reason = f"no {', '.join(lacking)} result (required: {', '.join(needed)})"
    return CellVerdict(id=cid, spec=spec, required=required, planned=planned, status=status, reason=reason,
                       stages=stages)


def _red_alone(result: StageResult, requirements: Mapping[str, StageRequirement]) -> bool:
    """A result not tied to a cell is red when failed, crashed or a fallback; a skipped one too
    when its kind is required but asked of no cell: coverage with a threshold, judged by the
    results there are (in CI the merged coverage is a run-level result)."""
    if result.status in RED_GLOBAL:
        return True
    kind = STAGES.get(result.kind)
    req = requirements.get(result.kind)
    return (result.status == "skipped" and kind is not None and kind.demanded is None
            and req is not None and req.required)


def judge(
    results: Iterable[StageResult],
    plan_cells: Sequence[Mapping[str, Any]] | None,
    *,
    settings: Settings | None = None,
    project: ProjectFacts | None = None,
    require_kinds: Sequence[str] = (),
    cell_spec: Any = None,
) -> Verdict:
    """Judge expanded results against the plan's cells (``None``: cells come from the results).

    ``cell_spec(cell_id, results)`` describes a cell the plan does not list (for display).
    ``require_kinds``: stage kinds every required cell must have a passing result of; the kinds
    the settings and the project ask of a cell (``xcompat.results.stages.demanded_kinds``) are added.
    """
    all_results = reported_once(expand(results))  # a stub finding the ABI diff claims is the ABI stage's
    placed = _place(all_results, {str(spec["id"]) for spec in plan_cells or ()})
    specs, unplanned = _cell_specs(plan_cells, placed.by_cell, cell_spec)
    problems: list[str] = list(placed.misplaced)
    warnings: list[str] = list(unplanned)
    requirements = stage_requirements(settings, project)
    needed = list(dict.fromkeys([*require_kinds, *demanded_kinds(settings, project)]))
    cells: list[CellVerdict] = []
    for cid, (spec, planned) in specs.items():
        cell = _judge_cell(cid, spec, planned, placed.by_cell.get(cid, []), required=is_required(spec, settings),
                           requirements=requirements, needed=needed, settings=settings)
        cells.append(cell)
        if cell.status != "passed":
            text = f"{cid}: {cell.status}" + (f" ({cell.reason})" if cell.reason else "")
            (problems if cell.required else warnings).append(text if cell.required else f"optional cell {text}")

    for result in placed.global_results:
        if _red_alone(result, requirements) and excused(result, settings) is None:
            problems.append(f"{result.kind}: {result.status}" + (f" ({result.summary})" if result.summary else ""))

    for refusal in placed.refused:
        if not any(refusal in p for p in problems):  # an optional cell's, or hidden by a worse result
            problems.append(f"result refused: {refusal}")

    conclusion: Conclusion
    if problems:
        conclusion = "failure"
    elif not all_results and not cells or cells and all(c.status == "skipped" for c in cells):
        conclusion = "neutral"
    else:
        conclusion = "success"
    return Verdict(cells=tuple(cells), global_results=tuple(placed.global_results), problems=tuple(problems),
                   warnings=tuple(warnings), conclusion=conclusion, misplaced=tuple(placed.misplaced),
                   refused=tuple(placed.refused), unplanned=tuple(unplanned))
