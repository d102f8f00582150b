"""What each cell's kernels stage tested, for every renderer: the runner's conformance kernels
and the project's own operators apart, and each gating operator finding as a failure.

The runner's kernels prove the toolchain and the device; the project's operators prove the
maintainer's code. A report that said only "kernels ✅" would claim the second from the
first, so every renderer shows one line per cell with a kernels result
("runner kernels 880/880; project operators 3: 2 passed, 1 failed: ns::op on cpu,
non-contiguous, float16"). Findings the matrix reports without gating (``tests.operators``)
are named on that line and are not failures.
"""

from __future__ import annotations

from xcompat.neutralise import html_text
from xcompat.report.budget import Section
from xcompat.report.model import Failure, Report
from xcompat.results import kinds as K
from xcompat.results.kernel_operators import CHECK_WORDS, kernels_tested_text
from xcompat.results.stage_result import StageResult

__all__ = ["HEADING", "kernels_html", "kernels_lines", "kernels_text_section", "operator_failures", "kernels_tested_text"]

HEADING = "Kernels: the runner's conformance kernels and the project's own operators, per cell"


# The failure's message, which the report's "To fix" line reads first: what the finding means.
_FIX = {
    "result": "wrong numbers on {0}: the kernel disagrees with the reference on that input "
              "(reproduce: xcompat kernels operators, docs/operators.md)",
    "nan_from_finite": "NaN from finite input on {0}",
    "determinism": "different outputs for the same input on {0}",
    "opcheck": "torch.library.opcheck failed: {0}",
    "mixed_device": "inputs on two devices were accepted, not refused: {0}",
    "crashed": "the process checking the operators crashed or hung: {0}",
    "samples": "the samples file .xcompat/operators.py could not be used: {0}",
    "not_run": "not checked: {0}; once the project builds, its operators are checked",
}


def operator_failures(result: StageResult, required: bool) -> list[Failure]:
    """One failure per gating finding of the project's operators in a kernels result."""
    section = K.kernel_operators(result)
    if section is None:
        return []
    out = []
    for finding in section.gating:
        if finding.operator:
            name = f"{finding.operator} on {finding.device}"
        else:
            name = "project operators" + (f" on {finding.device}" if finding.device else "")
        error = f" (largest error {finding.max_error:.3g})" if finding.max_error is not None else ""
        shown = f"{finding.case}{error}" if finding.case else finding.detail
        message = _FIX.get(finding.check, CHECK_WORDS.get(finding.check, finding.check) + ": {0}").format(shown)
        out.append(Failure(cell_id=result.cell_id, kind=result.kind, name=name, outcome="failed",
                           message=" ".join(message.split())[:500], log_tail=finding.detail[:2000],
                           required=required))
    return out


def kernels_lines(report: Report) -> list[tuple[str, str]]:
    """``(cell id, what its kernels stage tested)`` for each cell with a kernels result."""
    return [(cell.id, cell.kernels_tested) for cell in report.cells if cell.kernels_tested]


def kernels_text_section(report: Report) -> list[Section]:
    """The plain-text renderer's kernels section (none when no cell has a kernels result)."""
    lines = kernels_lines(report)
    if not lines:
        return []
    body = "\n".join(f"  {cell}: {' '.join(text.split())}" for cell, text in lines)
    return [Section(key="kernels", priority=4, renditions=(f"{HEADING}\n{body}", ""))]


def kernels_html(report: Report) -> list[str]:
    """The HTML renderer's kernels section."""
    lines = kernels_lines(report)
    if not lines:
        return []
    items = "".join(f"<li><code>{html_text(cell)}</code>: {html_text(text)}</li>" for cell, text in lines)
    return [f'<h2 id="kernels">Kernels</h2><p class="note">{html_text(HEADING.split(": ", 1)[1])}</p><ul>{items}</ul>']
