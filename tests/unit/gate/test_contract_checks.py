"""The release gate's check of the python floor, a result of no cell: judged by its matrix key."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from xcompat.gate.cell_checks import check_cells
from xcompat.results.envelope import parse_envelope
from xcompat.settings import defaults_settings


def _settings(**modes: Any) -> Any:
    base = defaults_settings()
    return replace(base, tests=replace(base.tests, pytest_paths=()), contracts=replace(base.contracts, **modes))


def _results(floor_findings: list[dict[str, Any]]) -> list[Any]:
    build = parse_envelope({"version": 1, "kind": "build", "cell_id": "c1", "status": "passed", "summary": ""},
                           "c1/build.json")
    floor = parse_envelope({"version": 1, "kind": "contracts-python-floor", "cell_id": None,
                            "status": "failed" if floor_findings else "passed", "summary": "floor",
                            "findings": floor_findings}, "project/contracts-python-floor.json")
    return [build, floor]


CELLS = [{"id": "c1", "required": True}]
FOUND = [{"code": "above-requires-python", "message": "m.py:2: pattern matching requires 3.10"}]


def _floor_check(checks: list[Any]) -> Any:
    return next(c for c in checks if c.name == "contracts:python-floor")


def test_under_gate_a_floor_finding_refuses_the_release() -> None:
    checks, _ = check_cells(CELLS, _results(FOUND), settings=_settings(python_floor="gate"))
    check = _floor_check(checks)
    assert not check.passed and "contracts.python-floor: gate" in check.reason
    assert all(c.passed for c in checks if c.name != "contracts:python-floor")


def test_under_report_it_passes_and_says_what_it_found() -> None:
    checks, _ = check_cells(CELLS, _results(FOUND), settings=_settings())
    check = _floor_check(checks)
    assert check.passed and "got failed: floor" in check.reason and "report" in check.reason
    clean, _ = check_cells(CELLS, _results([]), settings=_settings(python_floor="gate"))
    assert _floor_check(clean).passed
