"""Every cell of the Markdown report (folded), and a local run's cells this machine cannot run."""

from __future__ import annotations

from xcompat.report import display
from xcompat.report.budget import Section
from xcompat.report.markdown.blocks import (
    TABLE_ROWS,
    code,
    folded_stub,
    inline,
    md_table,
    more_line,
    status_label,
)
from xcompat.report.model import STATUS_SYMBOL, Report


def cells_section(report: Report) -> Section:
    if not report.cells:
        return Section(key="cells", priority=5, renditions=("",))
    rows = []
    for c in report.cells:
        stages = ", ".join(f"{s.kind} {STATUS_SYMBOL.get(s.status, '❔')}" for s in c.stages) or "—"
        tests = (
            f"{c.tests_passed}/{c.tests_passed + c.tests_failed}"
            if (c.tests_passed or c.tests_failed)
            else "—"
        )
        if c.tests_not_run:
            tests = f"{tests}, {c.tests_not_run} not run" if tests != "—" else f"{c.tests_not_run} not run"
        # The reason only where the stages do not already say it (missing, skipped, fallback).
        reason = inline(c.reason)[:300] if c.status in ("missing", "skipped", "fallback") else ""
        note = display.tested_note(c)
        rows.append(
            [
                code(c.id),
                status_label(c.status) + ("" if c.required else " (optional)"),
                inline(stages),
                tests,
                "; ".join(x for x in (reason, inline(note)) if x) or "—",
            ]
        )
    table = md_table(["Cell", "Status", "Stages", "Tests passed", "Note"], rows[:TABLE_ROWS])
    if len(rows) > TABLE_ROWS:
        table += "\n\n" + more_line(len(rows) - TABLE_ROWS, "cells", report)
    elsewhere = not_run_here_lines(report)
    if elsewhere:
        table += "\n\n" + elsewhere
    body = f"<details><summary>All cells ({len(report.cells)})</summary>\n\n{table}\n\n</details>"
    return Section(
        key="cells", priority=5, renditions=(body, folded_stub("All cells", f"{len(rows)}", report))
    )


def not_run_here_lines(report: Report) -> str:
    """A local run's cells this machine cannot run: named, with why, so the verdict is not read
    as the whole matrix's."""
    cells = report.not_run_here
    if not cells:
        return ""
    required = sum(1 for c in cells if c.required)
    head = (f"**Not run here ({len(cells)}, {required} required):** this machine cannot run them; "
            "CI runs each on its own runner.")
    items = [f"- {code(c.id)}{'' if c.required else ' (optional)'}: {inline(c.why)}" for c in cells[:TABLE_ROWS]]
    if len(cells) > TABLE_ROWS:
        items.append(f"- … and {len(cells) - TABLE_ROWS} more")
    return head + "\n\n" + "\n".join(items)
