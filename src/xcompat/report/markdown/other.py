"""Results of other kinds, warnings the lead does not say, and notes."""

from __future__ import annotations

from xcompat.report.budget import Section
from xcompat.report.markdown.blocks import TABLE_ROWS, code, folded_stub, inline, md_table, status_label
from xcompat.report.model import Report


def other_warnings(report: Report) -> list[str]:
    """Warnings the lead does not already say (optional cells and diff coverage are there)."""
    return [w for w in report.warnings if not w.startswith(("optional cell ", "diff coverage "))]


def other_section(report: Report) -> Section:
    lines = []
    if report.other:
        rows = [
            [
                inline(r.kind),
                code(r.cell_id) if r.cell_id else "—",
                status_label(r.status),
                inline(r.summary)[:300],
            ]
            for r in report.other
        ]
        lines.append(
            "### Other results\n\n" + md_table(["Kind", "Cell", "Status", "Summary"], rows[:TABLE_ROWS])
        )
    warnings = other_warnings(report)
    if warnings:
        lines.append("**Warnings:**\n\n" + "\n".join(f"- {inline(w)}" for w in warnings[:50]))
        if len(warnings) > 50:
            lines.append(f"- … and {len(warnings) - 50} more")
    if report.notes:
        lines.append("\n".join(f"_{inline(n)}_" for n in report.notes[:20]))
    if not lines:
        return Section(key="other", priority=6, renditions=("",))
    return Section(
        key="other",
        priority=6,
        renditions=(
            "\n\n".join(lines),
            folded_stub("Other results and warnings", str(len(report.other) + len(warnings)), report),
        ),
    )
