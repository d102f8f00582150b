"""What broke and what to do: the report's problems, worst first, each with a "To fix" line.

``triage(report)`` reads only the report model. Order: crashed tests, failed tests,
other failed stages, the ABI verdict, fallback lanes, failed cell-less results (gate,
coverage), required cells without a result, skipped required cells; then what does not
gate (optional cells, a diff-coverage warning). Problems that share a cause are one
line: a test failing in twelve cells, or thirty cells whose runner never came.

Texts are ``Rich`` tuples of (style, text) segments, style "" (prose), "code" or "b"
(bold), so each renderer escapes and marks them up its own way (``problem``).
"""

from __future__ import annotations

from xcompat.report.model import Failure, Report
from xcompat.report.triage.abi import abi_problem
from xcompat.report.triage.cells import (
    fallback_problems,
    missing_problems,
    optional_missing_line,
    skipped_problems,
)
from xcompat.report.triage.coverage import coverage_problems
from xcompat.report.triage.failing_tests import failing_test_problem
from xcompat.report.triage.problem import Problem, Rich, first_line, plain
from xcompat.report.triage.stages import PIPELINE_STAGE_FIX, stage_problem

__all__ = ["PIPELINE_STAGE_FIX", "Problem", "Rich", "optional_missing_line", "plain", "triage"]

TEST_OUTCOMES_FAILED = ("failed", "error", "timeout", "leaked", "crashed")
# Crashes first, then failures, hangs and leaks.
_TEST_ORDER = {"crashed": 0, "failed": 1, "error": 1, "timeout": 2, "leaked": 3}

TestGroups = dict[tuple[str, str], list[Failure]]
StageGroups = dict[tuple[str, str, str], list[Failure]]


def _group_failures(report: Report) -> tuple[TestGroups, StageGroups]:
    """Tests grouped by outcome and name over the cells they failed in; other stages by kind,
    outcome and cause. Missing cells and the ABI verdict get their own lines."""
    tests: TestGroups = {}
    stages: StageGroups = {}
    for f in report.failures:
        if f.kind == "test" and f.name != "test" and f.outcome in TEST_OUTCOMES_FAILED:
            tests.setdefault((f.outcome, f.name), []).append(f)
        elif f.kind == "cell" or (f.kind == "abi" and report.abi is not None):
            continue
        elif f.outcome != "fallback":
            stages.setdefault(
                (f.kind, f.outcome, f.name if f.name != f.kind else first_line(f.message, 160)), []
            ).append(f)
    return tests, stages


def triage(report: Report) -> list[Problem]:
    tests, stages = _group_failures(report)
    problems = [
        failing_test_problem(outcome, name, group, report)
        for (outcome, name), group in sorted(
            tests.items(),
            key=lambda kv: (not any(f.required for f in kv[1]), _TEST_ORDER.get(kv[0][0], 1), -len(kv[1]), kv[0][1]),
        )
    ]
    problems += [
        stage_problem(key, group, report)
        for key, group in sorted(stages.items(), key=lambda kv: (not any(f.required for f in kv[1]), kv[0]))
    ]
    abi = abi_problem(report)
    if abi is not None:
        problems.append(abi)
    problems += fallback_problems(report)
    problems += missing_problems(report)
    problems += skipped_problems(report)
    problems.extend(coverage_problems(report))
    return problems
