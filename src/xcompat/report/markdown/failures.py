"""The failures of the Markdown report: the first ones with their log tails (user frames first),
then a table of the next ones; how many get their tails is the budget's choice."""

from __future__ import annotations

from xcompat.neutralise import MESSAGE_CHARS, html_inline
from xcompat.report.budget import Section
from xcompat.report.markdown.blocks import (
    TABLE_ROWS,
    code,
    fenced,
    folded_stub,
    hcode,
    inline,
    md_table,
    more_line,
    status_label,
)
from xcompat.report.model import STATUS_SYMBOL, Failure, Report
from xcompat.report.tails import user_frames_first

FULL_FAILURES = 30  # failures shown with their log tails where room is tight
MANY_FULL_FAILURES = 500  # ... and where it is not


# -- failures ----------------------------------------------------------------------------------
def shown_failures(report: Report) -> list[Failure]:
    """Failures with something to show: not missing cells (the lead says those) nor the ABI stage (its own section)."""
    return [
        f for f in report.failures if f.kind != "cell" and not (f.kind == "abi" and report.abi is not None)
    ]


def _failure_title(f: Failure) -> str:
    """HTML (it goes inside ``<summary>``, where Markdown is still parsed inline): every part from
    the result is one defused line."""
    where = f" in {hcode(f.cell_id)}" if f.cell_id else ""
    loc = f" ({html_inline(f.file)}{':' + str(f.line) if f.line else ''})" if f.file else ""
    opt = " (optional cell)" if not f.required else ""
    return f"{STATUS_SYMBOL.get(f.outcome, '❌')} <b>{html_inline(f.outcome)}</b> {hcode(f.name)}{where}{loc}{opt}"


def _failure_full(f: Failure) -> str:
    lines = [f"<details><summary>{_failure_title(f)}</summary>", ""]
    if f.message:
        lines.append(inline(f.message, MESSAGE_CHARS))
        lines.append("")
    if f.log_tail:
        lines.append(fenced(user_frames_first(f.log_tail)))
        lines.append("")
    lines.append("</details>")
    return "\n".join(lines)


def failures_section(report: Report) -> Section:
    failures = shown_failures(report)
    if not failures:
        return Section(key="failures", priority=2, renditions=("",))
    title = f"### Failures ({len(failures)})"
    header = ["Outcome", "Test / stage", "Cell", "Message"]
    rows = [
        [
            status_label(f.outcome),
            code(f.name),
            code(f.cell_id) if f.cell_id else "—",
            inline(f.message[:300]),
        ]
        for f in failures
    ]

    def with_tails(n: int) -> str:
        """The first ``n`` failures with their log tails, then a table of the next ones."""
        parts = [title]
        for f in failures[:n]:
            parts += ["", _failure_full(f)]
        rest = rows[n : n + TABLE_ROWS]
        if rest:
            parts += ["", md_table(header, rest)]
        if len(failures) > n + TABLE_ROWS:
            parts += ["", more_line(len(failures) - n - TABLE_ROWS, "failures", report)]
        return "\n".join(parts)

    def table_only(n: int) -> str:
        parts = [title, "", md_table(header, rows[:n])]
        if len(failures) > n:
            parts += ["", more_line(len(failures) - n, "failures", report)]
        return "\n".join(parts)

    # Larger counts fit the large channels (job summary, GitLab note); the budget picks.
    counts = [n for n in (MANY_FULL_FAILURES, 150) if len(failures) > n // 3] + [FULL_FAILURES, 5]
    renditions = [with_tails(n) for n in counts] + [table_only(TABLE_ROWS), table_only(20)]
    renditions.append(folded_stub("Failures", f"{len(failures)}", report))
    return Section(key="failures", priority=2, renditions=tuple(renditions))
