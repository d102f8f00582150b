"""A stage result is never greener than its own items: the status of a ``test`` or ``kernels``
result that says more than its tests or kernels do is replaced by theirs, with the reason."""

from __future__ import annotations

import pytest
from tests.helpers.report import make_cell, make_plan, make_test, make_test_result, stage_result

from xcompat.report import build_report
from xcompat.results import judge, parse_envelope


@pytest.mark.parametrize(
    ("outcomes", "declared", "expected"),
    [
        (["passed", "failed"], "passed", "failed"),
        (["passed", "error"], "passed", "failed"),
        (["passed", "leaked"], "passed", "failed"),
        (["failed", "timeout"], "failed", "crashed"),
        (["crashed"], "passed", "crashed"),
        (["skipped", "skipped"], "passed", "skipped"),
        ([], "passed", "skipped"),  # "no tests found" is never green
        (["passed", "skipped", "xfailed", "xpassed"], "passed", "passed"),
        (["passed"], "failed", "failed"),  # a worse declared status stands (leaks found by --deep, ...)
    ],
)
def test_the_tests_decide_when_the_status_says_more(outcomes, declared, expected):
    doc = make_test_result("c1", [make_test(f"t.py::t{i}", o) for i, o in enumerate(outcomes)], status=declared)
    result = parse_envelope(doc, "test.json")
    assert result.status == expected
    if expected != declared:
        assert result.summary.startswith(f"its status says {declared}, but its tests say {expected}")


def test_a_result_without_a_tests_list_is_taken_at_its_word():
    doc = stage_result("test", "c1", "passed")
    assert parse_envelope(doc, "test.json").status == "passed"


def test_kernels_that_failed_make_the_stage_fail():
    doc = stage_result("kernels", "c1", "passed",
                       kernels=[{"name": "add", "status": "passed", "cases": []},
                                {"name": "mm", "status": "failed", "cases": []}])
    result = parse_envelope(doc, "kernels.json")
    assert result.status == "failed" and "its kernels say failed" in result.summary
    fine = stage_result("kernels", "c1", "fallback", kernels=[{"name": "add", "status": "passed", "cases": []}])
    assert parse_envelope(fine, "kernels.json").status == "fallback"


def test_an_abi_result_with_gating_findings_is_failed():
    doc = stage_result("abi", None, "passed", gating=3, required_bump="major")
    result = parse_envelope(doc, "abi.json")
    assert result.status == "failed" and "its gating findings say failed" in result.summary
    assert parse_envelope(stage_result("abi", None, "passed", gating=0), "abi.json").status == "passed"
    assert parse_envelope(stage_result("abi", None, "passed", gating=True), "abi.json").status == "passed"


def test_the_report_and_the_verdict_are_red_for_a_test_result_that_claims_passed():
    # found by editing a real result: the report said SUCCESS while listing the failed test
    cell = make_cell()
    forged = make_test_result(cell.id, [make_test("t.py::ok"), make_test("t.py::bad", "failed", message="assert 1 == 2")],
                              status="passed")
    docs = [stage_result("build", cell.id), forged]
    plan = make_plan([cell])
    verdict = judge([parse_envelope(d, f"<{i}>") for i, d in enumerate(docs)], plan["cells"])
    assert not verdict.green
    report = build_report(docs, plan)
    assert report.conclusion == "failure"
    assert any("its status says passed, but its tests say failed" in p for p in report.problems), report.problems
