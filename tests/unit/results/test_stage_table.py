"""One table of stage kinds (``xcompat.results.stages.STAGES``): what it says is what the results
model, the verdict, the report and the gate do, and a kind registered there alone goes through
all of them."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.action import envelope, plan_document, write

from xcompat.commands.gate import configure_parser
from xcompat.errors import InputError
from xcompat.gate import GateRequest, decision_document, evaluate_gate
from xcompat.report import render
from xcompat.report.display import stage_text
from xcompat.report.folder import report_from_folder
from xcompat.resources import schema_path
from xcompat.results.collect import load_results
from xcompat.results.envelope import KIND_PATTERN, StageResult
from xcompat.results.stages import STAGES, StageKind, StageRequirement
from xcompat.results.verdict import judge
from xcompat.settings import defaults_settings

CELL = "py3.12-linux-x86_64-cpu"


def test_the_gate_schema_lists_the_kinds_of_the_table() -> None:
    schema = json.loads(schema_path("gate").read_text())
    kinds = schema["properties"]["cells"]["items"]["properties"]["kinds"]["items"]["enum"]
    assert kinds == list(STAGES), "schemas/gate.schema.json: cells[].kinds must list STAGES, in its order"


@pytest.mark.parametrize("name", list(STAGES))
def test_each_kind_names_its_schemas_and_a_safe_file(name: str) -> None:
    kind = STAGES[name]
    assert kind.name == name and KIND_PATTERN.fullmatch(name)  # a kind becomes a file name in a bundle
    for schema in kind.schemas:
        document = json.loads(schema_path(schema).read_text())
        assert document["properties"]["kind"] == {"const": name}, schema
    assert not Path(kind.result_file).is_absolute() and ".." not in Path(kind.result_file).parts
    assert kind.demanded is None or kind.requirement is not None  # a missing result needs a reason


# -- a kind registered in the table alone ---------------------------------------------------------


def _lint_problems(result: StageResult) -> list[Any]:
    problems = result.data.get("problems", [])
    if not isinstance(problems, list):
        raise InputError(f"$.problems: expected a list, got {problems!r}", file=result.source)
    return problems


def _lint_status(document: Mapping[str, Any]) -> str | None:
    return "failed" if document.get("problems") else None


def _required(settings: Any, project: Any) -> StageRequirement:
    return StageRequirement(kind="lint", required=True, reason="the project lints clean")


LINT = StageKind(name="lint", result_file="lint.json", per_cell=True, schemas=(), checks=(_lint_problems,),
                 items="problems", status_of_items=_lint_status, requirement=_required, demanded="settings")


@pytest.fixture
def register() -> Iterator[Any]:
    """Put a kind into the table before ``before`` (in display order); the table is restored after."""
    saved = dict(STAGES)

    def put(kind: StageKind, before: str) -> None:
        items = [(n, k) for n, k in saved.items() if n != kind.name]
        at = [n for n, _ in items].index(before)
        STAGES.clear()
        STAGES.update([*items[:at], (kind.name, kind), *items[at:]])

    yield put
    STAGES.clear()
    STAGES.update(saved)


def _folder(tmp_path: Path, lint: dict[str, Any]) -> Path:
    folder = tmp_path / "run"
    write(folder / "plan.json", plan_document((CELL, True)))
    write(folder / "results" / "build.json", envelope("build", CELL, "passed"))
    write(folder / "results" / "test.json", envelope("test", CELL, "passed", "3 passed",
                                                     tests=[{"nodeid": "t.py::x", "outcome": "passed"}]))
    write(folder / "results" / "lint.json", lint)
    return folder


def _gate(folder: Path, *require: str) -> dict[str, Any]:
    request = GateRequest(plan=folder / "plan.json", results=(folder / "results",), require_kinds=require,
                          insecure_no_verify=True)
    return decision_document(evaluate_gate(request, {}))


def test_a_registered_kind_is_read_judged_reported_and_gated(tmp_path: Path, register: Any) -> None:
    register(LINT, before="test")
    folder = _folder(tmp_path, envelope("lint", CELL, "passed", "lint ran", problems=["E501 x.py:3"]))

    # loading: its readers check its fields, and its items decide its status
    [lint] = [r for r in load_results([folder / "results"]).results if r.kind == "lint"]
    assert lint.status == "failed" and lint.summary.startswith("its status says passed, but its problems say failed")
    write(tmp_path / "bad" / "lint.json", envelope("lint", CELL, "passed", problems="E501"))
    [refused] = load_results([tmp_path / "bad"]).results
    assert refused.refused and "$.problems: expected a list" in refused.summary

    # the verdict, the report (its place among the cell's stages) and the gate
    _, report = report_from_folder([folder])
    assert report.conclusion == "failure"
    [cell] = report.cells
    assert stage_text(cell) == "lint ❌ · tests ✅ 1/1"  # build is quiet; lint comes before test, as registered
    assert "lint ❌ · tests ✅ 1/1" in render(report, "markdown")
    document = _gate(folder)
    assert document["allowed"] is False
    assert [c["kinds"] for c in document["cells"]] == [["build", "lint", "test"]]

    # a required kind without a result: missing where the settings ask for it, as the gate's --require-kind
    (folder / "results" / "lint.json").unlink()
    verdict = judge(load_results([folder / "results"]).results, [{"id": CELL}], settings=defaults_settings())
    assert verdict.cells[0].status == "missing" and "no lint result" in verdict.cells[0].reason
    assert judge(load_results([folder / "results"]).results, [{"id": CELL}]).green  # nothing asks for it
    assert _gate(folder, "lint")["allowed"] is False
    parser = argparse.ArgumentParser()
    configure_parser(parser)
    assert parser.parse_args(["--require-kind", "lint"]).require_kinds == ["lint"]


def test_an_informational_kind_that_was_skipped_is_not_red(tmp_path: Path, register: Any) -> None:
    register(StageKind(name="lint", result_file="lint.json", per_cell=True, schemas=()), before="abi")
    folder = _folder(tmp_path, envelope("lint", CELL, "skipped", "no linter configured"))
    loaded, report = report_from_folder([folder])
    assert report.conclusion == "success", report.problems
    assert [s.kind for s in report.cells[0].stages if s.kind == "lint"] == ["lint"]
    assert _gate(folder)["allowed"] is True
    verdict = judge(loaded.results, [{"id": CELL}], settings=defaults_settings())
    assert [s.reason for s in verdict.cells[0].stages if s.result.kind == "lint"] == ["lint is informational"]
    # failed, it is red like any result
    write(folder / "results" / "lint.json", envelope("lint", CELL, "failed", "3 problems"))
    assert report_from_folder([folder])[1].conclusion == "failure"


def test_a_kind_not_in_the_table_is_shown_but_not_gated(tmp_path: Path) -> None:
    folder = _folder(tmp_path, envelope("lint", CELL, "failed", "3 problems"))
    _, report = report_from_folder([folder])
    assert [r.kind for r in report.other] == ["lint"]  # listed among the other results
    assert _gate(folder)["allowed"] is True  # the gate counts the stage kinds of the table only
