"""The gate reads the plan with the report's reader and shows the report's verdict as it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.helpers.action import envelope, plan_document, write

from xcompat.errors import InputError
from xcompat.gate import GateRequest, decision_document, evaluate_gate
from xcompat.jsonio import validate
from xcompat.report import build_report
from xcompat.results import judge
from xcompat.results.collect import load_results

CELL = "py3.12-linux-x86_64-cpu"
OPTIONAL = "py3.12-linux-x86_64-cuda12.8"
STRAY = "py3.9-linux-x86_64-cpu"
NOT_VERIFIED = ("the matrix was not verified (--insecure-no-verify): the plan's cells and settings "
                "were judged as they are")
# What judge() says of results for a cell the plan does not list; the gate once rewrote it.
PHRASE = "which the plan does not list"


def _passing(folder: Path, cell: str) -> None:
    write(folder / "results" / cell / "build.json", envelope("build", cell, "passed"))
    write(folder / "results" / cell / "test.json", envelope("test", cell, "passed", "9 passed"))


def _gate(folder: Path) -> dict:
    """gate.json of an insecure gate over FOLDER's plan.json and results/ (schema-checked)."""
    request = GateRequest(plan=folder / "plan.json", results=(folder / "results",), insecure_no_verify=True)
    document = decision_document(evaluate_gate(request, {}))
    validate("gate", document)
    return document


def test_judges_texts_reach_gate_json_unedited(tmp_path: Path) -> None:
    plan = plan_document((CELL, True), (OPTIONAL, False))
    write(tmp_path / "plan.json", plan)
    _passing(tmp_path, CELL)
    # an optional cell whose failure summary holds the phrase, and results for a cell the plan does not list
    write(tmp_path / "results" / OPTIONAL / "test.json",
          envelope("test", OPTIONAL, "failed", f"2 tests {PHRASE} failed"))
    write(tmp_path / "results" / "stray" / "test.json", envelope("test", STRAY, "failed"))
    said = judge(load_results([tmp_path / "results"]).results, plan["cells"]).warnings
    unplanned = [w for w in said if w.startswith(f"1 result(s) for {STRAY}, {PHRASE}")]
    assert len(unplanned) == 1

    document = _gate(tmp_path)
    assert document["allowed"] is True
    assert unplanned[0] in document["warnings"]  # word for word as judge() wrote it
    # every other warning is the gate's own framing; none is an edited copy of judge()'s
    assert set(document["warnings"]) - set(said) == {NOT_VERIFIED}, document["warnings"]
    assert {c["id"]: c["status"] for c in document["cells"]} == {CELL: "passed", OPTIONAL: "failed"}


@pytest.mark.parametrize(
    ("plan", "where"),
    [
        ({"version": 1, "cells": [{"cell": CELL, "required": True, "backend": "cpu"}]}, "$.cells[0]"),
        # `xcompat matrix plan --format github`: a strategy.matrix, not the plan the gate judges
        ({"version": 1, "format": "github", "matrix": {"include": [{"cell": CELL, "required": True}]}}, '"cells"'),
    ],
)
def test_a_plan_without_cell_ids_is_refused_in_one_line(tmp_path: Path, plan: dict, where: str) -> None:
    write(tmp_path / "plan.json", plan)
    _passing(tmp_path, CELL)
    with pytest.raises(InputError) as refused:
        _gate(tmp_path)
    text = str(refused.value)
    assert refused.value.exit_code == 2 and refused.value.file == str(tmp_path / "plan.json")
    assert "\n" not in text and where in text, text


def test_a_plan_cell_that_does_not_say_required_is_required_by_report_and_gate(tmp_path: Path) -> None:
    plan = plan_document((CELL, True), (OPTIONAL, True))
    del plan["cells"][1]["required"]
    write(tmp_path / "plan.json", plan)
    _passing(tmp_path, CELL)
    document = _gate(tmp_path)
    check = next(c for c in document["checks"] if c["name"] == f"cell:{OPTIONAL}")
    assert document["allowed"] is False and check["reason"].startswith("got no result")
    report = build_report(load_results([tmp_path / "results"]).results, json.loads((tmp_path / "plan.json").read_text()))
    assert report.conclusion == "failure"
    assert {c.id: c.required for c in report.cells} == {c["id"]: c["required"] for c in document["cells"]}
