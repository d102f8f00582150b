"""Join the verdict (``xcompat.results.judge``) with each stage's own fields into one ``Report``.

The verdict (every cell's status, the conclusion, the problems) is computed once by
``xcompat.results``; this module only joins it with what renderers show: failing tests,
kernel cases, ABI findings and coverage, each read by the field names its schema gives
(``xcompat.results.kinds``). Rules: docs/run.md, "Verdict".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from xcompat.report.case_text import case_location, case_tail, log_tail, result_tail
from xcompat.report.cell_fields import cell_fields, cell_from_id
from xcompat.report.contracts import contract_entries
from xcompat.report.emulation import emulation_of
from xcompat.report.model import (
    AbiFinding,
    AbiSection,
    CellReport,
    CoverageSection,
    ElsewhereCell,
    Failure,
    FileCoverage,
    Report,
    StageStatus,
)
from xcompat.results import kinds as K
from xcompat.results.envelope import parse_envelope
from xcompat.results.stage_result import StageResult
from xcompat.results.stages import STAGES
from xcompat.results.status import bump_rank, severity, worst_bump
from xcompat.results.verdict import CellVerdict, judge
from xcompat.settings import ProjectFacts, Settings


def _tested_frameworks(results: Iterable[StageResult]) -> tuple[tuple[str, str], ...]:
    """The framework versions a cell actually ran with, from its probe result (torch, numpy)."""
    probe = next((r for r in results if r.kind == "probe"), None)
    return K.probe_frameworks(probe) if probe is not None else ()


def _test_failures(result: StageResult, required: bool) -> tuple[list[Failure], tuple[int, int, int]]:
    failures: list[Failure] = []
    passed = failed = skipped = 0
    for case in K.test_cases(result):
        if case.outcome in K.PASSING_OUTCOMES:
            passed += 1
        elif case.outcome in K.NEUTRAL_OUTCOMES:
            skipped += 1
        else:
            failed += 1
            file, line = case_location(case)
            message = case.message or case.crash_text or case.outcome
            failures.append(Failure(
                cell_id=result.cell_id, kind=result.kind, name=case.nodeid, outcome=case.outcome,
                message=" ".join(message.split())[:500], duration=case.duration_s, file=file, line=line,
                log_tail=case_tail(case), required=required,
            ))
    return failures, (passed, failed, skipped)


def _kernel_failures(result: StageResult, required: bool) -> list[Failure]:
    out = []
    for kernel in K.kernel_results(result):
        if kernel.status != "failed":
            continue
        lines = []
        for case in kernel.cases:
            if case.status == "failed":
                errs = [f"{name}={value:.3g}" for name, value in (("max_abs_err", case.max_abs_err),
                                                                  ("max_rel_err", case.max_rel_err)) if value is not None]
                mism = f"{case.mismatches} mismatches" if case.mismatches else ""
                lines.append(" ".join(filter(None, [case.id, mism, *errs, case.detail])))
        out.append(Failure(
            cell_id=result.cell_id, kind=result.kind, name=kernel.name, outcome="failed",
            message=f"{len(lines)} case(s) failed" if lines else "failed",
            log_tail=log_tail("\n".join(lines)), required=required,
        ))
    return out


def _abi_findings(result: StageResult) -> list[AbiFinding]:
    return [
        AbiFinding(
            cell_id=result.cell_id, kind=f.kind, library=f.library, symbol=f.symbol, demangled=f.demangled,
            required_bump=f.required_bump, message=" ".join(f.detail.split())[:500],
        )
        for f in K.abi_findings(result)
    ]


def _file_coverage(files: tuple[K.CoverageFile, ...]) -> tuple[FileCoverage, ...]:
    return tuple(FileCoverage(path=f.path, percent=f.percent, covered=f.covered, total=f.total, uncovered=f.uncovered)
                 for f in files)


def _coverage(result: StageResult) -> CoverageSection:
    if K.is_cell_coverage_artifact(result):
        # Only a cell's own artifact came (no merged coverage): its status and summary, no figures.
        return CoverageSection(status=result.status, summary=result.summary, percent=None, languages=(), files=(),
                               diff_percent=None, diff_threshold=None, diff_files=())
    data = K.coverage_data(result)
    return CoverageSection(
        status=result.status, summary=result.summary, percent=data.percent, languages=data.languages,
        files=_file_coverage(data.files), diff_percent=data.diff_percent, diff_threshold=data.diff_threshold,
        diff_files=_file_coverage(data.diff_files),
    )


def _as_results(results: Iterable[StageResult | Mapping[str, Any]]) -> list[StageResult]:
    return [item if isinstance(item, StageResult) else parse_envelope(dict(item), f"<result {index}>")
            for index, item in enumerate(results)]


def _display_spec(cell_id: str, results: list[StageResult]) -> dict[str, Any]:
    """A cell no plan describes: what its id says (``xcompat.model.cell_id``)."""
    spec = cell_from_id(cell_id)
    spec.setdefault("required", True)
    return spec


@dataclass(frozen=True, kw_only=True)
class _Sections:
    """What the cells and the run-level results add to the report's sections, as they are read."""

    failures: list[Failure] = field(default_factory=list)
    abi_findings: list[AbiFinding] = field(default_factory=list)
    abi_results: list[StageResult] = field(default_factory=list)
    coverage_results: list[StageResult] = field(default_factory=list)
    other: list[StageResult] = field(default_factory=list)


def _cell_report(cv: CellVerdict, sections: _Sections) -> CellReport:
    """One cell's row: its stages (a skip the settings allow says why), its tests' counts; its
    failing tests and kernels, ABI findings and coverage go to ``sections``."""
    required = cv.required
    passed = failed = skipped = not_run = 0
    kernels_tested = ""
    stages: list[StageStatus] = []
    for judged in cv.stages:
        result = judged.result
        summary = result.summary
        kind = STAGES.get(result.kind)
        if not judged.counted and judged.reason and kind is not None and kind.demanded is not None:
            summary = f"{summary} (not required: {judged.reason})" if summary else f"not required: {judged.reason}"
        stages.append(StageStatus(kind=result.kind, status=result.status, summary=summary))
        if result.kind == "test":
            found, (p, f, s) = _test_failures(result, required)
            passed, failed, skipped = passed + p, failed + f, skipped + s
            not_run += K.tests_not_run(result)
            sections.failures.extend(found)
        elif result.kind == "kernels":
            from xcompat.report.kernels_tested import kernels_tested_text, operator_failures

            sections.failures.extend(_kernel_failures(result, required))
            sections.failures.extend(operator_failures(result, required))
            kernels_tested = kernels_tested_text(result)
        elif result.kind == "abi":
            sections.abi_findings.extend(_abi_findings(result))
            sections.abi_results.append(result)
        elif result.kind == "coverage":
            sections.coverage_results.append(result)
        elif kind is None:
            sections.other.append(result)
        if judged.counted and result.status in ("failed", "crashed", "fallback") and not any(
            f.cell_id == cv.id and f.kind == result.kind for f in sections.failures
        ):
            sections.failures.append(Failure(
                cell_id=cv.id, kind=result.kind, name=result.kind, outcome=result.status,
                message=result.summary, log_tail=result_tail(result), required=required,
            ))
    fields = cell_fields({**cv.spec, "id": cv.id})
    fields.pop("required")
    cell = CellReport(
        kernels_tested=kernels_tested,
        **fields, required=required, planned=cv.planned, status=cv.status, reason=cv.reason,
        stages=tuple(stages), tests_passed=passed, tests_failed=failed, tests_skipped=skipped,
        tests_not_run=not_run, tested_frameworks=_tested_frameworks(j.result for j in cv.stages),
        emulation=emulation_of(j.result for j in cv.stages),
    )
    if cell.status in ("missing", "skipped") and required:
        sections.failures.append(Failure(cell_id=cv.id, kind="cell", name="no passing result"
                                         if cell.status == "skipped" else "no result", outcome=cell.status,
                                         message=cv.reason, required=True))
    return cell


def _run_level(results: Iterable[StageResult], sections: _Sections, settings: Settings | None = None) -> None:
    """Results tied to no cell: an ABI diff, merged coverage, and anything else among the others
    (a contract result, the python floor, is the contracts section's)."""
    from xcompat.results.contracts import CONTRACTS
    from xcompat.results.stages import excused

    for result in results:
        if result.kind in CONTRACTS:
            if excused(result, settings) is None and result.status in ("failed", "crashed", "fallback"):
                sections.failures.append(Failure(cell_id=None, kind=result.kind, name=result.kind,
                                                 outcome=result.status, message=result.summary))
            continue
        if result.kind == "abi":
            sections.abi_findings.extend(_abi_findings(result))
            sections.abi_results.append(result)
        elif result.kind == "coverage":
            sections.coverage_results.append(result)
        else:
            sections.other.append(result)
        if result.status in ("failed", "crashed", "fallback"):
            sections.failures.append(Failure(cell_id=None, kind=result.kind, name=_failure_name(result),
                                             outcome=result.status, message=result.summary,
                                             log_tail=result_tail(result)))


def _abi_section(abi_results: list[StageResult], abi_findings: list[AbiFinding]) -> AbiSection | None:
    if not abi_results:
        return None
    declared = [b for b in (K.abi_required_bump(r) for r in abi_results) if b is not None]
    bump = worst_bump([f.required_bump for f in abi_findings] + declared)
    worst_abi = max(abi_results, key=lambda r: severity(r.status))
    abi_findings.sort(key=lambda f: (-bump_rank(f.required_bump), f.library, f.display_symbol))
    # The version change the ABI diff saw, for the report's "release as X" line (one diff: unambiguous).
    versions = K.abi_versions(worst_abi)
    # An ABI diff always writes its required_bump; a result without one is a stage that did not
    # compare anything (its envelope says why), and claims neither "unchanged" nor a bump.
    compared = bool(declared) or bool(abi_findings)
    return AbiSection(required_bump=bump, findings=tuple(abi_findings), status=worst_abi.status,
                      summary="; ".join(r.summary for r in abi_results if r.summary),
                      actual_bump=versions.actual_bump, old_version=versions.old_version,
                      new_version=versions.new_version, compared=compared)


def _coverage_section(coverage_results: list[StageResult], warnings: list[str]) -> CoverageSection | None:
    if not coverage_results:
        return None
    # The merged (cell-less) coverage result wins over per-cell ones.
    chosen = next((r for r in coverage_results if r.cell_id is None), coverage_results[-1])
    coverage = _coverage(chosen)
    if (coverage.diff_threshold is not None and coverage.diff_percent is not None
            and coverage.diff_percent < coverage.diff_threshold and chosen.status == "passed"):
        warnings.append(
            f"diff coverage {coverage.diff_percent:.1f}% is below the threshold {coverage.diff_threshold:.1f}%")
    return coverage


def _headline(conclusion: str, cells: list[CellReport], abi: AbiSection | None, coverage: CoverageSection | None,
              elsewhere: tuple[ElsewhereCell, ...]) -> str:
    counts: dict[str, int] = {}
    for c in cells:
        counts[c.status] = counts.get(c.status, 0) + 1
    parts = [f"{n} {status}" for status, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    headline = {"failure": "failed", "success": "passed", "neutral": "nothing conclusive ran"}[conclusion] + (
        f": {len(cells)} cell{'' if len(cells) == 1 else 's'}, " + ", ".join(parts) if cells else "")
    if abi is not None:
        if not abi.compared:
            headline += "; ABI: not compared"
        else:
            headline += f"; ABI: {abi.required_bump} bump" if abi.required_bump != "none" else "; ABI: no change"
    if coverage is not None and coverage.percent is not None:
        headline += f"; coverage {coverage.percent:.1f}%"
    if elsewhere:
        headline += f"; {len(elsewhere)} cell{'s' if len(elsewhere) != 1 else ''} not run here"
    return headline


def build_report(
    results: Iterable[StageResult | Mapping[str, Any]],
    plan: Mapping[str, Any] | None = None,
    *,
    title: str = "xcompat report",
    artifact_url: str | None = None,
    notes: Iterable[str] = (),
    settings: Settings | None = None,
    project: ProjectFacts | None = None,
    require_kinds: Iterable[str] = (),
) -> Report:
    """Judge the stage results (and the plan, when given) and join them into one ``Report``.

    ``settings``: the resolved settings (default: the plan's ``settings``, when it has them).
    """
    from xcompat.settings import settings_from_plan

    all_results = _as_results(results)
    if settings is None and plan is not None and isinstance(plan.get("settings"), dict):
        settings = settings_from_plan(dict(plan), source="<plan>")
    plan_cells = None
    if plan is not None:
        plan_cells = [c for c in plan.get("cells", []) if isinstance(c, dict) and isinstance(c.get("id"), str)]
    verdict = judge(all_results, plan_cells, settings=settings, project=project,
                    require_kinds=tuple(require_kinds), cell_spec=_display_spec)
    notes_list = list(notes)
    warnings = list(verdict.warnings)
    sections = _Sections()
    cells = [_cell_report(cv, sections) for cv in verdict.cells]
    _run_level(verdict.global_results, sections, settings)
    abi = _abi_section(sections.abi_results, sections.abi_findings)
    coverage = _coverage_section(sections.coverage_results, warnings)

    failures = sections.failures
    # Failures first: required before optional, then by severity, then by cell and name.
    failures.sort(key=lambda f: (not f.required, -severity(f.outcome), f.cell_id or "", f.name))
    cells.sort(key=lambda c: (c.python, c.platform, c.arch, c.backend, c.toolkit or "", c.frameworks, c.id))

    conclusion = verdict.conclusion
    if conclusion == "neutral" and not all_results and not cells:
        notes_list.append("no results were found")
    elsewhere = _not_run_here(plan)
    return Report(
        title=title, conclusion=conclusion, headline=_headline(conclusion, cells, abi, coverage, elsewhere),
        cells=tuple(cells), failures=tuple(failures), problems=tuple(verdict.problems), warnings=tuple(warnings),
        abi=abi, coverage=coverage, other=tuple(sections.other), notes=tuple(notes_list), artifact_url=artifact_url,
        not_run_here=elsewhere, contracts=contract_entries(verdict, settings),
    )


def _not_run_here(plan: Mapping[str, Any] | None) -> tuple[ElsewhereCell, ...]:
    """The cells a local run's plan lists as not runnable on its machine (``check_plan`` read them)."""
    listed = plan.get("not_run_here") if plan is not None else None
    if not isinstance(listed, list):
        return ()
    return tuple(ElsewhereCell(id=c["id"], required=bool(c.get("required", True)), why=str(c.get("why", "")))
                 for c in listed if isinstance(c, dict) and isinstance(c.get("id"), str))


def _failure_name(result: StageResult) -> str:
    """A run-level result's name: for ``xcompat run``'s own stages, the stage (from the fixed set the
    report has a "To fix" for; a result's own words are never a name), else its kind."""
    from xcompat.report.triage.stages import PIPELINE_STAGE_FIX

    stage = result.data.get("stage") if result.kind == "pipeline" else None
    return stage if isinstance(stage, str) and stage in PIPELINE_STAGE_FIX else result.kind

