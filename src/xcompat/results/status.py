"""The one status order every reader of results uses (and the one ``Bump``, from ``xcompat.bump``).

A stage result's ``status`` is one of ``STAGE_STATUSES``; a cell with no result is
``missing``. ``worst`` picks a cell's status from its stages: a crash hides nothing
behind it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from xcompat.bump import BUMP_ORDER, Bump, bump_rank, worst_bump

__all__ = [
    "BUMP_ORDER", "CRASH_OUTCOMES", "FAILING_OUTCOMES", "SEVERITY", "STAGE_STATUSES", "Bump", "CellStatus",
    "Status", "bump_rank", "severity", "test_stage_status", "worst", "worst_bump",
]

Status = Literal["passed", "failed", "crashed", "skipped", "fallback"]
CellStatus = Literal["passed", "failed", "crashed", "skipped", "fallback", "missing"]
STAGE_STATUSES: tuple[Status, ...] = ("passed", "failed", "crashed", "skipped", "fallback")

# Least to most severe. ``missing`` (a required result never came: nothing was checked at
# all) ranks above a failure that ran and said why; a crash ranks above everything.
SEVERITY: tuple[CellStatus, ...] = ("passed", "skipped", "fallback", "failed", "missing", "crashed")
_RANK: dict[str, int] = {status: index for index, status in enumerate(SEVERITY)}

# Test outcomes that fail a test stage, and those that make it "crashed" rather than "failed".
FAILING_OUTCOMES: frozenset[str] = frozenset({"failed", "error", "crashed", "timeout", "leaked"})
CRASH_OUTCOMES: frozenset[str] = frozenset({"crashed", "timeout"})


def test_stage_status(outcomes: Iterable[str]) -> Status:
    """A test stage's status from its tests' outcomes: crashed > failed > skipped (nothing
    ran, or no test at all) > passed. ``xcompat test`` writes it; every reader checks it."""
    seen = set(outcomes)
    if seen & CRASH_OUTCOMES:
        return "crashed"
    if seen & FAILING_OUTCOMES:
        return "failed"
    if seen <= {"skipped"}:
        return "skipped"
    return "passed"


def severity(status: str) -> int:
    """Rank of a status; an unknown one counts as failed."""
    return _RANK.get(status, _RANK["failed"])


def worst(statuses: Iterable[str], empty: CellStatus = "missing") -> CellStatus:
    found = list(statuses)
    if not found:
        return empty
    top = max(found, key=severity)
    return top if top in _RANK else "failed"  # type: ignore[return-value]

