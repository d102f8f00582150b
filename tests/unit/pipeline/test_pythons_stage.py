"""The pythons stage's bookkeeping: which cells it takes on, and how the plan records them."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from xcompat.pipeline.local import python_tag
from xcompat.pipeline.stages import pythons


def _elsewhere(cell_id: str, python: str, *, only_python: bool) -> dict[str, Any]:
    cell: dict[str, Any] = {"id": cell_id, "required": True, "why": f"Python {python} (this is {python_tag()})"}
    if only_python:
        cell.update(python=python, only_python=True, frameworks={"torch": "2.5"})
    return cell


def test_only_cells_kept_away_by_their_python_alone_are_taken_on():
    plan = {"cells": [{"id": "here"}], "not_run_here": [
        _elsewhere("py3.99-linux", "3.99", only_python=True),
        _elsewhere("py3.99-macos", "3.99", only_python=False),  # another platform too: CI's
    ]}
    assert pythons.other_pythons(plan) == {"3.99": [plan["not_run_here"][0]]}


def test_cells_that_ran_join_the_plan_and_the_rest_say_why():
    plan = {"cells": [{"id": "here"}], "not_run_here": [
        _elsewhere("py3.98-linux", "3.98", only_python=True), _elsewhere("py3.99-linux", "3.99", only_python=True),
        _elsewhere("py3.99-macos", "3.99", only_python=False)]}
    context = SimpleNamespace(cells=[{"id": "here"}])
    outcomes = [pythons._Outcome(python="3.98", cells=[{"id": "py3.98-linux", "python": "3.98"}], detail="ran"),
                pythons._Outcome(python="3.99", cells=[], detail=f"Python 3.99: {pythons.NOT_HERE}")]
    pythons._join(context, plan, outcomes)  # type: ignore[arg-type]
    assert [c["id"] for c in plan["cells"]] == ["here", "py3.98-linux"]
    assert [c["id"] for c in context.cells] == ["here", "py3.98-linux"]
    why = {c["id"]: c["why"] for c in plan["not_run_here"]}
    assert why["py3.99-linux"] == f"Python 3.99: {pythons.NOT_HERE}"
    assert why["py3.99-macos"].startswith("Python 3.99 (this is")  # kept as the plan said


def test_the_newest_version_of_each_framework_is_installed_for_a_child():
    cells = [{"frameworks": {"torch": "2.5", "numpy": "2.1"}}, {"frameworks": {"torch": "2.13"}}]
    assert pythons._frameworks(cells) == {"torch": "2.13", "numpy": "2.1"}
