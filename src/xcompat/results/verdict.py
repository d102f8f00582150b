"""The one verdict: which cells passed, which did not and why, and whether the whole is green.

``judge`` is what the report's conclusion, the release gate's cell checks and
``xcompat run``'s exit code are all computed from. Rules (docs/run.md, "Verdict"):

* a cell's status is its worst counted stage (``xcompat.results.status.SEVERITY``);
  a planned cell with no result is ``missing``;
* a ``skipped`` stage counts against the cell unless the stage is not required for it:
  ``probe`` and ``abi`` never are, ``coverage`` only when the matrix sets a coverage threshold
  (``coverage_requirement``), ``kernels`` is not when the matrix sets ``tests.kernels: none``
  or the project does not use torch (``required_stages``);
* a required cell (``is_required``) that is not ``passed`` makes the verdict red, and so
  does a required stage kind without a result: the gate's ``--require-kind``; ``test``
  whenever the settings are known (a plan carries them) and ``tests.pytest`` is not
  empty; every required stage when the project is known, as in ``xcompat run``;
* a result not tied to a cell (ABI diff, merged coverage) is red when failed, crashed or
  a fallback, and a skipped coverage result too when coverage is required;
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

from xcompat.results.envelope import StageResult
from xcompat.results.kinds import expand_build
from xcompat.results.required import INFORMATIONAL, coverage_requirement, is_required, required_stages
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


def _judge_stage(result: StageResult, requirements: Mapping[str, Any]) -> StageJudgement:
    if result.status != "skipped":
        return StageJudgement(result=result, counted=True)
    if result.kind in INFORMATIONAL:
        return StageJudgement(result=result, counted=False, reason=f"{result.kind} is informational")
    req = requirements.get(result.kind)
    if req is not None and not req.required:
        return StageJudgement(result=result, counted=False, reason=req.reason)
    return StageJudgement(result=result, counted=True)


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
    ``require_kinds``: stage kinds every required cell must have a passing result of; when
    ``project`` is known, its required stages are added.
    """
    all_results = expand(results)
    by_cell: dict[str, list[StageResult]] = {}
    global_results: list[StageResult] = []
    planned_ids = {str(spec["id"]) for spec in plan_cells or ()}
    misplaced: list[str] = []
    refused: list[str] = []
    for result in all_results:
        owner = owning_cell(result.source, planned_ids) if planned_ids and result.source else None
        if result.refused:
            refused.append(result.refused)
            # Red where it would have counted: the job whose folder it came in wrote it.
            counted_for = owner or result.cell_id
            if counted_for != result.cell_id:
                result = replace(result, cell_id=counted_for, data={**result.data, "cell_id": counted_for})
        elif owner is not None and result.cell_id != owner:
            what = (f"a run-level {result.kind} result (for no cell)" if result.cell_id is None
                    else f"a {result.kind} result for cell {result.cell_id}")
            misplaced.append(f"{result.source}: {what} in the folder of cell {owner}; a cell's job may report "
                             "only its own cell, so it is not counted")
            continue
        if result.cell_id is None:
            global_results.append(result)
        else:
            by_cell.setdefault(result.cell_id, []).append(result)
    unplanned: list[str] = []
    problems: list[str] = list(misplaced)
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

    warnings: list[str] = list(unplanned)
    coverage = coverage_requirement(settings)
    cells: list[CellVerdict] = []
    for cid, (spec, planned) in specs.items():
        items = by_cell.get(cid, [])
        required = is_required(spec, settings)
        requirements = required_stages(spec, settings, project)
        # Coverage is judged by the results there are, never asked of a cell: in CI the merged
        # coverage is a run-level result.
        stages = tuple(_judge_stage(r, {**requirements, "coverage": coverage}) for r in items)
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
        needed = list(dict.fromkeys(require_kinds))
        if project is not None and project.uses_torch is not None:
            needed += [k for k, req in requirements.items() if req.required and k not in needed]
        elif settings is not None and requirements["test"].required and "test" not in needed:
            # The settings say the cell runs tests: a cell whose tests never reported is not green.
            needed.append("test")
        have = {s.result.kind for s in stages if s.counted or s.result.status != "skipped"}
        lacking = [k for k in needed if k not in have]
        if items and status == "passed" and lacking:
            status = "missing"
            reason = f"no {', '.join(lacking)} result (required: {', '.join(needed)})"
        cell = CellVerdict(id=cid, spec=spec, required=required, planned=planned, status=status, reason=reason,
                           stages=stages)
        cells.append(cell)
        if status != "passed":
            text = f"{cid}: {status}" + (f" ({reason})" if reason else "")
            (problems if required else warnings).append(text if required else f"optional cell {text}")

    for result in global_results:
        if result.status in RED_GLOBAL or (result.kind == "coverage" and result.status == "skipped"
                                           and coverage.required):
            problems.append(f"{result.kind}: {result.status}" + (f" ({result.summary})" if result.summary else ""))

    for refusal in refused:
        if not any(refusal in p for p in problems):  # an optional cell's, or hidden by a worse result
            problems.append(f"result refused: {refusal}")

    conclusion: Conclusion
    if problems:
        conclusion = "failure"
    elif not all_results and not cells or cells and all(c.status == "skipped" for c in cells):
        conclusion = "neutral"
    else:
        conclusion = "success"
    return Verdict(cells=tuple(cells), global_results=tuple(global_results), problems=tuple(problems),
                   warnings=tuple(warnings), conclusion=conclusion, misplaced=tuple(misplaced),
                   refused=tuple(refused), unplanned=tuple(unplanned))
