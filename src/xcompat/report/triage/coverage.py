"""Coverage problems: a failed coverage result's "To fix" from its own words, and changed lines
below the diff threshold."""

from __future__ import annotations

import re
from collections.abc import Iterable

from xcompat.report.model import Report
from xcompat.report.triage.problem import Part, Problem, Rich, bold, code, first_line, rich

COVERAGE_INSTALL = "pip install 'xcompat[coverage]'"
_NOT_MEASURED = re.compile(r"not measured: (.*?)(?:; coverage is required.*)?$")
_BELOW = re.compile(r"(overall|diff) coverage [\d.]+% < threshold [\d.]+%")


def coverage_fix(message: str, report: Report) -> Rich:
    """What was missing, from the coverage result's own words: the tools, a measurement (and
    why not), or coverage of the lines a threshold counts."""
    text = first_line(message, 2000)
    lift = ("; or remove the threshold from the signed matrix's ", code("coverage"),
            " settings, which makes coverage informational")
    if COVERAGE_INSTALL in text:
        return rich("install the coverage tools where xcompat runs: ", code(COVERAGE_INSTALL), *lift)
    found = _NOT_MEASURED.search(text)
    if found:
        return rich("make coverage measurable: ", found.group(1).rstrip(" ;"),
                    " (the coverage stage's logs say more)", *lift)
    below = {m.group(1) for m in _BELOW.finditer(text)}
    cov = report.coverage
    if "overall" in below and cov is not None:
        worst = sorted((f for f in cov.files if f.uncovered and f.total),
                       key=lambda f: (f.percent if f.percent is not None else 0, f.path))
        first = (", first ", code(worst[0].path)) if worst else ()
        return rich("test the files listed worst first under Coverage", *first,
                    ", or lower the overall threshold in the signed matrix")
    if "diff" in below:
        return rich("cover the changed lines listed under Coverage, or lower the diff threshold in the signed matrix")
    return rich(first_line(message) or "see the coverage result's summary under Coverage")


def coverage_problems(report: Report) -> Iterable[Problem]:
    cov = report.coverage
    if (
        cov is None
        or cov.diff_threshold is None
        or cov.diff_percent is None
        or cov.diff_percent >= cov.diff_threshold
    ):
        return []
    worst = sorted(
        (f for f in cov.diff_files if f.uncovered),
        key=lambda f: (f.percent if f.percent is not None else 0, f.path),
    )
    fix: list[Part] = ["cover the changed lines listed under Coverage"]
    if worst:
        first = worst[0]
        a, b = first.uncovered[0]
        fix = [
            "cover the changed lines listed under Coverage, first ",
            code(f"{first.path}:{a}" + (f"-{b}" if b != a else "")),
        ]
    gating = cov.status in ("failed", "crashed")
    title = rich(
        bold(f"diff coverage {cov.diff_percent:.1f}% is below the {cov.diff_threshold:.1f}% threshold")
    )
    return [
        Problem(
            status="failed" if gating else "warning",
            title=title,
            fix=rich(*fix),
            gating=gating,
            section="coverage",
        )
    ]
