"""The coverage section of the Markdown report: totals by language, diff coverage against its
threshold, uncovered changed lines worst first, and the per-file table folded."""

from __future__ import annotations

from xcompat.report import display
from xcompat.report.budget import Section
from xcompat.report.markdown.blocks import TABLE_ROWS, code, inline, md_table, more_line, pct
from xcompat.report.model import Report


# -- coverage ------------------------------------------------------------------------------------
def coverage_section(report: Report) -> Section:
    cov = report.coverage
    if cov is None:
        return Section(key="coverage", priority=4, renditions=("",))
    lines = [f"### Coverage: {pct(cov.percent)}"]
    facts = []
    if cov.languages:
        facts.append(
            ", ".join(f"{inline(display.language_name(name))} {pct(p)}" for name, p in cov.languages)
        )
    if cov.diff_percent is not None:
        if cov.diff_threshold is not None:
            ok = cov.diff_percent >= cov.diff_threshold
            facts.append(
                f"diff coverage **{pct(cov.diff_percent)}** {'✅' if ok else '❌'} (threshold {pct(cov.diff_threshold)})"
            )
        else:
            facts.append(f"diff coverage **{pct(cov.diff_percent)}** (no threshold)")
    elif cov.diff_threshold is not None:
        facts.append(f"diff coverage not measured (threshold {pct(cov.diff_threshold)})")
    if facts:
        lines += ["", "; ".join(facts)]
    head = "\n".join(lines)
    parts = [head]
    changed = sorted(
        (f for f in cov.diff_files if f.uncovered),
        key=lambda f: (f.percent if f.percent is not None else 0.0, f.path),
    )
    diff_rows = [[code(f.path), pct(f.percent), inline(display.ranges_text(f))] for f in changed]
    if diff_rows:
        parts.append(
            "Uncovered changed lines, worst first:\n\n"
            + md_table(["File", "Diff coverage", "Uncovered lines"], diff_rows[:TABLE_ROWS])
        )
        if len(diff_rows) > TABLE_ROWS:
            parts.append(more_line(len(diff_rows) - TABLE_ROWS, "files", report))
    with_files = list(parts)
    if cov.files:
        worst = display.worst_files(cov.files)
        rows = [
            [code(f.path), pct(f.percent), inline(display.ranges_text(f, 6)) or "—"]
            for f in worst[:TABLE_ROWS]
        ]
        table = md_table(["File", "Coverage", "Uncovered lines"], rows)
        more = f"\n\n{more_line(len(worst) - TABLE_ROWS, 'files', report)}" if len(worst) > TABLE_ROWS else ""
        with_files.append(
            f"<details><summary>Per-file coverage, worst first ({len(cov.files)} files)</summary>\n\n{table}{more}\n\n</details>"
        )
    renditions = ["\n\n".join(with_files)]
    if len(with_files) != len(parts):
        renditions.append("\n\n".join(parts))
    if len(parts) > 1:
        renditions.append(head)
    return Section(key="coverage", priority=4, renditions=tuple(renditions))
