"""Problems of failed stages other than tests: ``xcompat run``'s own stages, coverage, a named
stage item (a kernel), or a stage as a whole; one line per stage, outcome and cause."""

from __future__ import annotations

import re
from collections.abc import Sequence

from xcompat.report.model import Failure, Report
from xcompat.report.triage.coverage import coverage_fix
from xcompat.report.triage.problem import Problem, Rich, bold, cells_phrase, code, first_line, rich

# "To fix" for each of ``xcompat run``'s own stages when its command failed: what the failure
# means and the real fix, not "run it again".
PIPELINE_STAGE_FIX: dict[str, str] = {
    "verify": ("the signed matrix did not verify against the trust list (the message says which check "
               "failed): review the change, then re-sign it with `xcompat matrix sign` using a key listed "
               "in allowed_signers at the trust ref, or restore the signed matrix"),
    "plan": "the matrix could not be planned for this machine: check its Pythons, platforms and backends "
            "against this runner (`xcompat matrix plan .xcompat/matrix.yml`)",
    "build": "the project's build failed: the message is the build's own error; reproduce it with "
             "`xcompat build PROJECT --backend native` and read logs/build.log",
    "baseline": "the last release could not be built or read: pass --baseline with a project folder, "
                "wheel, sdist or ABI snapshot, or fix abi.baseline in the matrix",
    "probe": "the device probe failed: see logs/probe.log for the device and driver it found",
    "report": "the report could not be written: see logs/report.log",
}


def stage_problem(key: tuple[str, str, str], group: Sequence[Failure], report: Report) -> Problem:
    """One line for the failures of one stage kind, outcome and cause (``key``)."""
    kind, outcome, what = key
    cells = tuple(f.cell_id for f in group if f.cell_id)
    first = group[0]
    title: Rich
    fix: Rich
    if kind == "pipeline" and first.name in PIPELINE_STAGE_FIX:
        message = re.sub(r"^exit \d+: ", "", first_line(first.message, 400).removeprefix(f"{first.name}: "))
        title = rich(bold(f"{first.name} {outcome}"), *((": " + message,) if message else ()))
        # `...` in the table is code; the rest is prose.
        fix = rich(*((code(t) if i % 2 else t) for i, t in enumerate(PIPELINE_STAGE_FIX[first.name].split("`"))))
    elif kind == "coverage":
        title = rich(bold(f"coverage {outcome}"), *cells_phrase(cells), *((": " + what,) if what else ()))
        fix = coverage_fix(first.message, report)
    elif first.name != first.kind:
        title = rich(bold(f"{kind} "), code(first.name), bold(f" {outcome}"), *cells_phrase(cells))
        fix = rich(first_line(first.message) or "see its log tail under Failures")
    else:
        title = rich(bold(f"{kind} {outcome}"), *cells_phrase(cells), *((": " + what,) if what else ()))
        fix = rich(
            f"see the {kind} log tail under Failures"
            if first.log_tail
            else f"run the {kind} stage of that cell again and read its log"
        )
    return Problem(
        status="crashed" if outcome == "crashed" else "failed",
        title=title,
        fix=fix,
        cells=cells,
        gating=any(f.required for f in group),
    )
