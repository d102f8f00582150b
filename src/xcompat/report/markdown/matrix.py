"""The matrix of the Markdown report: one row per device and frameworks, one column per Python."""

from __future__ import annotations

from xcompat.report import display
from xcompat.report.budget import Section
from xcompat.report.markdown.blocks import folded_stub, inline, md_table
from xcompat.report.model import STATUS_SYMBOL, CellReport, Report


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
    table = md_table(header, rows)
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
