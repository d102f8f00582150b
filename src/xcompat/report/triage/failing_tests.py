"""Problems of failing tests: one line per test and outcome over the cells it failed in, with
where it broke (the crashing frame, the failing assertion) and how to rerun it alone."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from xcompat.report.model import Failure, Report
from xcompat.report.tails import failing_assertion, first_user_frame, frames, project_root
from xcompat.report.triage.problem import Part, Problem, bold, cells_phrase, code, first_line, rich


def rerun_command(report: Report, name: str) -> tuple[Part, ...]:
    """The words and command that rerun one test alone: the run's own command (in the project's
    folder, against the wheel it installed) when the report came from one, else ``xcompat test``
    with the cell's wheel installed."""
    quoted = shlex.quote(name)
    if report.rerun and "{test}" in report.rerun:
        return ("rerun it alone with ", code(report.rerun.replace("{test}", quoted, 1)))
    return ("with the cell's wheel installed, rerun it alone with ", code(f"xcompat test --isolate test {quoted}"))


def _not_run_phrase(report: Report, name: str, cells: Sequence[str]) -> str:
    """For a file that could not be collected: how many collected tests never ran because of it."""
    if "::" in name:
        return ""
    count = sum(c.tests_not_run for c in report.cells if c.id in cells) if cells else \
        sum(c.tests_not_run for c in report.cells)
    if not count:
        return ""
    return (f"; pytest stops at a file it cannot collect: {count} collected test{'s' if count != 1 else ''} "
            "did not run")


def failing_test_problem(outcome: str, name: str, group: Sequence[Failure], report: Report) -> Problem:
    first = group[0]
    cells = tuple(f.cell_id for f in group if f.cell_id)
    gating = any(f.required for f in group)
    title = rich(code(name), bold(f" {outcome}"), *cells_phrase(cells))
    tail = first.log_tail
    if outcome == "crashed":
        signal = first_line(first.message).removeprefix("killed by ")
        if signal and signal != "crashed":
            title = rich(code(name), bold(f" crashed ({signal})"), *cells_phrase(cells))
        found = frames(tail)
        user = first_user_frame(tail)
        if user is not None:
            root = next((r for r in (project_root(fr, first.file) for fr in found) if r), "")
            where = user.where(root)
            index = found.index(user)
            callee = found[index - 1].func if index > 0 else ""
            fix = rich(
                "the crash is in ",
                code(where),
                *((" calling ", code(callee)) if callee else ()),
                "; ",
                *rerun_command(report, name),
            )
        else:
            fix = rich(*rerun_command(report, name), "; the trace is under Failures")
    elif outcome == "timeout":
        fix = rich(
            "it ran past the per-test timeout: the stack at the timeout is under Failures; fix the hang or raise ",
            code("tests.timeout"),
            " in the matrix; ",
            *rerun_command(report, name),
        )
    elif outcome == "leaked":
        fix = rich(
            "memory grew over repeated calls: ",
            first_line(first.message) or "see the leak report under Failures",
        )
    else:
        assertion = failing_assertion(tail)
        message = first_line(first.message)
        if assertion is not None and assertion.source:
            where = assertion.location or (
                f"{first.file}:{first.line}" if first.file and first.line else first.file or ""
            )
            fix = rich(
                "make ",
                code(assertion.source),
                " hold",
                *((" (", code(where), ")") if where else ()),
                *((": " + (assertion.error or message),) if (assertion.error or message) else ()),
            )
        elif message and message != outcome:
            where = f"{first.file}:{first.line}" if first.file and first.line else (first.file or "")
            fix = rich(message, *((" (", code(where), ")") if where else ()), _not_run_phrase(report, name, cells))
        else:
            fix = rich("see its log tail under Failures")
        fix = rich(*fix, "; ", *rerun_command(report, name))
    return Problem(
        status=outcome if outcome in ("crashed", "timeout", "leaked", "error") else "failed",
        title=title,
        fix=fix,
        cells=cells,
        gating=gating,
    )
