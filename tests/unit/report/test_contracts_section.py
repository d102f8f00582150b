"""The report's contracts section: each result per cell and the python floor once, in every
renderer, with text from the results escaped; runtime libraries compared between cells."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from xcompat.jsonio import validate
from xcompat.report import build_report, render
from xcompat.results.envelope import parse_envelope
from xcompat.settings import defaults_settings

PLAN = {"version": 1, "cells": [{"id": "c1", "required": True}, {"id": "c2", "required": True}]}
HOSTILE = "<script>alert(1)</script> @someone | `tick`"


def _doc(kind: str, cell: str | None, findings: list[dict[str, Any]], **extra: Any) -> Any:
    return parse_envelope({"version": 1, "kind": kind, "cell_id": cell, "status": "failed" if findings else "passed",
                           "summary": f"{len(findings)} findings", "findings": findings, **extra}, f"{cell}/{kind}.json")


def _lib(name: str, owner: str, build_id: str) -> dict[str, Any]:
    return {"path": f"/site/{name}", "soname": name, "build_id": build_id, "owner": owner}


def _results() -> list[Any]:
    common = [_lib("libgomp.so.1", "distribution", "aa"), _lib("libpython3.11.so.1.0", "interpreter", "p1")]
    return [
        *(_doc("build", c, []) for c in ("c1", "c2")),
        _doc("contracts-runtime-libraries", "c1", [], libraries=common),
        _doc("contracts-runtime-libraries", "c2", [{"code": "duplicate-runtime", "message": HOSTILE}],
             libraries=[*common[:1], _lib("libiomp5.so", "distribution", "bb"),
                        _lib("libpython3.12.so.1.0", "interpreter", "p2")]),
        _doc("contracts-python-floor", None, [{"code": "above-requires-python", "message": "pkg/m.py:2: match"}]),
    ]


def _settings(**modes: Any) -> Any:
    base = defaults_settings()
    return replace(base, tests=replace(base.tests, pytest_paths=()), contracts=replace(base.contracts, **modes))


def test_each_result_is_shown_per_cell_and_the_floor_once() -> None:
    report = build_report(_results(), PLAN, settings=_settings())
    assert report.conclusion == "success"
    shown = [(e.kind, e.cell_id, e.counted) for e in report.contracts]
    assert shown == [("contracts-runtime-libraries", "c1", True), ("contracts-runtime-libraries", "c2", False),
                     ("contracts-python-floor", None, False)]
    validate("report", report.to_dict())
    text = render(report, "text")
    assert "runtime libraries [c2]: failed (report: shown, never red)" in text
    assert "python floor [the project]: failed" in text and "[above-requires-python] pkg/m.py:2: match" in text


def test_cells_are_compared_by_the_libraries_wheels_bring() -> None:
    report = build_report(_results(), PLAN, settings=_settings())
    c2 = next(e for e in report.contracts if e.cell_id == "c2")
    assert c2.changes == ("against cell c1: adds: libiomp5.so",)  # libpython differs by design: not named
    c1 = next(e for e in report.contracts if e.cell_id == "c1")
    assert c1.changes == ()


def test_untrusted_text_is_escaped_in_markdown_and_html() -> None:
    report = build_report(_results(), PLAN, settings=_settings())
    md = render(report, "markdown")
    assert "### Contracts" in md and "<script>" not in md and "@someone" not in md
    html = render(report, "html")
    assert "<h2>Contracts</h2>" in html and "<script>" not in html and "&lt;script&gt;" in html


def test_under_gate_the_findings_are_failures_of_their_cell_and_of_the_run() -> None:
    report = build_report(_results(), PLAN, settings=_settings(runtime_libraries="gate", python_floor="gate"))
    assert report.conclusion == "failure"
    assert {(f.kind, f.cell_id) for f in report.failures} >= {("contracts-runtime-libraries", "c2"),
                                                              ("contracts-python-floor", None)}
    assert all(e.counted for e in report.contracts)


def test_a_stub_finding_the_abi_diff_claims_is_reported_once_in_ci_results() -> None:
    """In CI the stubs job cannot read the ABI diff: the report and the gate apply the rule. 1.1
    removed ``legacy`` from its C module and its stub still declares it: the ABI diff's
    python_api_removed reports it; the stubs result keeps only ``random_seed`` (stub != runtime),
    and without another finding it no longer fails, even under gate."""
    abi = parse_envelope({"version": 1, "kind": "abi", "cell_id": None, "status": "failed", "summary": "1 gating",
                          "gating": 1, "findings": [{"kind": "python_api_removed", "symbol": "pkg._core.legacy",
                                                     "library": "pkg", "required_bump": "major"}]}, "abi.json")
    legacy = {"code": "missing-at-runtime", "object": "pkg._core.legacy", "message": "legacy is not present"}
    seed = {"code": "missing-at-runtime", "object": "pkg._core.random_seed", "message": "random_seed ..."}
    both = [_doc("build", "c1", []), abi, _doc("contracts-stubs", "c1", [legacy, seed])]
    plan = {"version": 1, "cells": [{"id": "c1", "required": True}]}
    report = build_report(both, plan, settings=_settings(stubs="gate"))
    (stubs,) = report.contracts
    assert [code for code, _ in stubs.findings] == ["missing-at-runtime"] and "random_seed" in stubs.findings[0][1]
    assert stubs.changes == ("pkg._core.legacy: reported by the ABI stage (changed between the releases)",)
    assert stubs.status == "failed" and stubs.counted  # random_seed is still the stubs stage's
    only = [_doc("build", "c1", []), abi, _doc("contracts-stubs", "c1", [legacy])]
    (handed,) = build_report(only, plan, settings=_settings(stubs="gate")).contracts
    assert handed.status == "passed" and handed.findings == ()
    assert [f.kind for f in build_report(only, plan, settings=_settings(stubs="gate")).failures] == ["abi"]


def test_a_gate_result_with_nothing_new_says_why_it_does_not_count() -> None:
    known = _doc("contracts-runtime-libraries", "c1", [{"code": "duplicate-runtime", "message": "two OpenMP"}],
                 new_findings=0, libraries=[])
    plan = {"version": 1, "cells": [{"id": "c1", "required": True}]}
    report = build_report([_doc("build", "c1", []), known], plan, settings=_settings(runtime_libraries="gate"))
    assert report.conclusion == "success"
    assert "failed (gate: not counted (no finding is new against the baseline))" in render(report, "text")
