"""A result file in a folder that does not read, parse or check is refused where results are loaded:
a failed stand-in says why, and the verdict counts it for the cell it belongs to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.helpers.report import make_cell, make_plan, make_test, make_test_result

from xcompat.errors import InputError
from xcompat.results import judge, load_results, parse_envelope

A, B = make_cell("3.12"), make_cell("3.13")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _good(cell) -> str:  # type: ignore[no-untyped-def]
    return json.dumps(make_test_result(cell.id, [make_test("t.py::x")]))


@pytest.mark.parametrize("layout", ["{cell}/test.json", "xcompat-results-{cell}-test/{cell}/test.json"])
def test_a_refused_file_in_a_cells_folder_makes_that_cell_red(tmp_path: Path, layout: str) -> None:
    _write(tmp_path / layout.format(cell=A.id), '{"version": 1, "kind": "test", "cell_id": "' + A.id + '", "sta')
    _write(tmp_path / layout.format(cell=B.id), _good(B))
    loaded = load_results([tmp_path])
    (refused,) = [r for r in loaded.results if r.refused]
    assert refused.status == "failed" and refused.kind == "result" and refused.cell_id is None
    assert refused.summary.startswith(f"result refused: {tmp_path / layout.format(cell=A.id)}:1:")
    verdict = judge(loaded.results, make_plan([A, B])["cells"])
    cells = {c.id: c for c in verdict.cells}
    assert cells[A.id].status == "failed" and "result refused: " in cells[A.id].reason
    assert cells[B.id].status == "passed" and not verdict.green
    assert verdict.refused == (refused.refused,) and verdict.misplaced == ()
    # the stand-in is itself a well-formed failed result (what a report bundle keeps)
    assert parse_envelope(refused.data, "bundle.json").status == "failed"


def test_a_refused_file_of_no_cell_makes_the_run_red(tmp_path: Path) -> None:
    _write(tmp_path / "loose.json", json.dumps({**make_test_result(None, []), "tests": [{"outcome": []}]}))
    _write(tmp_path / "b.json", _good(B))
    loaded = load_results([tmp_path])
    verdict = judge(loaded.results, make_plan([B])["cells"])
    assert {c.id: c.status for c in verdict.cells} == {B.id: "passed"}
    assert any("result refused: " in p and "$.tests[0]" in p for p in verdict.problems), verdict.problems
    assert verdict.conclusion == "failure"


def test_a_refused_result_of_an_optional_cell_still_makes_the_run_red(tmp_path: Path) -> None:
    optional = make_cell("3.12", required=False)
    doc = make_test_result(optional.id, [make_test("t.py::x")])
    doc["tests"][0]["duration_s"] = "slow"
    _write(tmp_path / optional.id / "test.json", json.dumps(doc))
    _write(tmp_path / B.id / "test.json", _good(B))
    verdict = judge(load_results([tmp_path]).results, make_plan([optional, B])["cells"])
    assert {c.id: c.status for c in verdict.cells}[optional.id] == "failed"
    assert any(p.startswith("result refused: ") and "$.tests[0].duration_s" in p for p in verdict.problems)


def test_a_result_named_directly_is_an_input_error(tmp_path: Path) -> None:
    _write(tmp_path / "r.json", json.dumps({**make_test_result(A.id, []), "tests": [{"nodeid": ["x"]}]}))
    with pytest.raises(InputError, match=r"\$\.tests\[0\]\.nodeid") as exc:
        load_results([tmp_path / "r.json"])
    assert exc.value.file == str(tmp_path / "r.json") and exc.value.hint


def test_a_cells_own_coverage_artifact_is_a_result_not_a_refusal(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`coverage collect` writes files keyed by path (schema coverage-cell): the report shows its
    status, and only a document that breaks its shape is refused."""
    from tests.helpers.cli import xcompat_in_process
    from tests.helpers.coverage import synthetic_artifact, write_artifact

    cell = "py3.12-linux-x86_64-cpu"
    write_artifact(tmp_path / cell / "coverage.json", synthetic_artifact(cell, {"pkg/a.py": ([1, 2, 3], [2])}))
    proc = xcompat_in_process("report", str(tmp_path), "--format", "text")
    assert "refused" not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert proc.returncode == 0, proc.stdout + proc.stderr
