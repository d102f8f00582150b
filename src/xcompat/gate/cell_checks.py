"""The release gate's cell checks: one per required cell of the plan, read from the one verdict
the report uses (``xcompat.results.judge``), plus the checks of the results and of the plan itself.

Every reason reads "got X, expected Y" so a refused release says what to change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from xcompat.gate.checks import CheckOutcome
from xcompat.gate.contracts import contract_checks
from xcompat.gate.results import StageResult
from xcompat.results.status import severity
from xcompat.results.verdict import CellVerdict, Verdict
from xcompat.settings import Settings


def _results_check(verdict: Verdict) -> CheckOutcome | None:
    """Results in another cell's folder, or refused: no evidence, whichever cell they were for."""
    if verdict.misplaced:
        more = f" (+{len(verdict.misplaced) - 1} more)" if len(verdict.misplaced) > 1 else ""
        return CheckOutcome(
            name="results", passed=False,
            reason=f"got {verdict.misplaced[0]}{more}, expected each cell's results only in its own folder",
            details={"misplaced": list(verdict.misplaced), **({"refused": list(verdict.refused)}
                                                             if verdict.refused else {})},
        )
    if verdict.refused:
        # A result that cannot be read is no evidence, whichever cell it was for (or none).
        more = f" (+{len(verdict.refused) - 1} more)" if len(verdict.refused) > 1 else ""
        return CheckOutcome(
            name="results", passed=False,
            reason=f"got result refused: {verdict.refused[0]}{more}, expected every result file to read and check",
            details={"refused": list(verdict.refused)},
        )
    return None


def _cell_check(cell: CellVerdict, require_kinds: Sequence[str]) -> CheckOutcome:
    """A required planned cell: passed, or what it got instead."""
    name = f"cell:{cell.id}"
    items = [s.result for s in cell.stages]
    if not items:
        return CheckOutcome(
            name=name, passed=False,
            reason="got no result, expected a passing result (its job did not run or uploaded nothing)",
        )
    bad = [s.result for s in cell.stages if s.counted and s.result.status != "passed"]
    if cell.status != "passed" and bad:
        bad.sort(key=lambda r: -severity(r.status))
        first = bad[0]
        more = f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""
        why = f": {first.summary}" if first.summary else ""
        return CheckOutcome(
            name=name, passed=False,
            reason=f"got {first.kind} {first.status}{why}{more}, expected passed",
            details={"results": [{"kind": r.kind, "status": r.status, "path": str(r.source)} for r in bad]},
        )
    if cell.status != "passed":
        missing = [k for k in require_kinds if k not in cell.kinds]
        if missing:
            reason = f"got results for {', '.join(cell.kinds)}, expected also {', '.join(missing)}"
        else:
            reason = f"got {cell.status} ({cell.reason}), expected passed"
        return CheckOutcome(name=name, passed=False, reason=reason)
    return CheckOutcome(
        name=name, passed=True,
        reason=f"got {len(items)} passing result(s) ({', '.join(cell.kinds)}), expected passed",
    )


def _plan_checks(specs: Sequence[Mapping[str, Any]], verdict: Verdict, settings: Settings | None) -> list[CheckOutcome]:
    """The plan itself: not empty, at least one required cell, a cell for each required backend."""
    checks: list[CheckOutcome] = []
    required_backends = settings.gate.required_backends if settings is not None else ()
    if not specs:
        checks.append(CheckOutcome(name="plan", passed=False, reason="got an empty plan, expected cells"))
    elif not any(c.required for c in verdict.cells if c.planned):
        checks.append(CheckOutcome(
            name="plan", passed=False,
            reason=f"got {len(specs)} cell(s), none required; expected at least one required cell",
        ))
    backends = {c.get("backend") for c in specs}
    for backend in required_backends:
        if backend not in backends:
            checks.append(CheckOutcome(
                name="plan", passed=False,
                reason=f"got no cell for required backend {backend}, expected at least one "
                "(matrix gate.required-backends)",
            ))
    return checks


def check_cells(
    cells: Sequence[Mapping[str, Any]], results: Sequence[StageResult], *, settings: Settings | None = None,
    require_kinds: Sequence[str] = (),
) -> tuple[list[CheckOutcome], Verdict]:
    """One check per required cell, from the one verdict the report uses (``xcompat.results.judge``).

    ``cells``/``settings``: the verified matrix's own expansion and settings (the gate's
    default when ``--matrix`` is given); otherwise the plan's. Required means
    ``is_required``: marked ``required``, or on a backend in ``gate.required-backends``.
    A missing result fails (the runner never came, the job was skipped); a ``fallback``
    (ran, but on a fallback backend, not the one the cell names) fails; a ``skipped``
    required stage fails. Returns the checks and ``judge``'s verdict as it is: its cells and
    texts are shown by the gate, never edited.
    """
    from xcompat.results.verdict import judge

    specs = [dict(c) for c in cells]
    verdict = judge(results, specs, settings=settings, require_kinds=require_kinds)
    results_check = _results_check(verdict)
    checks = [results_check] if results_check is not None else []
    checks += [_cell_check(cell, require_kinds) for cell in verdict.cells if cell.planned and cell.required]
    checks += _plan_checks(specs, verdict, settings)
    checks += contract_checks(verdict, settings)
    return checks, verdict
