"""An ABI stage that compared nothing makes no ABI claim in any rendering of the report.

The abi stage of ``xcompat run`` writes an envelope without ``required_bump`` when it did not
run ("not run: no release tag ..."); the report shows "not compared" and the reason, never
"ABI unchanged", "No changes to the exported interface", a bump or a release to make.
"""

from __future__ import annotations

import json

import pytest
from tests.helpers.report import abi_result, make_cell, make_plan, make_test, make_test_result, stage_result

from xcompat.report import build_report, render
from xcompat.report.step_outputs import step_outputs
from xcompat.report.triage import plain, triage

WHY = "not run: abi.baseline last-release-tag: no release tag (like v1.2.3) in the history of HEAD"
CLAIMS = ("ABI unchanged", "No changes to the exported interface", "bump required", "ABI: no change",
          "release as", "make this a", "none release", "none bump")


def _report(abi: dict):
    cell = make_cell()
    return build_report([make_test_result(cell.id, [make_test("t.py::x")]), abi], make_plan([cell]))


@pytest.mark.parametrize("fmt", ["markdown", "html", "text", "json"])
def test_a_skipped_abi_stage_claims_nothing(fmt: str) -> None:
    report = _report(stage_result("abi", None, "skipped", WHY))
    assert report.conclusion == "success"
    assert report.abi is not None and not report.abi.compared
    text = render(report, fmt)
    for claim in CLAIMS:
        assert claim not in text, claim
    assert "no release tag" in text
    if fmt == "json":
        assert json.loads(text)["abi"]["compared"] is False
    else:
        assert "not compared" in text


def test_the_headline_and_step_outputs_claim_nothing() -> None:
    report = _report(stage_result("abi", None, "skipped", WHY))
    assert report.headline.endswith("; ABI: not compared")
    assert step_outputs(report)["abi-bump"] == ""


def test_a_required_baseline_that_is_missing_is_red_with_its_reason_and_no_release() -> None:
    report = _report(stage_result("abi", None, "failed", WHY + " (abi.baseline-required: true)"))
    assert report.conclusion == "failure"
    (problem,) = [p for p in triage(report) if p.section == "abi"]
    assert plain(problem.title).startswith("ABI not compared: abi.baseline last-release-tag: no release tag")
    assert "release as" not in plain(problem.fix) and "make this a" not in plain(problem.fix)
    md = render(report, "markdown")
    for claim in CLAIMS:
        assert claim not in md, claim


def test_a_diff_that_found_nothing_still_says_unchanged() -> None:
    report = _report(abi_result([], status="passed"))
    assert report.abi is not None and report.abi.compared
    md = render(report, "markdown")
    assert "ABI unchanged" in md and "No changes to the exported interface" in md
