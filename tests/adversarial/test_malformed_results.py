"""A cell's job runs the project's code, which can write anything into the result file its job uploads.
Through the real CLI, with a table of malformed results (every field of a test item with the wrong
type, broken envelopes, hostile kinds, truncated, deeply nested and 50 MB files):

* `xcompat report` and `xcompat gate` over a results folder never stop at one bad result: it is
  refused, its cell is red with `result refused: FILE: why`, and the other cell is still reported;
* the same file named directly is exit 2 with one line naming the file, the JSON place and what to
  do; never a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.report import make_cell, make_plan, make_test, make_test_result, stage_result

BAD = make_cell("3.12")  # the cell whose job wrote the malformed result
GOOD = make_cell("3.13")
BAD_FILE = f"results/{BAD.id}/test.json"
WHAT_TO_DO = "rerun the stage that wrote it, or remove the file"


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith(("GITHUB_", "GITLAB", "CI_"))}
    return subprocess.run([sys.executable, "-m", "xcompat", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


def _test_result(**item: Any) -> dict[str, Any]:
    doc = make_test_result(BAD.id, [make_test("tests/test_ops.py::test_add")])
    doc["tests"][0].update(item)
    return doc


def _without(key: str) -> dict[str, Any]:
    doc = make_test_result(BAD.id, [make_test("tests/test_ops.py::test_add")])
    del doc[key]
    return doc


def _nested(depth: int) -> str:
    doc = make_test_result(BAD.id, [])
    return json.dumps(doc).replace('"tests": []', '"tests": ' + "[" * depth + "]" * depth)


def _fifty_megabytes() -> str:
    return json.dumps(_test_result(outcome=[], output_tail="x" * (50 * 1024 * 1024)))


def _text(doc: Any) -> str:
    return doc if isinstance(doc, str) else json.dumps(doc)


# name -> (the file's contents, what the refusal names)
CASES: dict[str, tuple[Callable[[], Any], str]] = {
    "outcome-list": (lambda: _test_result(outcome=[]), "$.tests[0].outcome"),
    "outcome-dict": (lambda: _test_result(outcome={"passed": True}), "$.tests[0].outcome"),
    "outcome-int": (lambda: _test_result(outcome=1), "$.tests[0].outcome"),
    "outcome-null": (lambda: _test_result(outcome=None), "$.tests[0].outcome"),
    "nodeid-list": (lambda: _test_result(nodeid=["tests/test_ops.py", "test_add"]), "$.tests[0].nodeid"),
    "nodeid-empty": (lambda: _test_result(nodeid=""), "$.tests[0].nodeid"),
    "duration-string": (lambda: _test_result(duration_s="1.5"), "$.tests[0].duration_s"),
    "message-number": (lambda: _test_result(message=5), "$.tests[0].message"),
    "output-tail-list": (lambda: _test_result(output_tail=["a"]), "$.tests[0].output_tail"),
    "crash-string": (lambda: _test_result(outcome="crashed", crash="SIGSEGV"), "$.tests[0].crash"),
    "crash-traceback-number": (lambda: _test_result(outcome="crashed", crash={"traceback": 11}),
                               "$.tests[0].crash.traceback"),
    "tests-object": (lambda: {**_test_result(), "tests": {"0": {}}}, "$.tests"),
    "test-item-string": (lambda: {**_test_result(), "tests": ["tests/test_ops.py::test_add"]}, "$.tests[0]"),
    "status-list": (lambda: {**_test_result(), "status": ["passed"]}, "$.status"),
    "status-unknown": (lambda: {**_test_result(), "status": "green"}, "$.status"),
    "summary-object": (lambda: {**_test_result(), "summary": {"text": "ok"}}, "$.summary"),
    "version-string": (lambda: {**_test_result(), "version": "1"}, "unsupported result version"),
    "cell-id-list": (lambda: {**_test_result(), "cell_id": [BAD.id]}, "$.cell_id"),
    "cell-id-line-break": (lambda: {**_test_result(), "cell_id": BAD.id + "\nBASH_ENV=/tmp/x"}, "$.cell_id"),
    "kind-missing": (lambda: _without("kind"), "$.kind"),
    "kind-list": (lambda: {**_test_result(), "kind": ["test"]}, "$.kind"),
    "kind-path": (lambda: {**_test_result(), "kind": "x/../../PWNED"}, "$.kind"),
    "kind-empty": (lambda: {**_test_result(), "kind": ""}, "$.kind"),
    "kernels-status-list": (lambda: stage_result("kernels", BAD.id, "passed", kernels=[
        {"name": "add", "status": [], "cases": []}]), "$.kernels[0].status"),
    "abi-bump-list": (lambda: stage_result("abi", BAD.id, "passed", findings=[{"required_bump": []}]),
                      "$.findings[0].required_bump"),
    "build-cell-id-list": (lambda: stage_result("build", BAD.id, "passed", cells=[{"id": [], "status": "passed"}]),
                           "$.cells[0]"),
    "coverage-percent-string": (lambda: stage_result("coverage", BAD.id, "passed", totals={"percent": "90"}),
                                "$.totals.percent"),
    "deep-nesting": (lambda: _nested(10_000), "nested deeper than the limit"),
    "truncated": (lambda: json.dumps(_test_result())[:150], "invalid JSON"),
    "not-utf8": (lambda: b'{"version": 1, "kind": "test", "status": "\xff"}', "not UTF-8"),
    "50-megabytes": (_fifty_megabytes, "$.tests[0].outcome"),
}


def _workspace(root: Path, contents: Any) -> Path:
    (root / "results" / BAD.id).mkdir(parents=True)
    (root / "results" / GOOD.id).mkdir(parents=True)
    (root / "plan.json").write_text(json.dumps(make_plan([BAD, GOOD])))
    (root / "results" / GOOD.id / "test.json").write_text(
        json.dumps(make_test_result(GOOD.id, [make_test("tests/test_ops.py::test_add")])))
    data = contents if isinstance(contents, bytes) else _text(contents).encode("utf-8")
    (root / BAD_FILE).write_bytes(data)
    return root


def _cells(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in report["cells"]}


@pytest.mark.timeout(240)
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_malformed_result_is_refused_and_the_rest_is_reported(tmp_path: Path, case: str) -> None:
    make, names = CASES[case]
    work = _workspace(tmp_path, make())

    report = _cli(work, "report", "results", "--plan", "plan.json", "--format", "json", "--out", "report.json")
    assert "Traceback" not in report.stderr, report.stderr
    assert report.returncode == 1, report.stderr
    doc = json.loads((work / "report.json").read_text())
    cells = _cells(doc)
    assert cells[GOOD.id]["status"] == "passed"
    bad = cells[BAD.id]
    assert bad["status"] == "failed" and f"result refused: {BAD_FILE}" in bad["reason"], bad
    assert names in bad["reason"] and len(bad["reason"]) < 1000
    assert doc["conclusion"] == "failure"

    gate = _cli(work, "gate", "--insecure-no-verify", "--plan", "plan.json", "--results", "results",
                "--out", "gate.json")
    assert "Traceback" not in gate.stderr, gate.stderr
    assert gate.returncode == 1, gate.stderr
    checks = {c["name"]: c for c in json.loads((work / "gate.json").read_text())["checks"]}
    assert checks["results"]["passed"] is False and names in checks["results"]["reason"]
    assert checks[f"cell:{BAD.id}"]["passed"] is False and checks[f"cell:{GOOD.id}"]["passed"] is True

    direct = _cli(work, "report", BAD_FILE, "--out", "direct.md")
    assert "Traceback" not in direct.stderr, direct.stderr
    assert direct.returncode == 2, direct.stderr
    lines = [ln for ln in direct.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and BAD_FILE in lines[0] and names in lines[0], lines
    assert WHAT_TO_DO in lines[0] or "use the same xcompat version for every stage" in lines[0], lines
    assert not (work / "direct.md").exists()
    assert not list(tmp_path.rglob("*PWNED*"))


def test_json_that_is_not_a_result_is_noted_and_a_result_of_an_unknown_kind_is_shown(tmp_path: Path) -> None:
    """Not refused: a JSON file that is no result at all (a tool's own output) is listed as ignored,
    a well-formed result of a kind xcompat has no reader for is shown as it is."""
    work = _workspace(tmp_path, [1, 2])
    (work / "results" / GOOD.id / "device.json").write_text(json.dumps(stage_result("device-check", GOOD.id)))
    report = _cli(work, "report", "results", "--plan", "plan.json", "--format", "json", "--out", "report.json")
    assert report.returncode == 1 and "Traceback" not in report.stderr, report.stderr
    doc = json.loads((work / "report.json").read_text())
    cells = _cells(doc)
    assert cells[GOOD.id]["status"] == "passed" and "device-check" in {s["kind"] for s in cells[GOOD.id]["stages"]}
    assert cells[BAD.id]["status"] == "missing" and not any("result refused" in p for p in doc["problems"])
    assert any(BAD_FILE in n and "ignored" in n for n in doc["notes"]), doc["notes"]

    direct = _cli(work, "report", BAD_FILE)
    lines = [ln for ln in direct.stderr.splitlines() if ln.strip()]
    assert direct.returncode == 2 and "Traceback" not in direct.stderr
    assert len(lines) == 1 and BAD_FILE in lines[0] and "expected a JSON object" in lines[0] and WHAT_TO_DO in lines[0]


def test_a_refused_result_stays_red_through_the_report_bundle(tmp_path: Path) -> None:
    """The read-only run writes a report bundle that the privileged workflow_run job reads again:
    the refusal is in it as a failed result, not dropped on the second reading."""
    work = _workspace(tmp_path, _test_result(outcome=[]))
    first = _cli(work, "report", "results", "--plan", "plan.json", "--gitlab", "--no-comment",
                 "--bundle-dir", "bundle", "--out", "first.md")
    assert first.returncode == 1 and "Traceback" not in first.stderr, first.stderr
    second = _cli(work, "report", "--from-artifact", "bundle", "--format", "json", "--out", "second.json")
    assert second.returncode == 1 and "Traceback" not in second.stderr, second.stderr
    doc = json.loads((work / "second.json").read_text())
    assert doc["conclusion"] == "failure"
    assert any("result refused: " in p and "$.tests[0].outcome" in p for p in doc["problems"]), doc["problems"]
    assert _cells(doc)[GOOD.id]["status"] == "passed"
