"""The lead of the Markdown report: the verdict, every count said once, what broke with a
"To fix" line each (worst first), the dim line of what does not gate, and the link to the
full report."""

from __future__ import annotations

from xcompat.report import display
from xcompat.report.budget import Section
from xcompat.report.markdown.blocks import inline, rich
from xcompat.report.model import STATUS_SYMBOL, Report
from xcompat.report.triage import Problem, optional_missing_line, triage

CONCLUSION_SYMBOL = {"success": "✅", "failure": "❌", "neutral": "⚪"}
MAX_PROBLEMS_LISTED = 10


# -- the lead ------------------------------------------------------------------------------
def _counts_line(report: Report) -> str:
    """Every count, said once: cells by status (optional ones apart), tests, ABI, coverage."""
    parts = []
    if report.cells:
        req = [c for c in report.cells if c.required]
        opt = [c for c in report.cells if not c.required]
        tally = []
        for status in ("passed", "failed", "crashed", "fallback", "skipped", "missing"):
            n_req = sum(1 for c in req if c.status == status)
            n_opt = sum(1 for c in opt if c.status == status)
            if n_req or n_opt:
                extra = f" ({n_opt} optional)" if n_opt and n_req else (" optional" if n_opt else "")
                tally.append(f"{STATUS_SYMBOL[status]} {n_req + n_opt}{extra} {status}")
        parts.append(f"{len(report.cells)} cell{'s' if len(report.cells) != 1 else ''}: " + " · ".join(tally))
    parts += display.outcome_parts(report)
    return " — ".join(parts)


def _verdict(report: Report, gating: list[Problem]) -> str:
    return display.verdict_text(report, len(gating))


def _problem_md(i: int, p: Problem) -> str:
    line = f"{i}. {STATUS_SYMBOL.get(p.status, '⚠️')} {rich(p.title)}"
    if p.fix:
        line += f"  \n   **To fix:** {rich(p.fix)}"
    return line


def header_section(report: Report, marker: str = "") -> Section:
    problems = triage(report)
    gating = [p for p in problems if p.gating]
    quiet = [p for p in problems if not p.gating]
    top = [marker] if marker else []
    top.append(
        f"## {CONCLUSION_SYMBOL[report.conclusion]} {inline(report.title)}: {_verdict(report, gating)}"
    )
    counts = _counts_line(report)
    lines = list(top)
    if counts:
        lines.append(counts)
    if gating:
        lines.append("")
        lines += [_problem_md(i, p) for i, p in enumerate(gating[:MAX_PROBLEMS_LISTED], 1)]
        if len(gating) > MAX_PROBLEMS_LISTED:
            lines.append(
                f"{MAX_PROBLEMS_LISTED + 1}. … and {len(gating) - MAX_PROBLEMS_LISTED} more; see Failures below"
            )
    elif report.problems:  # a problem triage has no words for: say it as the aggregate did
        lines.append("")
        lines += [f"- {inline(p)}" for p in report.problems[:MAX_PROBLEMS_LISTED]]
    dim = []
    optional = optional_missing_line(report)
    if optional:
        dim.append(rich(optional))
    for p in quiet[:MAX_PROBLEMS_LISTED]:
        prefix = "optional: " if p.status != "warning" else "warning: "
        dim.append(prefix + rich(p.title) + (f". To fix: {rich(p.fix)}" if p.fix else ""))
    if dim:
        lines.append("")
        lines += [f"<sub>{d}</sub>  " for d in dim]
    if report.artifact_url:
        lines += ["", f"[Full report]({report.artifact_url})"]
    short = list(top)
    if counts:
        short.append(counts)
    if gating:
        short.append(f"First: {rich(gating[0].title)}")
    if report.artifact_url:
        short.append(f"[Full report]({report.artifact_url})")
    return Section(key="header", priority=0, renditions=("\n".join(lines), "\n".join(short)))
