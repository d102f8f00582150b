"""The report as step outputs (``$GITHUB_OUTPUT``), for the workflow steps after ``xcompat report``.

Names (all strings; counts in decimal, empty when unknown):

``conclusion`` (success / failure / neutral), ``cells``, ``cells-passed``, ``cells-failed``
(failed, crashed or fallback), ``cells-missing``, ``required-cells``,
``required-cells-passed``, ``tests``, ``tests-passed``, ``tests-failed``, ``tests-skipped``,
``abi-bump``, ``coverage``, ``diff-coverage``, ``check-run-url``, ``comment-url``,
``report-dir``, ``badge-json``, ``badge-svg``.
"""

from __future__ import annotations

from xcompat.report.model import Report

OUTPUT_NAMES = (
    "conclusion",
    "cells",
    "cells-passed",
    "cells-failed",
    "cells-missing",
    "required-cells",
    "required-cells-passed",
    "tests",
    "tests-passed",
    "tests-failed",
    "tests-skipped",
    "abi-bump",
    "coverage",
    "diff-coverage",
    "check-run-url",
    "comment-url",
    "report-dir",
    "badge-json",
    "badge-svg",
)


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def step_outputs(
    report: Report,
    *,
    check_run_url: str | None = None,
    comment_url: str | None = None,
    report_dir: str | None = None,
    badge_json: str | None = None,
    badge_svg: str | None = None,
) -> dict[str, str]:
    cells = report.cells
    required = [c for c in cells if c.required]
    passed = sum(c.tests_passed for c in cells)
    failed = sum(c.tests_failed for c in cells)
    skipped = sum(c.tests_skipped for c in cells)
    out = {
        "conclusion": report.conclusion,
        "cells": str(len(cells)),
        "cells-passed": str(sum(1 for c in cells if c.status == "passed")),
        "cells-failed": str(sum(1 for c in cells if c.status in ("failed", "crashed", "fallback"))),
        "cells-missing": str(sum(1 for c in cells if c.status == "missing")),
        "required-cells": str(len(required)),
        "required-cells-passed": str(sum(1 for c in required if c.status == "passed")),
        "tests": str(passed + failed + skipped),
        "tests-passed": str(passed),
        "tests-failed": str(failed),
        "tests-skipped": str(skipped),
        "abi-bump": report.abi.required_bump if report.abi is not None and report.abi.compared else "",
        "coverage": _pct(report.coverage.percent) if report.coverage is not None else "",
        "diff-coverage": _pct(report.coverage.diff_percent) if report.coverage is not None else "",
        "check-run-url": check_run_url or "",
        "comment-url": comment_url or "",
        "report-dir": report_dir or "",
        "badge-json": badge_json or "",
        "badge-svg": badge_svg or "",
    }
    return out
