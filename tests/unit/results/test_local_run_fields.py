"""Fields only a local run writes: the plan's cells its machine cannot run (``not_run_here``) and
a test result's ``not_run`` count. Both are read where results are loaded, refused when malformed,
and neither changes the verdict: the cells are listed, never judged."""

from __future__ import annotations

from typing import Any

import pytest
from tests.helpers.report import make_cell, make_plan, make_test, make_test_result

from xcompat.errors import InputError
from xcompat.report import render
from xcompat.report.aggregate import build_report
from xcompat.results.collect import check_plan
from xcompat.results.envelope import parse_envelope


def _plan_with(elsewhere: Any) -> dict[str, Any]:
    plan = make_plan([make_cell("3.12")])
    plan["not_run_here"] = elsewhere
    return plan


@pytest.mark.parametrize("elsewhere, said", [
    ({"id": "x"}, "expected a list"),
    (["py3.13-linux-x86_64-cpu"], 'needs a string "id"'),
    ([{"id": "::add-mask::x", "required": True, "why": "w"}], "not_run_here[0].id"),
    ([{"id": "py3.13-linux-x86_64-cpu", "required": "yes", "why": "w"}], '"required" (true or false)'),
    ([{"id": "py3.13-linux-x86_64-cpu", "required": True, "why": 3}], '"why" (a string)'),
    ([{"id": "py3.12-linux-x86_64-cpu", "required": True, "why": "w"}], "also a cell of the plan"),
])
def test_a_malformed_not_run_here_list_is_refused_naming_its_place(elsewhere: Any, said: str) -> None:
    with pytest.raises(InputError) as caught:
        check_plan(_plan_with(elsewhere), "plan.json")
    assert said in str(caught.value) and "plan.json" in caught.value.location()


def test_cells_not_run_here_are_listed_and_do_not_change_the_verdict() -> None:
    cell = make_cell("3.12")
    result = make_test_result(cell.id, [make_test("tests/test_a.py::test_x")])
    plan = _plan_with([{"id": "py3.13-linux-x86_64-cpu", "required": True, "why": "Python 3.13 (this is 3.12)"},
                       {"id": "py3.13-linux-aarch64-cpu", "required": False, "why": "linux/aarch64"}])
    check_plan(plan, "plan.json")
    report = build_report([result], plan)
    assert report.conclusion == "success"
    assert [c.id for c in report.not_run_here] == ["py3.13-linux-x86_64-cpu", "py3.13-linux-aarch64-cpu"]
    markdown = render(report, "markdown")
    assert "all 1 required cells passed here; 1 more required cell not run here" in markdown.splitlines()[0]
    assert "Python 3.13 (this is 3.12)" in markdown
    assert render(report, "json").count("py3.13-linux-aarch64-cpu") == 1
    # The same results without the list (a CI plan): no such words.
    plain = build_report([result], make_plan([cell]))
    assert "not run here" not in render(plain, "markdown")


@pytest.mark.parametrize("value", [-1, "3", 2.5, True])
def test_a_test_results_not_run_count_must_be_a_count(value: Any) -> None:
    document = make_test_result("py3.12-linux-x86_64-cpu", [make_test("tests/test_a.py", "error")])
    document["not_run"] = value
    with pytest.raises(InputError) as caught:
        parse_envelope(document, "test.json")
    assert "$.not_run" in str(caught.value)
