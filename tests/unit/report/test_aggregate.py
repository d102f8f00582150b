import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.helpers.report import (
    make_cell,
    make_plan,
    make_test,
    make_test_result,
    mixed_results,
    stage_result,
)

from xcompat.errors import InputError
from xcompat.report import build_report
from xcompat.report.case_text import log_tail
from xcompat.report.cell_fields import cell_from_id


def _status(report, cell_id):
    return next(c for c in report.cells if c.id == cell_id).status


def test_mixed_results_every_status_is_distinct():
    plan, results = mixed_results()
    report = build_report(results, plan)
    statuses = {c.id: c.status for c in report.cells}
    assert sorted(statuses.values()) == ["crashed", "failed", "fallback", "missing", "passed"]
    assert report.conclusion == "failure"
    # Failures first: crashes, then missing lanes, then failures; optional cells last.
    assert [f.outcome for f in report.failures][:2] == ["crashed", "missing"]
    assert report.failures[-1].required is False
    assert report.abi is not None and report.abi.required_bump == "major"
    assert [f.required_bump for f in report.abi.findings] == ["major", "minor"]
    assert report.coverage is not None and report.coverage.percent == 81.5
    assert report.coverage.diff_files[0].uncovered == ((10, 12), (20, 20))
    assert report.coverage.diff_threshold == 80.0


def test_required_cell_whose_tests_never_reported_is_red():
    # The plan's settings say every cell runs tests: a build alone is not a passing cell.
    a = make_cell()
    report = build_report([stage_result("build", a.id)], make_plan([a]))
    assert _status(report, a.id) == "missing" and report.conclusion == "failure"
    assert "no test result" in report.cells[0].reason


def test_required_cell_without_result_is_missing_and_red():
    a, b = make_cell("3.12"), make_cell("3.13")
    report = build_report([make_test_result(a.id, [make_test("t.py::x")])], make_plan([a, b]))
    assert _status(report, b.id) == "missing"
    assert report.conclusion == "failure"
    assert any(b.id in p and "missing" in p for p in report.problems)


def test_optional_cell_problems_are_warnings_not_failures():
    a, b = make_cell("3.12"), make_cell("3.13", required=False)
    report = build_report([make_test_result(a.id, [make_test("t.py::x")])], make_plan([a, b]))
    assert report.conclusion == "success"
    assert _status(report, b.id) == "missing"
    assert any("optional cell" in w for w in report.warnings)


@pytest.mark.parametrize("status", ["fallback", "skipped", "failed", "crashed"])
def test_required_lane_that_did_not_pass_is_never_green(status):
    a = make_cell("3.12", backend="cuda", toolkit="12.8")
    report = build_report([stage_result("kernels", a.id, status, "no CUDA device; ran on cpu")], make_plan([a]))
    assert _status(report, a.id) == status
    assert report.conclusion == "failure"


def test_skipped_coverage_does_not_make_a_cell_skipped():
    a = make_cell()
    results = [make_test_result(a.id, [make_test("t.py::x")]), stage_result("coverage", a.id, "skipped", "no coverage tool")]
    report = build_report(results, make_plan([a]))
    assert _status(report, a.id) == "passed" and report.conclusion == "success"


def test_cell_status_is_the_worst_stage():
    a = make_cell()
    results = [stage_result("build", a.id, "passed"), stage_result("kernels", a.id, "fallback"), make_test_result(a.id, [make_test("t.py::x", "crashed")])]
    assert _status(build_report(results, make_plan([a])), a.id) == "crashed"


def test_without_plan_cells_come_from_ids():
    cid = "py3.13t-linux-aarch64-cuda12.8-numpy2.1-torch2.5"
    report = build_report([stage_result("build", cid)])
    cell = report.cells[0]
    assert (cell.python, cell.platform, cell.arch, cell.backend, cell.toolkit) == ("3.13t", "linux", "aarch64", "cuda", "12.8")
    assert cell.frameworks == (("numpy", "2.1"), ("torch", "2.5"))
    assert report.conclusion == "success"


def test_cell_from_unparseable_id_still_renders():
    assert cell_from_id("weird id")["backend"] == "weird id"


def test_results_for_unplanned_cells_warn_and_do_not_gate():
    a = make_cell()
    report = build_report([stage_result("build", a.id), make_test_result(a.id, [make_test("t.py::x")]),
                           stage_result("build", "py3.9-linux-x86_64-cpu", "failed")], make_plan([a]))
    assert report.conclusion == "success"
    assert any("plan does not list" in w for w in report.warnings)


def test_unknown_kind_and_fields_render_generically():
    a = make_cell()
    results = [stage_result("build", a.id), make_test_result(a.id, [make_test("t.py::x")]),
               stage_result("fuzz", a.id, "passed", "12 inputs", extra={"x": [1, {"y": None}]})]
    report = build_report(results, make_plan([a]))
    assert [r.kind for r in report.other] == ["fuzz"]
    assert report.conclusion == "success"


def test_unknown_status_is_an_input_error_as_in_the_gate():
    # One reader of the envelope for the report and the gate: a status outside the schema's
    # enum is refused with its JSON path, never guessed at.
    a = make_cell()
    with pytest.raises(InputError, match=r"\$\.status: 'exploded' is not one of"):
        build_report([stage_result("build", a.id, "exploded")], make_plan([a]))


def test_global_failed_result_is_a_problem():
    report = build_report([stage_result("gate", None, "failed", "tag v2 refused")])
    assert report.conclusion == "failure"
    assert report.problems == ("gate: failed (tag v2 refused)",)


def test_no_results_is_neutral():
    report = build_report([])
    assert report.conclusion == "neutral"


def test_all_skipped_is_neutral_without_required_cells():
    a = make_cell(required=False)
    report = build_report([stage_result("test", a.id, "skipped", "no GPU")], make_plan([a]))
    assert report.conclusion == "neutral"


def test_bad_envelope_in_api_input_is_an_input_error():
    with pytest.raises(InputError, match="kind"):
        build_report([{"version": 1, "status": "passed"}])
    with pytest.raises(InputError, match="unsupported result version 2"):
        build_report([{"version": 2, "kind": "test", "status": "passed"}])


def test_log_tail_strips_colour_and_bounds_size():
    text = "\n".join(f"\x1b[31mline {i}\x1b[0m" for i in range(1000))
    tail = log_tail(text, lines=5, chars=100)
    assert tail.splitlines() == [f"line {i}" for i in range(995, 1000)]
    assert "\x1b" not in tail
    assert len(log_tail("x" * 10_000 + "\nend", lines=5, chars=50)) <= 50


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(
    kind=st.sampled_from(["test", "abi", "coverage", "kernels", "build", "probe", "gate", "other"]),
    status=st.sampled_from(["passed", "failed", "crashed", "skipped", "fallback", "odd"]),
    fields=st.dictionaries(
        st.sampled_from(["tests", "findings", "kernels", "totals", "languages", "files", "diff", "required_bump", "thresholds", "log_tail", "cell", "cells", "errors"]),
        _json,
        max_size=6,
    ),
    cell=st.sampled_from([None, "py3.12-linux-x86_64-cpu", "??"]),
    extra_cells=st.lists(st.fixed_dictionaries({"id": st.sampled_from(["py3.12-linux-x86_64-cpu", "c2"]), "status": _json}), max_size=3),
    errors=st.lists(st.fixed_dictionaries({"cell_id": st.sampled_from([None, "c2", 5]), "log_tail": _json, "message": _json}), max_size=3),
)
def test_any_stage_fields_never_crash_aggregation_or_rendering(kind, status, fields, cell, extra_cells, errors):
    """Hostile fields give a report or an InputError naming the place, never anything else."""
    from xcompat.report import render

    try:
        report = build_report([stage_result(kind, cell, status, "s", **fields), stage_result("build", None, status, "b", cells=extra_cells, errors=errors)])
    except InputError as exc:
        assert "$" in str(exc) or "status" in str(exc)
        return
    for fmt in ("markdown", "text", "json", "html"):
        assert render(report, fmt)
    json.loads(render(report, "json"))


def test_a_build_covering_several_cells_reports_each():
    a, b = make_cell("3.12"), make_cell("3.13")
    build = stage_result(
        "build",
        None,
        "failed",
        "1 of 2 wheels failed",
        cells=[{"id": a.id, "status": "passed", "wheels": ["x.whl"]}, {"id": b.id, "status": "failed", "wheels": []}],
        errors=[{"cell_id": b.id, "message": "compiler error", "log_tail": ["ops.c:3: error: expected ';'", "ninja: build stopped"]}],
    )
    report = build_report([build, make_test_result(a.id, [make_test("t.py::x")])], make_plan([a, b]))
    assert _status(report, a.id) == "passed" and _status(report, b.id) == "failed"
    failure = next(f for f in report.failures if f.cell_id == b.id)
    assert failure.kind == "build" and "expected ';'" in failure.log_tail and failure.message == "compiler error"
    assert not [p for p in report.problems if p.startswith("build")]  # not counted twice as a global failure


def test_failed_kernel_cases_are_listed():
    a = make_cell(backend="cuda", toolkit="12.8")
    kernels = stage_result(
        "kernels",
        a.id,
        "failed",
        "1 kernel failed",
        kernels=[
            {"name": "axpy", "status": "passed", "cases": [], "counts": {}},
            {
                "name": "matmul",
                "status": "failed",
                "counts": {"passed": 1, "failed": 1, "skipped": 0},
                "cases": [{"id": "matmul-f16-64x64", "status": "failed", "mismatches": 3, "max_abs_err": 0.25, "max_rel_err": None, "detail": "tolerance 1e-3"}],
            },
        ],
    )
    report = build_report([kernels], make_plan([a]))
    (failure,) = report.failures
    assert failure.name == "matmul" and "matmul-f16-64x64 3 mismatches max_abs_err=0.25 tolerance 1e-3" in failure.log_tail
