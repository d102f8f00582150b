"""One results model: every stage result parsed once, one status order, one ``Bump``, one verdict.

::

    from xcompat.results import load_results, judge
    loaded = load_results([".xcompat-out"])          # skips report.json, verify.json, ...
    verdict = judge(loaded.results, plan_cells, settings=settings, project=facts)
    verdict.conclusion, verdict.problems, verdict.cells

The report (``xcompat.report.aggregate``), the release gate (``xcompat.gate``) and
``xcompat run``'s exit code are all computed from ``judge``.
"""

from __future__ import annotations

from xcompat.results.collect import LoadedResults, load_plan, load_results
from xcompat.results.envelope import StageResult, parse_envelope
from xcompat.results.required import is_required, required_stages
from xcompat.results.status import BUMP_ORDER, SEVERITY, Bump, bump_rank, worst, worst_bump
from xcompat.results.verdict import CellVerdict, Verdict, judge

__all__ = [
    "BUMP_ORDER",
    "SEVERITY",
    "Bump",
    "CellVerdict",
    "LoadedResults",
    "StageResult",
    "Verdict",
    "bump_rank",
    "is_required",
    "judge",
    "load_plan",
    "load_results",
    "parse_envelope",
    "required_stages",
    "worst",
    "worst_bump",
]
