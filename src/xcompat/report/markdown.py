"""Markdown rendering (GitHub-flavoured; also what GitLab renders in MR notes).

The document is a list of ``Section``s, each with renditions from full to stub, so the
same code serves the 65,535-character check run, the 65,536-character PR comment, the
1 MiB job summary and the 1,000,000-character GitLab note: ``budget.fit_sections`` picks
the renditions. Text coming from results (test names, log tails, symbols) is escaped:
it cannot break a table, open HTML, or mention people.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from xcompat.report.budget import Section
from xcompat.report.model import (
    STATUS_SYMBOL,
    AbiFinding,
    CellReport,
    Failure,
    FileCoverage,
    Report,
)

CONCLUSION_SYMBOL = {"success": "✅", "failure": "❌", "neutral": "⚪"}
MAX_PROBLEMS_LISTED = 20
FULL_FAILURES = 30  # failures shown with their log tails where room is tight
MANY_FULL_FAILURES = 500  # ... and where it is not
TABLE_ROWS = 200  # rows of a table before the rest is folded into a count


def inline(text: object) -> str:
    """Escape text for a Markdown table cell or a line of prose."""
    s = " ".join(str(text).split())
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = s.replace("|", "\\|").replace("`", "\\`").replace("*", "\\*").replace("_", "\\_")
    s = s.replace("[", "\\[").replace("]", "\\]")
    # A word joiner after "@" keeps "@name" from notifying anyone.
    return s.replace("@", "@\u2060")


def code(text: object) -> str:
    """Inline code span that survives backticks in the text."""
    s = " ".join(str(text).split())
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    # GFM splits table cells on "|" even inside code spans; "\\|" is read as a literal pipe there.
    s = s.replace("|", "\\|")
    return f"{fence}{pad}{s}{pad}{fence}" if s else ""


def fenced(text: str, lang: str = "text") -> str:
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}"


def status_label(status: str) -> str:
    return f"{STATUS_SYMBOL.get(status, '❔')} {status}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _more(n: int, what: str, report: Report) -> str:
    link = f" in the [full report]({report.artifact_url})" if report.artifact_url else " in the full report artifact"
    return f"_… and {n} more {what}{link}._"


def folded_stub(title: str, detail: str, report: Report) -> str:
    link = (
        f"See the [full report]({report.artifact_url})."
        if report.artifact_url
        else "See the full report in this run's artifacts."
    )
    return f"<details><summary>{title}: {detail}</summary>\n\nFolded to fit this channel's size limit. {link}\n\n</details>"


def python_key(version: str) -> tuple[int, ...]:
    nums = [int(p) for p in re.findall(r"\d+", version)]
    return tuple(nums) + ((1,) if version.endswith("t") else (0,))


# -- sections ------------------------------------------------------------------------------
def header_section(report: Report, marker: str = "") -> Section:
    lines = []
    if marker:
        lines.append(marker)
    lines.append(f"## {CONCLUSION_SYMBOL[report.conclusion]} {inline(report.title)}: {inline(report.headline)}")
    counts = report.counts()
    if report.cells:
        lines.append(" · ".join(f"{STATUS_SYMBOL[s]} {n} {s}" for s, n in counts.items() if n))
    if report.problems:
        lines.append("")
        lines.append("**Why this is not green:**")
        for problem in report.problems[:MAX_PROBLEMS_LISTED]:
            lines.append(f"- {inline(problem)}")
        if len(report.problems) > MAX_PROBLEMS_LISTED:
            lines.append(f"- … and {len(report.problems) - MAX_PROBLEMS_LISTED} more")
    if report.artifact_url:
        lines.append("")
        lines.append(f"[Full report]({report.artifact_url})")
    short = lines[: (2 if marker else 1) + (1 if report.cells else 0)]
    if report.problems:
        short.append(f"{len(report.problems)} problem(s) keep this report from being green.")
    if report.artifact_url:
        short.append(f"[Full report]({report.artifact_url})")
    return Section(key="header", priority=0, renditions=("\n".join(lines), "\n".join(short)))


def _grid(report: Report, compact: bool) -> str:
    pythons = sorted({c.python for c in report.cells}, key=python_key)
    devices = sorted({c.device for c in report.cells})
    index: dict[tuple[str, str], list[CellReport]] = {}
    for c in report.cells:
        index.setdefault((c.python, c.device), []).append(c)
    rows = []
    for py in pythons:
        row = [f"**{inline(py)}**"]
        for dev in devices:
            cells = index.get((py, dev), [])
            if not cells:
                row.append("·")
            elif compact:
                tally: dict[str, int] = {}
                for c in cells:
                    tally[c.status] = tally.get(c.status, 0) + 1
                row.append(" ".join(f"{STATUS_SYMBOL[s]}{n}" for s, n in tally.items()))
            else:
                parts = []
                for c in cells:
                    label = inline(c.framework_label) if c.framework_label else ""
                    opt = " (optional)" if not c.required else ""
                    parts.append(f"{STATUS_SYMBOL[c.status]} {c.status}{(' ' + label) if label else ''}{opt}")
                row.append("<br>".join(parts))
        rows.append(row)
    legend = " · ".join(f"{sym} {name}" for name, sym in STATUS_SYMBOL.items()) + " · `·` not in the matrix"
    return _table(["Python"] + [inline(d) for d in devices], rows) + "\n\n" + legend


def grid_section(report: Report) -> Section:
    if not report.cells:
        return Section(key="grid", priority=1, renditions=("",))
    title = "### Matrix"
    return Section(
        key="grid",
        priority=1,
        renditions=(
            f"{title}\n\n{_grid(report, compact=False)}",
            f"{title}\n\n{_grid(report, compact=True)}",
            folded_stub("Matrix", f"{len(report.cells)} cells", report),
        ),
    )


def _failure_title(f: Failure) -> str:
    """HTML (it goes inside ``<summary>``, where Markdown is not rendered)."""
    esc = html.escape
    where = f" in <code>{esc(f.cell_id)}</code>" if f.cell_id else ""
    loc = f" ({esc(f.file)}{':' + str(f.line) if f.line else ''})" if f.file else ""
    opt = " (optional cell)" if not f.required else ""
    name = esc(" ".join(f.name.split())).replace("@", "@\u2060")
    return f"{STATUS_SYMBOL.get(f.outcome, '❌')} <b>{esc(f.outcome)}</b> <code>{name}</code>{where}{loc}{opt}"


def _failure_full(f: Failure) -> str:
    lines = [f"<details><summary>{_failure_title(f)}</summary>", ""]
    if f.message:
        lines.append(inline(f.message))
        lines.append("")
    if f.log_tail:
        lines.append(fenced(f.log_tail))
        lines.append("")
    lines.append("</details>")
    return "\n".join(lines)


def failures_section(report: Report) -> Section:
    failures = report.failures
    if not failures:
        return Section(key="failures", priority=2, renditions=("",))
    title = f"### Failures ({len(failures)})"
    header = ["Outcome", "Test / stage", "Cell", "Message"]
    rows = [
        [status_label(f.outcome), code(f.name), code(f.cell_id) if f.cell_id else "—", inline(f.message[:300])]
        for f in failures
    ]

    def with_tails(n: int) -> str:
        """The first ``n`` failures with their log tails, then a table of the next ones."""
        parts = [title]
        for f in failures[:n]:
            parts += ["", _failure_full(f)]
        rest = rows[n : n + TABLE_ROWS]
        if rest:
            parts += ["", _table(header, rest)]
        if len(failures) > n + TABLE_ROWS:
            parts += ["", _more(len(failures) - n - TABLE_ROWS, "failures", report)]
        return "\n".join(parts)

    def table_only(n: int) -> str:
        parts = [title, "", _table(header, rows[:n])]
        if len(failures) > n:
            parts += ["", _more(len(failures) - n, "failures", report)]
        return "\n".join(parts)

    # Larger counts fit the large channels (job summary, GitLab note); the budget picks.
    counts = [n for n in (MANY_FULL_FAILURES, 150) if len(failures) > n // 3] + [FULL_FAILURES, 5]
    renditions = [with_tails(n) for n in counts] + [table_only(TABLE_ROWS), table_only(20)]
    renditions.append(folded_stub("Failures", f"{len(failures)}", report))
    return Section(key="failures", priority=2, renditions=tuple(renditions))


def _abi_rows(findings: Sequence[AbiFinding]) -> list[list[str]]:
    return [
        [
            inline(f.required_bump),
            inline(f.kind),
            inline(f.library) or "—",
            code(f.display_symbol) or "—",
            inline(f.message)[:200] or "—",
        ]
        for f in findings
    ]


def abi_section(report: Report) -> Section:
    abi = report.abi
    if abi is None:
        return Section(key="abi", priority=3, renditions=("",))
    by_bump: dict[str, int] = {}
    for f in abi.findings:
        by_bump[f.required_bump] = by_bump.get(f.required_bump, 0) + 1
    tally = ", ".join(f"{n} {b}" for b, n in by_bump.items()) or "no findings"
    head = f"### ABI: required bump **{abi.required_bump}** ({status_label(abi.status)})\n\n{tally}"
    if abi.summary:
        head += f". {inline(abi.summary)}"
    if not abi.findings:
        return Section(key="abi", priority=3, renditions=(head,))
    header = ["Bump", "Kind", "Library", "Symbol", "Detail"]
    rows = _abi_rows(abi.findings)
    full = head + "\n\n" + _table(header, rows[:TABLE_ROWS])
    if len(rows) > TABLE_ROWS:
        full += "\n\n" + _more(len(rows) - TABLE_ROWS, "findings", report)
    short = head + "\n\n" + _table(header, rows[:20])
    if len(rows) > 20:
        short += "\n\n" + _more(len(rows) - 20, "findings", report)
    return Section(key="abi", priority=3, renditions=(full, short, head))


def _ranges(f: FileCoverage, limit: int = 12) -> str:
    parts = [f"{a}" if a == b else f"{a}-{b}" for a, b in f.uncovered[:limit]]
    if len(f.uncovered) > limit:
        parts.append(f"… +{len(f.uncovered) - limit}")
    return ", ".join(parts) or "—"


def _pct(p: float | None) -> str:
    return "—" if p is None else f"{p:.1f}%"


def coverage_section(report: Report) -> Section:
    cov = report.coverage
    if cov is None:
        return Section(key="coverage", priority=4, renditions=("",))
    lines = [f"### Coverage: {_pct(cov.percent)}"]
    facts = []
    if cov.languages:
        facts.append(", ".join(f"{inline(name)} {_pct(p)}" for name, p in cov.languages))
    if cov.diff_percent is not None:
        thr = f" (threshold {_pct(cov.diff_threshold)})" if cov.diff_threshold is not None else ""
        facts.append(f"diff coverage **{_pct(cov.diff_percent)}**{thr}")
    if facts:
        lines += ["", "; ".join(facts)]
    head = "\n".join(lines)
    parts = [head]
    diff_rows = [[code(f.path), _pct(f.percent), inline(_ranges(f))] for f in cov.diff_files if f.uncovered]
    if diff_rows:
        parts.append("Uncovered changed lines:\n\n" + _table(["File", "Diff coverage", "Uncovered lines"], diff_rows[:TABLE_ROWS]))
        if len(diff_rows) > TABLE_ROWS:
            parts.append(_more(len(diff_rows) - TABLE_ROWS, "files", report))
    with_files = list(parts)
    if cov.files:
        worst = sorted(cov.files, key=lambda f: (f.percent if f.percent is not None else 101.0, f.path))
        rows = [[code(f.path), _pct(f.percent), inline(_ranges(f, 6))] for f in worst[:TABLE_ROWS]]
        table = _table(["File", "Coverage", "Uncovered lines"], rows)
        more = f"\n\n{_more(len(worst) - TABLE_ROWS, 'files', report)}" if len(worst) > TABLE_ROWS else ""
        with_files.append(f"<details><summary>Per-file coverage ({len(cov.files)} files)</summary>\n\n{table}{more}\n\n</details>")
    renditions = ["\n\n".join(with_files)]
    if len(with_files) != len(parts):
        renditions.append("\n\n".join(parts))
    if len(parts) > 1:
        renditions.append(head)
    return Section(key="coverage", priority=4, renditions=tuple(renditions))


def cells_section(report: Report) -> Section:
    if not report.cells:
        return Section(key="cells", priority=5, renditions=("",))
    rows = []
    for c in report.cells:
        tests = f"{c.tests_passed}/{c.tests_passed + c.tests_failed}" if (c.tests_passed or c.tests_failed) else "—"
        stages = ", ".join(f"{s.kind} {STATUS_SYMBOL.get(s.status, '❔')}" for s in c.stages) or "—"
        rows.append(
            [
                code(c.id),
                status_label(c.status) + ("" if c.required else " (optional)"),
                inline(stages),
                tests,
                inline(c.reason)[:300] or "—",
            ]
        )
    table = _table(["Cell", "Status", "Stages", "Tests passed", "Reason"], rows[:TABLE_ROWS])
    if len(rows) > TABLE_ROWS:
        table += "\n\n" + _more(len(rows) - TABLE_ROWS, "cells", report)
    body = f"<details><summary>All cells ({len(report.cells)})</summary>\n\n{table}\n\n</details>"
    return Section(key="cells", priority=5, renditions=(body, folded_stub("All cells", f"{len(rows)}", report)))


def other_section(report: Report) -> Section:
    lines = []
    if report.other:
        rows = [[inline(r.kind), code(r.cell_id) if r.cell_id else "—", status_label(r.status), inline(r.summary)[:300]] for r in report.other]
        lines.append("### Other results\n\n" + _table(["Kind", "Cell", "Status", "Summary"], rows[:TABLE_ROWS]))
    if report.warnings:
        lines.append("**Warnings:**\n\n" + "\n".join(f"- {inline(w)}" for w in report.warnings[:50]))
        if len(report.warnings) > 50:
            lines.append(f"- … and {len(report.warnings) - 50} more")
    if report.notes:
        lines.append("\n".join(f"_{inline(n)}_" for n in report.notes[:20]))
    if not lines:
        return Section(key="other", priority=6, renditions=("",))
    return Section(key="other", priority=6, renditions=("\n\n".join(lines), folded_stub("Other results and warnings", str(len(report.other) + len(report.warnings)), report)))


def sections(report: Report, *, marker: str = "", include: Sequence[str] | None = None) -> list[Section]:
    all_sections = [
        header_section(report, marker),
        grid_section(report),
        failures_section(report),
        abi_section(report),
        coverage_section(report),
        cells_section(report),
        other_section(report),
    ]
    if include is not None:
        all_sections = [s for s in all_sections if s.key in include]
    return all_sections
