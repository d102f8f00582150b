"""The Markdown report's kernels section: per cell, the runner's kernels and the project's operators apart."""

from __future__ import annotations

from xcompat.report.budget import Section
from xcompat.report.kernels_tested import HEADING, kernels_lines
from xcompat.report.markdown.blocks import TABLE_ROWS, code, folded_stub, inline, more_line
from xcompat.report.model import Report


def kernels_section(report: Report) -> Section:
    lines = kernels_lines(report)
    if not lines:
        return Section(key="kernels", priority=4, renditions=("",))
    items = [f"- {code(cell)}: {inline(text)}" for cell, text in lines[:TABLE_ROWS]]
    if len(lines) > TABLE_ROWS:
        items.append(more_line(len(lines) - TABLE_ROWS, "cells", report))
    body = f"### Kernels\n\n_{inline(HEADING.split(': ', 1)[1])}_\n\n" + "\n".join(items)
    return Section(key="kernels", priority=4, renditions=(body, folded_stub("Kernels", str(len(lines)), report)))
