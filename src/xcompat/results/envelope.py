"""The common envelope of every stage result, parsed once.

Every result a stage writes carries ``version`` (1), ``kind``, ``cell_id`` (string or
null), ``status`` (``passed failed crashed skipped fallback``) and ``summary``; the
stage's own fields follow (``schemas/<kind>.schema.json``). A value of the wrong type is
an ``InputError`` naming the file and the JSON path, never a guess.

``parse_envelope`` checks the envelope and then every field the readers of the kind use
(``xcompat.results.stages.check_fields``) before anything is derived from them, so no
consumer (report, gate, run) ever meets a field of the wrong type. A ``kind`` is a short
lower-case word and a ``cell_id`` is in the cell id character set (``xcompat.model``):
both end up in file names, job names and logs.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from xcompat.errors import InputError
from xcompat.model import cell_id_problem
from xcompat.results.stage_result import StageResult
from xcompat.results.status import STAGE_STATUSES, severity

__all__ = ["KIND_PATTERN", "NOT_RESULTS", "RESULT_HINT", "RESULT_VERSION", "StageResult", "looks_like_result",
           "parse_envelope"]

RESULT_VERSION = 1
# The kinds the stages write, and what each is, are one table: xcompat.results.stages.STAGES.
# Documents with a version and kind that are not stage results: a run's own outputs.
NOT_RESULTS = frozenset({"report", "settings", "plan", "run", "verify", "gate"})
KIND_PATTERN = re.compile(r"[a-z][a-z0-9_-]{0,63}")
# What to do about a result that is refused (an explicit file's one-line error says it).
RESULT_HINT = ("results are written by the xcompat stage commands, all of one xcompat version; "
               "rerun the stage that wrote it, or remove the file")


def looks_like_result(document: Any) -> bool:
    """Meant as a stage result: an object with ``version`` and ``status`` whose ``kind`` is not
    a run's own output. A ``kind`` that is missing or not a string still counts (and is then
    refused by ``parse_envelope``): it is a broken result, not some other JSON file."""
    kind = document.get("kind") if isinstance(document, dict) else None
    return (
        isinstance(document, dict)
        and "version" in document
        and "status" in document
        and not (isinstance(kind, str) and kind in NOT_RESULTS)
    )


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def parse_envelope(document: Any, source: str) -> StageResult:
    """The envelope of one result document, after every field its kind's readers use is checked."""
    if not isinstance(document, dict):
        raise InputError("expected a JSON object (a stage result)", file=source, hint=RESULT_HINT)
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version != RESULT_VERSION:
        raise InputError(
            f"unsupported result version {_shown(version)}", file=source,
            hint="this xcompat reads version 1 results; use the same xcompat version for every stage",
        )
    kind = document.get("kind")
    if not isinstance(kind, str) or not kind:
        raise InputError(f'$.kind: "kind" must be a non-empty string, got {_shown(kind)}', file=source,
                         hint=RESULT_HINT)
    if not KIND_PATTERN.fullmatch(kind):
        raise InputError(f"$.kind: {_shown(kind)} is not a result kind (lower-case letters, digits, - and _)",
                         file=source, hint=RESULT_HINT)
    cell_id = document.get("cell_id")
    if cell_id is not None and (not isinstance(cell_id, str) or not cell_id):
        raise InputError('$.cell_id: "cell_id" must be a string or null (and not empty), got '
                         f"{_shown(cell_id)}", file=source, hint=RESULT_HINT)
    problem = cell_id_problem(cell_id) if cell_id is not None else None
    if problem:
        raise InputError(f"$.cell_id: {problem}", file=source, hint=RESULT_HINT)
    status = document.get("status")
    if not isinstance(status, str) or status not in STAGE_STATUSES:
        what = "is not one of" if isinstance(status, str) else '"status" must be a string, one of'
        raise InputError(f"$.status: {_shown(status)} {what} {', '.join(STAGE_STATUSES)}", file=source,
                         hint=RESULT_HINT)
    summary = document.get("summary", "")
    if not isinstance(summary, str):
        raise InputError(f"$.summary: expected a string, got {_shown(summary)}", file=source, hint=RESULT_HINT)
    summary = " ".join(summary.split())
    result = StageResult(kind=kind, cell_id=cell_id, status=status, summary=summary, source=source, data=document)
    from xcompat.results.stages import check_fields, status_of_items

    try:
        check_fields(result)
    except InputError as err:
        raise InputError(err.message, file=source, hint=err.hint or RESULT_HINT) from None
    decided = status_of_items(kind, document)
    if decided is not None and severity(decided[0]) > severity(status):
        # The items decide: a result whose status says more than its own tests or kernels do
        # (a stage's bug, or a bundle edited by hand) is never greener than they are.
        found, items = decided
        summary = f"its status says {status}, but its {items} say {found}" + (f"; {summary}" if summary else "")
        result = replace(result, status=found, summary=summary)
    return result

