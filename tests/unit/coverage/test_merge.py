from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from tests.helpers.coverage import synthetic_artifact, write_artifact

from xcompat.coverage.cobertura import GITLAB_COBERTURA_LIMITS, render_cobertura
from xcompat.coverage.merge import diff_coverage, merge_cells
from xcompat.coverage.model import line_ranges, uncovered_ranges
from xcompat.coverage.report import MergeOptions, merge_coverage
from xcompat.coverage.thresholds import Thresholds
from xcompat.jsonio import validate


@pytest.fixture
def two_cells(tmp_path):
    a = synthetic_artifact(
        "py3.12-linux-x86_64-cpu",
        {
            "pkg/m.py": ([1, 2, 3, 4, 6], [1, 1, 0, 0, 1]),
            "csrc/core.c": ([10, 11, 12], [5, 0, 0]),
        },
    )
    b = synthetic_artifact(
        "py3.13-linux-aarch64-cpu",
        {
            "pkg/m.py": ([1, 2, 3, 4, 6], [1, 0, 1, 0, 0]),
            "csrc/core.c": ([10, 11, 12, 13], [2, 0, 0, 7]),  # another compiler: one more line
            "csrc/ops.cu": ([5, 6], [0, 0]),
        },
    )
    return [write_artifact(tmp_path / "a.json", a), write_artifact(tmp_path / "b.json", b)]


def test_line_covered_in_any_cell_counts_once(two_cells):
    result = merge_cells(two_cells)
    m = result.files["pkg/m.py"]
    assert m.lines == [1, 2, 3, 4, 6]
    assert m.hits == [2, 1, 1, 0, 1]
    assert m.covered == 4 and m.valid == 5
    core = result.files["csrc/core.c"]
    assert core.lines == [10, 11, 12, 13] and core.hits == [7, 0, 0, 7]
    assert result.files["csrc/ops.cu"].cells == set()
    assert m.cells == {"py3.12-linux-x86_64-cpu", "py3.13-linux-aarch64-cpu"}
    assert result.valid == 11 and result.covered == 6
    assert [c.cell_id for c in result.cells] == ["py3.12-linux-x86_64-cpu", "py3.13-linux-aarch64-cpu"]


def test_ranges():
    assert line_ranges([1, 2, 3, 7, 9, 10]) == [[1, 3], [7, 7], [9, 10]]
    # runs continue across non-executable lines and stop at a covered one
    assert uncovered_ranges([4, 6, 7, 9, 12], [0, 0, 1, 0, 0]) == [[4, 6], [9, 12]]
    assert uncovered_ranges([], []) == []


def test_report_document_validates_and_reports_languages(two_cells):
    report = merge_coverage(
        MergeOptions(
            cell_files=tuple(two_cells),
            repo=two_cells[0].parent,
            thresholds=Thresholds(overall=50.0, source="options"),
        )
    )
    doc = report.document
    validate("coverage", doc)
    assert doc["totals"] == {"files": 3, "lines_valid": 11, "lines_covered": 6, "percent": 54.55}
    assert set(doc["languages"]) == {"python", "c", "cuda"}
    assert doc["languages"]["cuda"]["percent"] == 0.0
    assert doc["status"] == "passed" and doc["gate"][0]["passed"]
    files = {f["path"]: f for f in doc["files"]}
    assert files["pkg/m.py"]["uncovered_ranges"] == [[4, 4]]
    assert files["csrc/core.c"]["uncovered_ranges"] == [[11, 12]]
    md = report.markdown
    for needle in (
        "| Python |",
        "| C |",
        "| CUDA host |",
        "`csrc/ops.cu`",
        "py3.13-linux-aarch64-cpu",
        "54.55 %",
    ):
        assert needle in md


def test_threshold_failure_gives_reason(two_cells):
    report = merge_coverage(
        MergeOptions(
            cell_files=tuple(two_cells),
            repo=two_cells[0].parent,
            thresholds=Thresholds(overall=80.0, diff=90.0, source="options"),
            base_ref="origin/main",
        ),
        changed={"pkg/m.py": (3, 4, 5, 6), "csrc/core.c": (13,), "docs/x.md": (1,), "pkg/new.py": (1, 2)},
    )
    doc = report.document
    validate("coverage", doc)
    assert doc["status"] == "failed"
    overall, diff = doc["gate"]
    assert not overall["passed"] and "54.55% < threshold 80%" in overall["reason"]
    assert doc["diff"]["lines_valid"] == 4 and doc["diff"]["lines_covered"] == 3
    assert diff["actual"] == 75.0 and not diff["passed"]
    by_path = {f["path"]: f for f in doc["diff"]["files"]}
    assert by_path["pkg/m.py"]["uncovered_ranges"] == [[4, 4]]
    assert by_path["pkg/new.py"]["measured"] is False
    assert "docs/x.md" not in by_path  # not source code
    assert "failed:" in doc["summary"]


def test_diff_ranges_stop_at_unchanged_lines(two_cells):
    result = merge_cells(two_cells)
    result.files["pkg/m.py"].hits = [0, 0, 0, 0, 0]
    (d,) = diff_coverage(result, {"pkg/m.py": (1, 3, 4)})
    assert d.uncovered_ranges == [[1, 1], [3, 4]]


def test_malformed_and_truncated_cells_are_errors_rest_merges(two_cells, tmp_path):
    good = two_cells[0]
    trunc = tmp_path / "cell-trunc.json"
    trunc.write_text(good.read_text()[:200])
    wrong = tmp_path / "cell-wrong.json"
    doc = json.loads(good.read_text())
    doc["cell_id"] = "deep-bad"
    doc["files"]["pkg/m.py"]["hits"] = ["x"] * 5
    wrong.write_text(json.dumps(doc))
    shape = tmp_path / "cell-shape.json"
    doc = json.loads(good.read_text())
    doc["files"]["pkg/m.py"]["hits"] = [1]
    shape.write_text(json.dumps(doc))
    result = merge_cells([trunc, good, wrong, shape, tmp_path / "missing.json"])
    assert [c.cell_id for c in result.cells] == ["py3.12-linux-x86_64-cpu"]
    messages = {e.file.rsplit("/", 1)[-1]: (e.cell_id, e.message) for e in result.errors}
    assert messages["cell-trunc.json"] == ("cell-trunc", messages["cell-trunc.json"][1])
    assert "truncated" in messages["cell-trunc.json"][1]
    assert messages["cell-wrong.json"][0] == "deep-bad" and "malformed" in messages["cell-wrong.json"][1]
    assert "equal length" in messages["cell-shape.json"][1]
    assert "not found" in messages["missing.json"][1]
    # the bad cell did not leak partial data
    assert result.files["pkg/m.py"].hits == [1, 1, 0, 0, 1]


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda d: d.update(kind="abi"), "not a coverage artifact"),
        (lambda d: d.update(version=99), "version 99"),
        (lambda d: d.update(files=[]), "$.files"),
        (lambda d: d.update(cell_id=5), "cell_id"),
        (lambda d: d["files"]["pkg/m.py"].update(language="rust"), "language"),
        (lambda d: d["files"]["pkg/m.py"].update(lines=[9, 1, 2, 3, 4]), "ascending"),
    ],
)
def test_artifact_shape_errors(tmp_path, mutate, needle):
    from xcompat.coverage.artifact import read_cell_artifact
    from xcompat.errors import InputError

    doc = synthetic_artifact("c", {"pkg/m.py": ([1, 2, 3, 4, 6], [1, 1, 0, 0, 1])})
    mutate(doc)
    path = write_artifact(tmp_path / "c.json", doc)
    with pytest.raises(InputError) as info:
        read_cell_artifact(path)
    assert needle in info.value.message and info.value.file == str(path)


def test_strict_fails_on_unreadable_input(two_cells, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    lax = merge_coverage(MergeOptions(cell_files=(*two_cells, bad), repo=tmp_path)).document
    strict = merge_coverage(MergeOptions(cell_files=(*two_cells, bad), repo=tmp_path, strict=True)).document
    assert lax["status"] == "passed" and strict["status"] == "failed"
    assert lax["errors"][0]["cell_id"] == "bad"


def test_cobertura_is_parseable_and_counts_match(two_cells):
    result = merge_cells(two_cells)
    out = render_cobertura(result.files.values(), source="/builds/g/p", timestamp=0)
    root = ET.fromstring(out.xml.split("\n", 2)[2])  # skip declaration and DOCTYPE
    assert root.get("lines-valid") == "11" and root.get("lines-covered") == "6"
    assert [s.text for s in root.iter("source")] == ["/builds/g/p"]
    assert len(list(root.iter("source"))) <= GITLAB_COBERTURA_LIMITS["max_sources"]
    classes = {c.get("filename"): c for c in root.iter("class")}
    assert set(classes) == {"pkg/m.py", "csrc/core.c", "csrc/ops.cu"}
    hits = {int(ln.get("number")): int(ln.get("hits")) for ln in classes["csrc/core.c"].iter("line")}
    assert hits == {10: 7, 11: 0, 12: 0, 13: 7}


def test_cobertura_size_limit_keeps_changed_files_first(two_cells):
    result = merge_cells(two_cells)
    full = render_cobertura(result.files.values(), source="/r")
    limit = len(full.xml) - 10
    out = render_cobertura(
        result.files.values(), source="/r", changed_paths=frozenset({"pkg/m.py"}), max_bytes=limit
    )
    assert out.files_written == 1 and out.files_omitted == 2 and "the change touches" in out.reason
    assert 'filename="pkg/m.py"' in out.xml and "csrc/core.c" not in out.xml
    assert len(out.xml.encode()) <= limit


def test_markdown_cuts_long_file_tables_and_escapes_pipes(tmp_path):
    files = {f"pkg/m{i}.py": ([1, 2], [1, 0]) for i in range(5)}
    files["pkg/we|ird.py"] = ([1], [0])
    path = write_artifact(tmp_path / "a.json", synthetic_artifact("cell|x", files))
    report = merge_coverage(MergeOptions(cell_files=(path,), repo=tmp_path, max_file_rows=3))
    md = report.markdown
    assert "… 3 more files in coverage.json" in md
    assert "`cell\\|x`" in md
    assert md.count("| `pkg/") == 3


def test_a_cells_warnings_stay_in_the_merged_result_named_by_cell(tmp_path):
    a = synthetic_artifact("py3.12-linux-x86_64-cpu", {"pkg/m.py": ([1, 2], [1, 0])})
    a["warnings"] = ["tests/t.py::test_@x: passed in the test stage, failed under coverage"]
    b = synthetic_artifact("py3.13-linux-x86_64-cpu", {"pkg/m.py": ([1, 2], [1, 1])})
    cells = (write_artifact(tmp_path / "a.json", a), write_artifact(tmp_path / "b.json", b))
    report = merge_coverage(MergeOptions(cell_files=cells, repo=tmp_path, thresholds=Thresholds()))
    assert report.document["warnings"] == [
        "py3.12-linux-x86_64-cpu: tests/t.py::test_@x: passed in the test stage, failed under coverage"]
    assert report.document["status"] == "passed"
    # shown under Warnings in the Markdown, its mention made inert
    warnings = report.markdown.split("### Warnings", 1)[1]
    assert "test\\_@\u2060x" in warnings and "failed under coverage" in warnings
