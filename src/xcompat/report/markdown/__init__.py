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

from collections.abc import Sequence

from xcompat.report.budget import Section
from xcompat.report.markdown.abi import abi_section
from xcompat.report.markdown.blocks import code, fenced, inline
from xcompat.report.markdown.cells import cells_section
from xcompat.report.markdown.contracts import contracts_section
from xcompat.report.markdown.coverage import coverage_section
from xcompat.report.markdown.failures import failures_section
from xcompat.report.markdown.kernels import kernels_section
from xcompat.report.markdown.lead import header_section
from xcompat.report.markdown.matrix import grid_section
from xcompat.report.markdown.other import other_section
from xcompat.report.model import Report

__all__ = ["code", "fenced", "inline", "sections"]


def sections(report: Report, *, marker: str = "", include: Sequence[str] | None = None) -> list[Section]:
    all_sections = [
        header_section(report, marker),
        grid_section(report),
        kernels_section(report),
        failures_section(report),
        abi_section(report),
        coverage_section(report),
        contracts_section(report),
        cells_section(report),
        other_section(report),
    ]
    if include is not None:
        all_sections = [s for s in all_sections if s.key in include]
    return all_sections
