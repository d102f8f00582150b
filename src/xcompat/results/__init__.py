"""One results model: every stage result parsed once, one status order, one ``Bump``, one verdict.

::

    from xcompat.results import load_results, judge
    loaded = load_results([".xcompat-out"])          # skips report.json, verify.json, ...
    verdict = judge(loaded.results, plan_cells, settings=settings, project=facts)
    verdict.conclusion, verdict.problems, verdict.cells

What each kind of stage result is (its file in a run, its readers, when it is required, where
the report shows it) is one table, ``STAGES`` (``xcompat.results.stages``).

The report (``xcompat.report.aggregate``), the release gate (``xcompat.gate``) and
``xcompat run``'s exit code are all computed from ``judge``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# Names resolve lazily (PEP 562): importing a leaf module such as ``xcompat.results.status``
# does not pull in the readers (which import xcompat.settings and xcompat.matrix).
_WHERE = {
    "LoadedResults": "collect", "load_plan": "collect", "load_results": "collect",
    "StageResult": "envelope", "parse_envelope": "envelope",
    "is_required": "required", "required_stages": "required",
    "BUMP_ORDER": "status", "SEVERITY": "status", "Bump": "status", "bump_rank": "status", "worst": "status",
    "worst_bump": "status",
    "CellVerdict": "verdict", "Verdict": "verdict", "judge": "verdict",
    "STAGES": "stages", "StageKind": "stages",
}

__all__ = [
    "BUMP_ORDER", "SEVERITY", "STAGES", "Bump", "CellVerdict", "LoadedResults", "StageKind", "StageResult",
    "Verdict", "bump_rank",
    "is_required", "judge", "load_plan", "load_results", "parse_envelope", "required_stages", "worst", "worst_bump",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'xcompat.results' has no attribute {name!r}")
    return getattr(import_module(f"xcompat.results.{_WHERE[name]}"), name)
