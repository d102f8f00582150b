"""The contract stages in Markdown: one table row per result, its findings folded beneath."""

from __future__ import annotations

from xcompat.report.budget import Section
from xcompat.report.contracts import detail_lines, verdict_words, where
from xcompat.report.markdown.blocks import TABLE_ROWS, code, folded_stub, inline, md_table, status_label
from xcompat.report.model import Report


def contracts_section(report: Report) -> Section:
    entries = report.contracts
    if not entries:
        return Section(key="contracts", priority=5, renditions=("",))
    rows = [[inline(e.label), code(e.cell_id) if e.cell_id else "the project", status_label(e.status),
             inline(verdict_words(e)), inline(e.summary)] for e in entries[:TABLE_ROWS]]
    parts = ["### Contracts\n\n" + md_table(["Check", "Cell", "Status", "Judged", "Summary"], rows)]
    for e in entries:
        lines = detail_lines(e)
        if lines:
            body = "\n".join(f"- {inline(line)}" for line in lines)
            parts.append(f"<details><summary>{inline(e.label)} — {inline(where(e))}: {len(e.findings)} "
                         f"finding(s)</summary>\n\n{body}\n\n</details>")
    findings = sum(len(e.findings) for e in entries)
    return Section(key="contracts", priority=5, renditions=(
        "\n\n".join(parts), "\n\n".join(parts[:1]), folded_stub("Contracts", f"{findings} finding(s)", report)))
