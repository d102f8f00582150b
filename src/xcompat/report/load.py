"""Loading stage results for the report: ``xcompat.results.collect`` is the one reader."""

from __future__ import annotations

from xcompat.results.collect import LoadedResults, is_plan, load_plan, load_results
from xcompat.results.envelope import StageResult
from xcompat.results.envelope import parse_envelope as _parse_envelope


def parse_result(document: object, source: str) -> StageResult:
    """The common envelope of one result document (``xcompat.results.parse_envelope``)."""
    return _parse_envelope(document, source)


__all__ = ["LoadedResults", "is_plan", "load_plan", "load_results", "parse_result"]
