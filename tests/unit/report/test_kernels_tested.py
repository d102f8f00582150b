"""The report tells the runner's conformance kernels and the project's operators apart, per cell,
in every format; a gating operator finding is a failure and makes the cell red, a reported one is
shown and is not."""

from __future__ import annotations

import json
from typing import Any

from tests.helpers.kernel_results import CLEAN, FLAKY, STRIDES, kernels_doc, ran
from tests.helpers.report import make_cell, make_plan, make_test, make_test_result

from xcompat.jsonio import validate
from xcompat.report import build_report, render
from xcompat.results.kernel_operators import build_section, not_run_section


def _results(cid: str, section: dict[str, Any], status: str) -> list[dict[str, Any]]:
    kernels = kernels_doc(status, section)
    kernels["cell_id"] = cid
    return [kernels, make_test_result(cid, [make_test("tests/test_a.py::test_a")])]


def _report(section: dict[str, Any], status: str = "passed") -> Any:
    cell = make_cell()
    return build_report(_results(cell.id, section, status), make_plan([cell])), cell.id


def test_a_gating_finding_is_a_failure_and_every_format_names_both_parts() -> None:
    report, cid = _report(build_section([ran("cpu", CLEAN, STRIDES)], "gate", None), status="failed")
    expected = ("runner kernels 5/5; project operators 2: 1 passed, 1 failed: "
                "ns::scale on cpu, non-contiguous, float16")
    assert report.conclusion == "failure" and report.cells[0].status == "failed"
    assert report.cells[0].kernels_tested == expected
    failure = next(f for f in report.failures if f.kind == "kernels")
    assert failure.name == "ns::scale on cpu" and failure.cell_id == cid
    assert failure.message.startswith("wrong numbers on non-contiguous, float16 (largest error 3.5): ")
    text = render(report, "text")
    assert f"  {cid}: {expected}" in text
    assert "runner kernels 5/5; project operators 2: 1 passed, 1 failed:" in render(report, "markdown")
    html = render(report, "html")
    assert '<h2 id="kernels">Kernels</h2>' in html and "ns::scale on cpu, non-contiguous, float16" in html
    document = json.loads(render(report, "json"))
    validate("report", document)
    assert document["cells"][0]["kernels_tested"] == expected


def test_a_reported_finding_is_shown_and_does_not_turn_the_cell_red() -> None:
    report, _ = _report(build_section([ran("cpu", CLEAN, FLAKY)], "gate", None))
    assert report.conclusion == "success" and report.cells[0].status == "passed"
    assert not any(f.kind == "kernels" for f in report.failures)
    assert "reported, not gating: ns::noisy on cpu, determinism, float32" in render(report, "text")


def test_operators_not_run_because_the_build_failed_are_not_shown_as_passed() -> None:
    section = not_run_section("no wheel to check (the project's build failed)", "gate", counts_against=True)
    report, _ = _report(section, status="failed")
    assert report.cells[0].status == "failed"
    assert report.cells[0].kernels_tested == ("runner kernels 5/5; project operators not run: no wheel to check "
                                              "(the project's build failed)")
    failure = next(f for f in report.failures if f.kind == "kernels")
    assert failure.name == "project operators" and "build failed" in failure.message
