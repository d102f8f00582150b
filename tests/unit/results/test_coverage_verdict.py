"""Coverage in the one verdict: informational unless the signed matrix sets a threshold.

A coverage stage that could not measure, or found the coverage tools missing, is skipped and
not red; with ``coverage.overall`` or ``coverage.diff`` set it is required, and the report's
"To fix" says what was missing instead of "run it again".
"""

from __future__ import annotations

from tests.helpers.report import (
    coverage_result,
    make_cell,
    make_plan,
    make_test,
    make_test_result,
    stage_result,
)

from xcompat.matrix import load_matrix
from xcompat.report import build_report
from xcompat.report.triage import plain, triage
from xcompat.settings import defaults_settings, resolve_settings

MATRIX = (b"xcompat: 1\nrepo: a/b\nserial: 1\npython: ['3.12']\nplatforms: {linux: {archs: [x86_64]}}\n"
          b"backends: {cpu: {required: true}}\ntests: {kernels: none}\n")
INSTALL = "coverage.py is not installed (pip install 'xcompat[coverage]')"


def _settings(coverage: bytes = b""):
    return resolve_settings(load_matrix(MATRIX + coverage))


def _results(cell_id: str, *coverage):
    return [stage_result("build", cell_id), make_test_result(cell_id, [make_test("tests/t.py::x")]), *coverage]


def test_coverage_is_required_only_with_a_threshold():
    from xcompat.results.required import coverage_requirement

    assert not coverage_requirement(defaults_settings()).required
    assert not coverage_requirement(None).required
    required = coverage_requirement(_settings(b"coverage: {overall: 80, diff: 90}\n"))
    assert required.required and required.reason == "the matrix sets coverage thresholds (overall 80%, diff 90%)"


def test_a_skipped_coverage_stage_is_red_only_with_a_threshold():
    cell = make_cell()
    for summary in (INSTALL, "not measured: the instrumented build (setuptools build_ext --inplace) failed"):
        results = _results(cell.id, stage_result("coverage", cell.id, "skipped", summary))
        report = build_report(results, make_plan([cell]), settings=_settings())
        assert report.conclusion == "success", report.problems
    results = _results(cell.id, stage_result("coverage", cell.id, "skipped", INSTALL))
    report = build_report(results, make_plan([cell]), settings=_settings(b"coverage: {overall: 80}\n"))
    assert report.conclusion == "failure"
    # a skipped merged (run-level) coverage result too
    merged = {**coverage_result(0.0, status="skipped"), "summary": INSTALL}
    report = build_report([*_results(cell.id), merged], make_plan([cell]),
                          settings=_settings(b"coverage: {diff: 80}\n"))
    assert report.conclusion == "failure" and any(INSTALL in p for p in report.problems), report.problems


def _coverage_fix(summary: str, settings, extra=()) -> str:
    cell = make_cell()
    results = _results(cell.id, stage_result("coverage", cell.id, "failed", summary), *extra)
    report = build_report(results, make_plan([cell]), settings=settings)
    assert report.conclusion == "failure"
    (problem,) = [p for p in triage(report) if "coverage" in plain(p.title)]
    return plain(problem.fix)


def test_to_fix_says_what_was_missing():
    required = "; coverage is required: the matrix sets coverage thresholds (overall 80%)"
    settings = _settings(b"coverage: {overall: 80}\n")
    fix = _coverage_fix(INSTALL + required, settings)
    assert "`pip install 'xcompat[coverage]'`" in fix and "again" not in fix
    fix = _coverage_fix("not measured: the tests did not run under coverage (exit 2: no tests were collected)"
                        + required, settings)
    assert fix.startswith("make coverage measurable: the tests did not run under coverage (exit 2: no tests were "
                          "collected)"), fix
    assert "coverage is required" not in fix


def test_to_fix_below_the_overall_threshold_names_the_least_covered_file():
    cell = make_cell()
    merged = coverage_result(40.0, status="failed", files=[("pkg/good.py", 90.0), ("pkg/bad.py", 10.0)])
    merged["files"][1]["uncovered_ranges"] = [[3, 12]]
    merged["files"][0]["uncovered_ranges"] = [[7, 7]]
    merged["summary"] = "400/1000 lines (40.00 %) in 2 files from 1 cells; failed: overall coverage 40.00% < threshold 80%"
    report = build_report([*_results(cell.id), merged], make_plan([cell]), settings=_settings(b"coverage: {overall: 80}\n"))
    (problem,) = [p for p in triage(report) if "coverage" in plain(p.title)]
    assert plain(problem.fix) == ("test the files listed worst first under Coverage, first `pkg/bad.py`, or lower "
                                  "the overall threshold in the signed matrix")
