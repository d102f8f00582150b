"""Plain-text rendering for terminals and CI logs: ASCII status words, no markup.

Same order as the Markdown: the verdict, each problem with its "To fix" line, one line
for optional cells without a result, then the grid and the details.
"""

from __future__ import annotations

from xcompat.report import display
from xcompat.report.budget import Section
from xcompat.report.contracts import text_sections as contract_text_sections
from xcompat.report.markdown.failures import shown_failures
from xcompat.report.model import STATUS_ASCII, CellReport, Report
from xcompat.report.tails import user_frames_first
from xcompat.report.triage import optional_missing_line, plain, triage


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]

    def line(cols: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _cell_text(cell: CellReport) -> str:
    if cell.status == "missing":
        text = "MISSING"
    else:
        parts = display.stage_parts(cell)
        text = (
            " ".join(
                f"{p.kind}:{STATUS_ASCII.get(p.status, p.status)}{('(' + p.detail + ')') if p.detail else ''}"
                for p in parts
            )
            or STATUS_ASCII[cell.status]
        )
        if cell.status != "passed" and all(p.status != cell.status for p in parts):
            text = f"{STATUS_ASCII[cell.status]} {text}"
    note = display.tested_note(cell)
    if note:
        text += f" [{note}]"
    return text + ("" if cell.required else "?")


def _header(report: Report) -> Section:
    """The verdict, each gating problem with its "to fix" line, then what does not gate."""
    problems = triage(report)
    gating = [p for p in problems if p.gating]
    head = [f"{report.title}: {report.conclusion.upper()}: {report.headline}"]
    for i, p in enumerate(gating, 1):
        head.append(f"  {i}. {STATUS_ASCII.get(p.status, p.status.upper())}: {_one_line(plain(p.title))}")
        if p.fix:
            head.append(f"     to fix: {_one_line(plain(p.fix))}")
    if not gating:
        head += [f"  problem: {_one_line(problem)}" for problem in report.problems]
    optional = optional_missing_line(report)
    if optional:
        head.append(f"  ({_one_line(plain(optional))})")
    for p in problems:
        if not p.gating:
            head.append(
                f"  ({'warning' if p.status == 'warning' else 'optional'}: {_one_line(plain(p.title))})"
            )
    if report.artifact_url:
        head.append(f"  full report: {report.artifact_url}")
    return Section(key="header", priority=0, renditions=("\n".join(head),))


def _grid_and_cells(report: Report) -> list[Section]:
    if not report.cells:
        return []
    grid = display.build_grid(report.cells)
    fw = any(r.frameworks for r in grid.rows)
    header = ["device"] + (["frameworks"] if fw else []) + list(grid.pythons)
    rows = []
    for r in grid.rows:
        row = [r.device] + ([r.frameworks or "-"] if fw else [])
        row += [_cell_text(r.cells[py]) if py in r.cells else "." for py in grid.pythons]
        rows.append(row)
    common = f"; every cell: {display.framework_text(grid.common)}" if grid.common else ""
    text = f"Matrix (? = optional cell, . = not in the matrix{common})\n" + _table(header, rows)
    cell_rows = [
        [c.id, STATUS_ASCII[c.status] + ("" if c.required else "?"), _one_line(c.reason)[:120]]
        for c in report.cells
    ]
    cells_text = "Cells\n" + _table(["cell", "status", "reason"], cell_rows)
    if report.not_run_here:
        cells_text += "\nNot run here (this machine cannot run them; CI runs each on its own runner)\n" + _table(
            ["cell", "required", "why"],
            [[c.id, "yes" if c.required else "no", _one_line(c.why)[:120]] for c in report.not_run_here])
    from xcompat.report.kernels_tested import kernels_text_section

    return [Section(key="grid", priority=1, renditions=(text, "")),
            Section(key="cells", priority=5, renditions=(cells_text, "")), *kernels_text_section(report)]


def _failures(report: Report) -> list[Section]:
    failures = shown_failures(report)
    if not failures:
        return []
    lines = [f"Failures ({len(failures)})"]
    for f in failures:
        where = f" [{f.cell_id}]" if f.cell_id else ""
        loc = f" at {f.file}{':' + str(f.line) if f.line else ''}" if f.file else ""
        lines.append(f"- {f.outcome.upper()} {_one_line(f.name)}{where}{loc}")
        if f.message:
            lines.append(f"    {_one_line(f.message)}")
        for tail_line in user_frames_first(f.log_tail).splitlines() if f.log_tail else []:
            lines.append(f"    | {tail_line}")
    return [Section(key="failures", priority=2, renditions=("\n".join(lines), ""))]


def _abi(report: Report) -> list[Section]:
    abi = report.abi
    if abi is None:
        return []
    if not abi.compared:
        lines = [f"ABI: not compared ({abi.status})" + (f": {_one_line(abi.summary)}" if abi.summary else "")]
    else:
        lines = [f"ABI: {abi.required_bump} bump required ({abi.status})"]
    for g in display.group_abi(abi.findings):
        lines.append(f"  {g.title} ({g.bump}, {g.count}, {g.kind})")
        for item in g.items:
            libs = ", ".join(item.short_libraries)
            lines.append(f"    - {item.symbol or '-'} [{libs}] {_one_line(item.detail)}".rstrip())
    return [Section(key="abi", priority=3, renditions=("\n".join(lines), ""))]


def _coverage(report: Report) -> list[Section]:
    cov = report.coverage
    if cov is None:
        return []
    lines = [f"Coverage: {display.pct(cov.percent)}"]
    for name, percent in cov.languages:
        lines.append(f"  {display.language_name(name)}: {percent:.1f}%")
    if cov.diff_percent is not None:
        thr = f" (threshold {cov.diff_threshold:.1f}%)" if cov.diff_threshold is not None else ""
        lines.append(f"  diff coverage: {cov.diff_percent:.1f}%{thr}")
    for changed in cov.diff_files:
        if changed.uncovered:
            lines.append(f"  uncovered changed lines in {changed.path}: {display.ranges_text(changed, 40)}")
    return [Section(key="coverage", priority=4, renditions=("\n".join(lines), ""))]


def _other(report: Report) -> list[Section]:
    extra = [f"warning: {_one_line(w)}" for w in report.warnings]
    extra += [f"{r.kind} [{r.cell_id or '-'}]: {r.status}: {_one_line(r.summary)}" for r in report.other]
    extra += [f"note: {_one_line(n)}" for n in report.notes]
    return [Section(key="other", priority=6, renditions=("\n".join(extra), ""))] if extra else []


def text_sections(report: Report) -> list[Section]:
    return [_header(report), *_grid_and_cells(report), *_failures(report), *_abi(report), *_coverage(report),
            *contract_text_sections(report), *_other(report)]
