"""Markdown rendering (GitHub-flavoured; also what GitLab renders in MR notes).

The report leads with what broke and what to do (``triage``): one numbered line per
problem, worst first, each with a "To fix" line; optional cells without a runner are one
dim line; the cell counts are said once. Then the grid, the failures with their tails,
the ABI changes grouped and folded, coverage, and every cell (folded).

The document is a list of ``Section``s, each with renditions from full to stub, so the
same code serves the 65,535-character check run, the 65,536-character PR comment, the
1 MiB job summary and the 1,000,000-character GitLab note: ``budget.fit_sections`` picks
the renditions. Text coming from results (test names, log tails, symbols) is escaped:
it cannot break a table, open HTML, or mention people.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from xcompat.neutralise import MESSAGE_CHARS, html_code, html_inline, markdown_code, markdown_text
from xcompat.report import display
from xcompat.report.budget import Section
from xcompat.report.display import python_key
from xcompat.report.model import STATUS_SYMBOL, CellReport, Failure, Report
from xcompat.report.tails import user_frames_first
from xcompat.report.triage import Problem, Rich, optional_missing_line, triage

CONCLUSION_SYMBOL = {"success": "✅", "failure": "❌", "neutral": "⚪"}
MAX_PROBLEMS_LISTED = 10
FULL_FAILURES = 30  # failures shown with their log tails where room is tight
MANY_FULL_FAILURES = 500  # ... and where it is not
TABLE_ROWS = 200  # rows of a table before the rest is folded into a count


# One neutralising layer for text from results (xcompat.neutralise); the short names are this
# module's vocabulary and are used by the forges' renderers too.
inline = markdown_text
code = markdown_code
hcode = html_code


def fenced(text: str, lang: str = "text") -> str:
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}"


def status_label(status: str) -> str:
    return f"{STATUS_SYMBOL.get(status, '❔')} {status}"


def rich(text: Rich) -> str:
    """Markdown for a triage text: prose escaped, code spans, bold; the spaces between parts kept."""
    out = []
    for style, part in text:
        lead = " " if part[:1].isspace() else ""
        trail = " " if part[-1:].isspace() else ""
        if style == "code":
            # A code span reads best in the raw file; text that could open HTML, mention
            # someone or close the span goes through escaped <code> instead.
            body = hcode(part) if any(ch in part for ch in "<>@`|&") else code(part)
        elif style == "b":
            body = f"**{inline(part)}**" if part.strip() else ""
        else:
            body = inline(part)
        out.append(f"{lead}{body}{trail}" if body else lead or trail)
    return "".join(out)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _more(n: int, what: str, report: Report) -> str:
    link = (
        f" in the [full report]({report.artifact_url})"
        if report.artifact_url
        else " in the full report artifact"
    )
    return f"_… and {n} more {what}{link}._"


def folded_stub(title: str, detail: str, report: Report) -> str:
    link = (
        f"See the [full report]({report.artifact_url})."
        if report.artifact_url
        else "See the full report in this run's artifacts."
    )
    return f"<details><summary>{title}: {detail}</summary>\n\nFolded to fit this channel's size limit. {link}\n\n</details>"


__all__ = ["code", "fenced", "inline", "python_key", "sections"]


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


# -- grid ------------------------------------------------------------------------------------
def _cell_md(cell: CellReport, compact: bool) -> str:
    sym = STATUS_SYMBOL[cell.status]
    if cell.status == "missing":
        text = f"{sym} no result"
    elif compact:
        text = f"{sym} {cell.status}"
    else:
        text = inline(display.stage_text(cell))
        if cell.status != "passed" and all(p.status != cell.status for p in display.stage_parts(cell)):
            text = f"{sym} {text}"
    note = display.tested_note(cell)
    if note and not compact:
        text += f"<br><sub>{inline(note)}</sub>"
    if not cell.required:
        text = f"<sub>{text} · optional</sub>" if not compact else f"<sub>{text}</sub>"
    return text


def _grid(report: Report, compact: bool) -> str:
    grid = display.build_grid(report.cells)
    fw_column = any(row.frameworks for row in grid.rows)
    header = ["Device"] + (["Frameworks"] if fw_column else []) + [inline(py) for py in grid.pythons]
    rows = []
    for row in grid.rows:
        out = [inline(row.device)] + ([inline(row.frameworks) or "—"] if fw_column else [])
        for py in grid.pythons:
            cell = row.cells.get(py)
            out.append(_cell_md(cell, compact) if cell else "·")
        rows.append(out)
    caption = []
    if grid.common:
        caption.append("every cell: " + inline(display.framework_text(grid.common)))
    if grid.collisions:
        caption.append(f"{grid.collisions} cell(s) share a slot with another; all are listed under All cells")
    legend = " · ".join(
        f"{sym} {name}"
        for name, sym in STATUS_SYMBOL.items()
        if name in ("passed", "failed", "crashed", "skipped", "missing", "fallback")
    )
    legend += " · `·` not in the matrix · <sub>small: optional</sub>"
    table = _table(header, rows)
    return "\n\n".join(filter(None, ["; ".join(caption).capitalize() if caption else "", table, legend]))


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


# -- ABI ---------------------------------------------------------------------------------------
def _abi_groups_md(groups: list[display.AbiGroup], limit: int) -> tuple[str, int]:
    lines = []
    shown = 0
    for g in groups:
        # The finding kind stays searchable (docs/abi.md lists them by kind).
        lines.append(f"**{inline(g.title)}** ({g.bump}, {g.count}) {code(g.kind)}")
        for item in g.items:
            if shown >= limit:
                break
            libs = ", ".join(item.short_libraries)
            what = code(item.symbol) if item.symbol else ""
            detail = inline(item.detail)[:240]
            where = f"in {inline(libs)}" if libs and libs not in ("—", "wheel") else ""
            head = " ".join(b for b in (what, where) if b)
            lines.append("- " + (f"{head} — {detail}" if head and detail else head or detail))
            shown += 1
        lines.append("")
    return "\n".join(lines).strip(), shown


def abi_section(report: Report) -> Section:
    abi = report.abi
    if abi is None:
        return Section(key="abi", priority=3, renditions=("",))
    if not abi.compared:
        # Nothing was compared: the section says why and claims no bump and no "no changes".
        head = f"### ABI: {STATUS_SYMBOL.get(abi.status, '❔')} not compared"
        return Section(key="abi", priority=3,
                       renditions=(head + (f"\n\n{inline(abi.summary)}" if abi.summary else ""), head))
    groups = display.group_abi(abi.findings)
    by_bump: dict[str, int] = {}
    for f in abi.findings:
        by_bump[f.required_bump] = by_bump.get(f.required_bump, 0) + 1
    tally = ", ".join(f"{n} {b}" for b, n in by_bump.items())
    versions = (
        f" · {code(f'{abi.old_version} → {abi.new_version}')}"
        + (f" is a {abi.actual_bump} bump" if abi.actual_bump else "")
        if abi.old_version and abi.new_version
        else ""
    )
    head = f"### ABI: {STATUS_SYMBOL.get(abi.status, '❔')} {abi.required_bump} bump required{versions}"
    if not versions and abi.summary:
        head += f"\n\n{inline(abi.summary)}"  # the ABI stage's own line, said here only
    if not abi.findings:
        return Section(
            key="abi", priority=3, renditions=(head + "\n\nNo changes to the exported interface.",)
        )
    titles = " · ".join(f"{inline(g.title)} ({g.count})" for g in groups)
    summary = f"{len(abi.findings)} changes ({tally}) in {len(groups)} groups"
    full_body, shown = _abi_groups_md(groups, TABLE_ROWS)
    more = (
        "\n\n" + _more(len(abi.findings) - shown, "changes", report)
        if sum(len(g.items) for g in groups) > shown
        else ""
    )
    full = f"{head}\n\n{titles}\n\n<details><summary>{summary}</summary>\n\n{full_body}{more}\n\n</details>"
    short_body, shown_short = _abi_groups_md(groups, 20)
    more_short = (
        "\n\n" + _more(sum(len(g.items) for g in groups) - shown_short, "changes", report)
        if sum(len(g.items) for g in groups) > shown_short
        else ""
    )
    short = f"{head}\n\n{titles}\n\n<details><summary>{summary}</summary>\n\n{short_body}{more_short}\n\n</details>"
    return Section(key="abi", priority=3, renditions=(full, short, f"{head}\n\n{titles}", head))


# -- coverage ------------------------------------------------------------------------------------
def coverage_section(report: Report) -> Section:
    cov = report.coverage
    if cov is None:
        return Section(key="coverage", priority=4, renditions=("",))
    lines = [f"### Coverage: {_pct(cov.percent)}"]
    facts = []
    if cov.languages:
        facts.append(
            ", ".join(f"{inline(display.language_name(name))} {_pct(p)}" for name, p in cov.languages)
        )
    if cov.diff_percent is not None:
        if cov.diff_threshold is not None:
            ok = cov.diff_percent >= cov.diff_threshold
            facts.append(
                f"diff coverage **{_pct(cov.diff_percent)}** {'✅' if ok else '❌'} (threshold {_pct(cov.diff_threshold)})"
            )
        else:
            facts.append(f"diff coverage **{_pct(cov.diff_percent)}** (no threshold)")
    elif cov.diff_threshold is not None:
        facts.append(f"diff coverage not measured (threshold {_pct(cov.diff_threshold)})")
    if facts:
        lines += ["", "; ".join(facts)]
    head = "\n".join(lines)
    parts = [head]
    changed = sorted(
        (f for f in cov.diff_files if f.uncovered),
        key=lambda f: (f.percent if f.percent is not None else 0.0, f.path),
    )
    diff_rows = [[code(f.path), _pct(f.percent), inline(display.ranges_text(f))] for f in changed]
    if diff_rows:
        parts.append(
            "Uncovered changed lines, worst first:\n\n"
            + _table(["File", "Diff coverage", "Uncovered lines"], diff_rows[:TABLE_ROWS])
        )
        if len(diff_rows) > TABLE_ROWS:
            parts.append(_more(len(diff_rows) - TABLE_ROWS, "files", report))
    with_files = list(parts)
    if cov.files:
        worst = display.worst_files(cov.files)
        rows = [
            [code(f.path), _pct(f.percent), inline(display.ranges_text(f, 6)) or "—"]
            for f in worst[:TABLE_ROWS]
        ]
        table = _table(["File", "Coverage", "Uncovered lines"], rows)
        more = f"\n\n{_more(len(worst) - TABLE_ROWS, 'files', report)}" if len(worst) > TABLE_ROWS else ""
        with_files.append(
            f"<details><summary>Per-file coverage, worst first ({len(cov.files)} files)</summary>\n\n{table}{more}\n\n</details>"
        )
    renditions = ["\n\n".join(with_files)]
    if len(with_files) != len(parts):
        renditions.append("\n\n".join(parts))
    if len(parts) > 1:
        renditions.append(head)
    return Section(key="coverage", priority=4, renditions=tuple(renditions))


def _pct(p: float | None) -> str:
    return "—" if p is None else f"{p:.1f}%"


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
    table = _table(["Cell", "Status", "Stages", "Tests passed", "Note"], rows[:TABLE_ROWS])
    if len(rows) > TABLE_ROWS:
        table += "\n\n" + _more(len(rows) - TABLE_ROWS, "cells", report)
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
            "### Other results\n\n" + _table(["Kind", "Cell", "Status", "Summary"], rows[:TABLE_ROWS])
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
