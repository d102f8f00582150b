"""Check a merged coverage result handed to the release gate, and judge it again.

``gate --coverage FILE`` gets a file a previous job wrote, possibly from a pull request's
run. Its own ``status`` and ``gate`` entries are claims: any JSON with ``"status":
"passed"`` would do. So the gate first checks that the file is what ``xcompat coverage
merge`` writes (kind ``coverage``, ``version`` 1, the coverage schema, finite numbers: a NaN
compares false with every threshold, so it would pass ``minimum`` checks), then re-applies
the thresholds of the signed matrix to the measured percentages instead of trusting the
file's verdict.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from xcompat.coverage.thresholds import GateCheck, Thresholds, evaluate
from xcompat.errors import InputError

COVERAGE_RESULT_VERSION = 1


def _non_finite(node: Any, path: str = "$") -> Iterator[str]:
    if isinstance(node, float) and not math.isfinite(node):
        yield path
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _non_finite(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _non_finite(value, f"{path}[{index}]")


def check_coverage_document(document: Any, *, source: str, schema: bool = True) -> dict[str, Any]:
    """``document`` when it is a merged coverage result; else ``InputError`` (exit 2) naming the place.

    ``schema=False`` checks the envelope only (object, kind, integer version, finite numbers),
    for callers that read just the envelope and the measured percentages.
    """
    if not isinstance(document, dict):
        raise InputError(f"expected a coverage result object, got {type(document).__name__}", file=source,
                         hint="pass the coverage.json written by xcompat coverage merge")
    kind = document.get("kind")
    if kind != "coverage":
        raise InputError(f"$.kind: expected 'coverage', got {kind!r}", file=source,
                         hint="pass the coverage.json written by xcompat coverage merge")
    version = document.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version != COVERAGE_RESULT_VERSION:
        raise InputError(f"$.version: expected {COVERAGE_RESULT_VERSION} (an integer), got {version!r}", file=source)
    bad = next(_non_finite(document), None)
    if bad is not None:
        raise InputError(f"{bad}: not a finite number (NaN or infinity)", file=source)
    if schema:
        from xcompat.jsonio import validate

        validate("coverage", document, source=source)
    return document


def recheck_coverage(document: Any, *, source: str, thresholds: Thresholds) -> list[GateCheck]:
    """The signed ``thresholds`` applied to the percentages the result measured.

    ``thresholds``: the verified matrix's ``coverage`` settings (``Thresholds(overall, diff,
    "matrix")``). The result's own ``status`` and ``gate`` entries are not consulted.
    """
    doc = check_coverage_document(document, source=source, schema=False)
    if thresholds.overall is None and thresholds.diff is None:
        return []
    totals = doc.get("totals")
    overall = totals.get("percent") if isinstance(totals, dict) else None
    if overall is not None and not _is_percent(overall):
        raise InputError(f"$.totals.percent: expected a percentage, got {overall!r}", file=source)
    diff_section = doc.get("diff")
    diff_known = isinstance(diff_section, dict)
    diff = diff_section.get("percent") if isinstance(diff_section, dict) else None
    if diff is not None and not _is_percent(diff):
        raise InputError(f"$.diff.percent: expected a percentage, got {diff!r}", file=source)
    return evaluate(thresholds, overall, diff, diff_known=diff_known)


def _is_percent(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 100


def matrix_thresholds(coverage_settings: Any) -> Thresholds:
    """``Thresholds`` from a verified matrix's ``coverage`` settings (``overall``/``diff`` or None)."""
    overall = getattr(coverage_settings, "overall", None)
    diff = getattr(coverage_settings, "diff", None)
    source = "matrix" if overall is not None or diff is not None else "none"
    return Thresholds(overall=overall, diff=diff, source=source)
