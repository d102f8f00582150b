"""One verdict for the report, the gate and ``xcompat run``: each false green found in real use has a case."""

from __future__ import annotations

from dataclasses import replace

import pytest
from tests.helpers.report import make_cell, make_plan, make_test, make_test_result, stage_result

from xcompat.errors import InputError
from xcompat.gate.cell_checks import check_cells
from xcompat.matrix import load_matrix
from xcompat.report import build_report
from xcompat.results import BUMP_ORDER, SEVERITY, bump_rank, is_required, judge, parse_envelope, worst
from xcompat.results.required import required_stages
from xcompat.settings import ProjectFacts, defaults_settings, resolve_settings
from xcompat.settings.project import project_facts

NO_TORCH = ProjectFacts(name="ujson", uses_torch=False, torch_evidence="no torch in Requires-Dist or build requirements")
TORCH = ProjectFacts(name="ops", uses_torch=True, torch_evidence="pyproject.toml [project] dependencies")


def _envelopes(*docs):
    return [parse_envelope(d, f"<{i}>") for i, d in enumerate(docs)]


def _passing(cell_id):
    return [stage_result("build", cell_id), make_test_result(cell_id, [make_test("tests/t.py::x")])]


def test_one_status_order_and_one_bump_order():
    assert SEVERITY == ("passed", "skipped", "fallback", "failed", "missing", "crashed")
    assert worst(["passed", "fallback", "failed"]) == "failed"
    assert worst([]) == "missing"
    assert BUMP_ORDER == ("none", "patch", "minor", "major")
    assert bump_rank("major") > bump_rank("minor")
    from xcompat.gate import versions
    from xcompat.report import model

    assert versions.BUMP_ORDER is BUMP_ORDER and versions.bump_rank is bump_rank
    assert model.Bump is __import__("xcompat.results.status", fromlist=["Bump"]).Bump
    assert list(model.BUMP_ORDER) == list(BUMP_ORDER)


def test_kernels_skipped_for_a_project_without_torch_is_not_red():
    cell = make_cell()
    results = [*_passing(cell.id), stage_result("kernels", cell.id, "skipped", "No module named 'torch'")]
    report = build_report(results, make_plan([cell]), project=NO_TORCH, settings=defaults_settings())
    assert report.conclusion == "success"
    shown = next(s for s in report.cells[0].stages if s.kind == "kernels")
    assert shown.status == "skipped" and "does not use torch" in shown.summary


def test_kernels_failed_is_red_even_without_torch():
    # The false green seen: kernels exited 1 ("No module named 'torch'") and the report said success.
    cell = make_cell()
    results = [*_passing(cell.id), stage_result("kernels", cell.id, "failed", "No module named 'torch'")]
    report = build_report(results, make_plan([cell]), project=NO_TORCH)
    assert report.conclusion == "failure"
    assert any("kernels failed" in p for p in report.problems)


def test_kernels_skipped_is_red_when_the_project_uses_torch():
    cell = make_cell()
    results = [*_passing(cell.id), stage_result("kernels", cell.id, "skipped", "no device")]
    report = build_report(results, make_plan([cell]), project=TORCH)
    assert report.conclusion == "failure"


def test_tests_kernels_none_makes_kernels_not_required():
    m = load_matrix(b"xcompat: 1\nrepo: a/b\nserial: 1\npython: ['3.12']\nplatforms: {linux: {archs: [x86_64]}}\n"
                    b"backends: {cpu: {required: true}}\ntests: {kernels: none}\n")
    settings = resolve_settings(m)
    req = required_stages(make_cell(), settings, TORCH)
    assert req["kernels"].required is False and "tests.kernels: none" in req["kernels"].reason


def test_no_tests_found_is_red():
    # The false green seen: "PROJECT/tests does not exist", test stage skipped, report green.
    cell = make_cell()
    results = [stage_result("build", cell.id), stage_result("test", cell.id, "skipped", "no tests were collected")]
    report = build_report(results, make_plan([cell]), project=NO_TORCH)
    assert report.conclusion == "failure"
    assert any("no tests were collected" in p for p in report.problems)


def test_a_required_stage_without_a_result_is_red_when_the_project_is_known():
    cell = make_cell()
    report = build_report([stage_result("build", cell.id)], make_plan([cell]), project=NO_TORCH)
    assert report.conclusion == "failure"
    assert report.cells[0].status == "missing" and "no test result" in report.cells[0].reason


def test_optional_cuda_cell_on_a_required_backend_agrees_in_report_and_gate():
    """An optional CUDA cell, gate.required-backends [cpu, cuda], a fallback result: both say red."""
    cpu, cuda = make_cell(), make_cell(backend="cuda", toolkit="12.8", required=False)
    plan = make_plan([cpu, cuda])
    plan["settings"] = {"gate": {"tag_pattern": "v*", "required_backends": ["cpu", "cuda"]}}
    docs = [*_passing(cpu.id), *_passing(cuda.id), stage_result("kernels", cuda.id, "fallback", "ran on cpu")]
    report = build_report(docs, plan)
    assert report.conclusion == "failure"
    assert next(c for c in report.cells if c.id == cuda.id).required is True
    gate_cells = [{"id": cpu.id, "required": True, "backend": "cpu"},
                  {"id": cuda.id, "required": False, "backend": "cuda"}]
    checks, verdict = check_cells(gate_cells, _envelopes(*docs),
                                  settings=defaults_settings(required_backends=("cpu", "cuda")))
    assert not all(c.passed for c in checks)
    assert {v.id: v.status for v in verdict.cells} == {c.id: c.status for c in report.cells}


@pytest.mark.parametrize("status", ["failed", "crashed", "fallback", "skipped"])
def test_report_and_gate_agree_on_every_status(status):
    a = make_cell()
    docs = [stage_result("build", a.id), make_test_result(a.id, [make_test("t.py::x")], status=status)]
    report = build_report(docs, make_plan([a]))
    checks, verdict = check_cells([{"id": a.id, "required": True, "backend": "cpu"}], _envelopes(*docs))
    assert report.conclusion == "failure" and not checks[0].passed
    assert verdict.cells[0].status == report.cells[0].status == status


def test_is_required_is_the_cell_flag_or_a_required_backend():
    s = defaults_settings(required_backends=("cuda",))
    assert is_required({"required": True, "backend": "cpu"}, None)
    assert not is_required({"required": False, "backend": "cpu"}, s)
    assert is_required({"required": False, "backend": "cuda"}, s)
    assert is_required(replace(make_cell(required=False), backend="cuda"), s)


def test_envelope_is_strict_and_names_the_place():
    with pytest.raises(InputError, match=r"\$\.status: 'green' is not one of"):
        parse_envelope({"version": 1, "kind": "test", "cell_id": "c", "status": "green"}, "r.json")
    document = make_test_result("c", [make_test("t.py::x")])
    document["tests"][0]["outcome"] = "ok"
    with pytest.raises(InputError, match=r"r\.json: \$\.tests\[0\]\.outcome: expected one of"):
        build_report([parse_envelope(document, "r.json")])


def test_judge_without_a_plan_takes_cells_from_results():
    verdict = judge(_envelopes(*_passing("py3.12-linux-x86_64-cpu")), None)
    assert verdict.conclusion == "success" and verdict.cells[0].planned is True


def test_project_facts_of_the_sample_say_it_uses_torch():
    from xcompat.resources import data_dir

    assert project_facts(data_dir("examples") / "sample-ext-v2").uses_torch is True


# -- a cell's job may report only its own cell ---------------------------------------------------

def _at(doc, source):
    return parse_envelope(doc, source)


def _two_cells():
    a, b = make_cell("3.12"), make_cell("3.12", backend="cuda")
    return a, b, [c.to_dict() for c in (a, b)]


@pytest.mark.parametrize("layout", [
    "results/xcompat-results-{a}-test/{b}/test.json",  # GitHub: one folder per artifact
    ".xcompat-out/results/{a}/{b}/test.json",  # GitLab: the job's own results/<cell>/ folder
])
def test_a_result_for_another_cell_in_a_cells_folder_is_not_counted_and_is_red(layout):
    # The cuda cell never ran; cell a's job (the project's own tests) planted a passing result for it.
    a, b, cells = _two_cells()
    own = [_at(stage_result("build", a.id), f"results/xcompat-results-{a.id}-build/{a.id}/build.json"),
           _at(make_test_result(a.id, [make_test("tests/t.py::x")]), f"results/xcompat-results-{a.id}-test/{a.id}/test.json")]
    forged = _at(make_test_result(b.id, [make_test("tests/t.py::x")]), layout.format(a=a.id, b=b.id))
    verdict = judge([*own, forged], cells)
    assert verdict.conclusion == "failure"
    by_id = {c.id: c for c in verdict.cells}
    assert by_id[a.id].status == "passed" and by_id[b.id].status == "missing"
    assert any(f"result for cell {b.id} in the folder of cell {a.id}" in p for p in verdict.problems), verdict.problems


def test_results_in_their_own_cells_folders_are_counted():
    a, _b, cells = _two_cells()
    results = [_at(stage_result("build", a.id), f"results/xcompat-results-{a.id}-build/{a.id}/build.json"),
               _at(make_test_result(a.id, [make_test("tests/t.py::x")]), f".xcompat-out/results/{a.id}/test.json")]
    verdict = judge(results, cells[:1])
    assert verdict.conclusion == "success", verdict.problems


def test_ownership_needs_a_plan_and_a_named_cell():
    a, b, cells = _two_cells()
    loose = _at(make_test_result(b.id, [make_test("tests/t.py::x")]), f"results/{a.id}/test.json")
    assert not any("folder of cell" in p for p in judge([loose], None).problems)  # no plan: no cell ids known
    top = _at(stage_result("abi", None), "results/abi.json")  # a run-level result outside every cell folder
    assert judge([top, *(_at(d, f"results/{a.id}/{d['kind']}.json") for d in _passing(a.id))], cells[:1]).green


@pytest.mark.parametrize("layout", ["results/xcompat-results-{a}-test/coverage.json", "results/{a}/cov/coverage.json"])
def test_a_run_level_result_in_a_cells_folder_is_not_counted_and_is_red(layout):
    # The merged (cell-less) coverage result is the one the report shows; a cell's job could plant
    # one with a figure of its choosing next to its own results.
    from tests.helpers.report import coverage_result

    a, _b, cells = _two_cells()
    own = [_at(d, f"results/{a.id}/{d['kind']}.json") for d in _passing(a.id)]
    real = _at(coverage_result(41.0), "results/coverage/coverage.json")
    planted = _at(coverage_result(99.0), layout.format(a=a.id))
    verdict = judge([*own, real, planted], cells[:1])
    assert verdict.conclusion == "failure"
    assert verdict.global_results == (real,)
    assert any(f"a run-level coverage result (for no cell) in the folder of cell {a.id}" in p
               for p in verdict.problems), verdict.problems
    report = build_report([*own, real, planted], plan=make_plan([make_cell("3.12")]))
    assert report.coverage is not None and report.coverage.percent == 41.0
    assert report.conclusion == "failure"


def test_owning_cell_reads_the_outermost_cell_folder():
    from xcompat.results.verdict import owning_cell

    ids = ["py3.12-linux-x86_64-cpu", "py3.12-linux-x86_64-cuda"]
    assert owning_cell("r/xcompat-results-py3.12-linux-x86_64-cpu-test/py3.12-linux-x86_64-cuda/t.json", ids) == ids[0]
    assert owning_cell("r/py3.12-linux-x86_64-cpu/py3.12-linux-x86_64-cuda/t.json", ids) == ids[0]
    assert owning_cell("r/xcompat-results-unknown-test/t.json", ids) is None
    assert owning_cell("py3.12-linux-x86_64-cpu", ids) is None  # a file, not a folder
