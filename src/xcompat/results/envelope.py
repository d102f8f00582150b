"""The common envelope of every stage result, parsed once.

Every result a stage writes carries ``version`` (1), ``kind``, ``cell_id`` (string or
null), ``status`` (``passed failed crashed skipped fallback``) and ``summary``; the
stage's own fields follow (``schemas/<kind>.schema.json``). A value of the wrong type is
an ``InputError`` naming the file and the JSON path, never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from xcompat.errors import InputError
from xcompat.results.status import STAGE_STATUSES, severity, test_stage_status

RESULT_VERSION = 1
# Kinds written per cell by the stages; everything else with an envelope is shown generically.
STAGE_KINDS = frozenset({"build", "kernels", "test", "probe", "abi", "coverage"})
# Documents with a version and kind that are not stage results: a run's own outputs.
NOT_RESULTS = frozenset({"report", "settings", "plan", "run", "verify", "gate"})


@dataclass(frozen=True, kw_only=True)
class StageResult:
    """One stage result: the envelope plus the raw document (read through ``xcompat.results.kinds``)."""

    kind: str
    cell_id: str | None
    status: str
    summary: str
    source: str
    data: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


def looks_like_result(document: Any) -> bool:
    """A stage result: an object with ``version``, a ``kind`` that is not a run's own output, and ``status``."""
    return (
        isinstance(document, dict)
        and "version" in document
        and isinstance(document.get("kind"), str)
        and document["kind"] not in NOT_RESULTS
        and "status" in document
    )


def parse_envelope(document: Any, source: str) -> StageResult:
    if not isinstance(document, dict):
        raise InputError("expected a JSON object (a stage result)", file=source)
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version != RESULT_VERSION:
        raise InputError(
            f"unsupported result version {version!r}", file=source,
            hint="this xcompat reads version 1 results; use the same xcompat version for every stage",
        )
    kind = document.get("kind")
    if not isinstance(kind, str) or not kind:
        raise InputError('$.kind: "kind" must be a non-empty string', file=source)
    cell_id = document.get("cell_id")
    if cell_id is not None and (not isinstance(cell_id, str) or not cell_id):
        raise InputError('$.cell_id: "cell_id" must be a string or null (and not empty)', file=source)
    status = document.get("status")
    if status not in STAGE_STATUSES:
        what = "is not one of" if isinstance(status, str) else '"status" must be a string, one of'
        raise InputError(f"$.status: {status!r} {what} {', '.join(STAGE_STATUSES)}", file=source)
    summary = document.get("summary", "")
    if not isinstance(summary, str):
        raise InputError("$.summary: expected a string", file=source)
    summary = " ".join(summary.split())
    found = _status_of_items(kind, document)
    if found is not None and severity(found) > severity(status):
        # The items decide: a result whose status says more than its own tests or kernels do
        # (a stage's bug, or a bundle edited by hand) is never greener than they are.
        summary = f"its status says {status}, but its {_ITEMS[kind]} say {found}" + (f"; {summary}" if summary else "")
        status = found
    return StageResult(kind=kind, cell_id=cell_id, status=status, summary=summary, source=source, data=document)


_ITEMS = {"test": "tests", "kernels": "kernels", "abi": "gating findings"}


def _status_of_items(kind: str, document: dict[str, Any]) -> str | None:
    """The status a ``test`` or ``kernels`` result's own items give (as ``xcompat test`` and
    ``xcompat kernels`` derive it), or an ``abi`` result's count of gating findings; None when
    there is nothing to derive it from. Items that are not well-formed are left to
    ``xcompat.results.kinds``, which names them."""
    if kind == "abi":
        gating = document.get("gating")
        return "failed" if isinstance(gating, int) and not isinstance(gating, bool) and gating > 0 else None
    items = document.get(_ITEMS.get(kind, ""))
    if not isinstance(items, list):
        return None
    key = "outcome" if kind == "test" else "status"
    seen = {item.get(key) for item in items if isinstance(item, dict)}
    if kind == "test":
        found = test_stage_status(o for o in seen if isinstance(o, str))
        return None if found == "passed" else found
    if "crashed" in seen:
        return "crashed"
    return "failed" if "failed" in seen else None
