from __future__ import annotations

import json

from tests.helpers.coverage import run_xcompat_in_process, synthetic_artifact, write_artifact

from xcompat.coverage.report import read_merged_report


def cells(tmp_path):
    a = write_artifact(
        tmp_path / "cells" / "a.json", synthetic_artifact("a", {"pkg/m.py": ([1, 2, 3], [1, 0, 1])})
    )
    b = write_artifact(
        tmp_path / "cells" / "b.json", synthetic_artifact("b", {"csrc/k.cpp": ([5, 6], [0, 3])})
    )
    return a, b


def test_merge_writes_three_outputs_and_passes(tmp_path):
    cells(tmp_path)
    out = tmp_path / "out"
    summary = tmp_path / "summary.md"
    outputs = tmp_path / "outputs"
    proc = run_xcompat_in_process(
        "coverage",
        "merge",
        str(tmp_path / "cells"),
        "--repo",
        str(tmp_path),
        "--threshold-overall",
        "60",
        "--out-dir",
        str(out),
        env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(outputs)},
    )
    assert proc.returncode == 0, proc.stderr
    doc = read_merged_report(out / "coverage.json")
    assert doc["totals"]["percent"] == 60.0 and doc["status"] == "passed"
    assert {c["cell_id"] for c in doc["cells"]} == {"a", "b"}
    assert (out / "coverage.xml").read_text().count("<class ") == 2
    assert "| C++ |" in (out / "coverage.md").read_text()
    assert "## Coverage" in summary.read_text()
    assert "coverage-percent" in outputs.read_text()


def test_threshold_failure_exits_1_with_reason(tmp_path):
    a, b = cells(tmp_path)
    proc = run_xcompat_in_process(
        "coverage",
        "merge",
        str(a),
        str(b),
        "--repo",
        str(tmp_path),
        "--threshold-overall",
        "75",
        "--out-dir",
        str(tmp_path / "out"),
    )
    assert proc.returncode == 1
    assert "60.00% < threshold 75%" in proc.stderr
    doc = json.loads((tmp_path / "out" / "coverage.json").read_text())
    assert doc["status"] == "failed" and doc["gate"][0]["passed"] is False


def test_broken_cell_warns_and_rest_merges(tmp_path):
    a, _ = cells(tmp_path)
    broken = tmp_path / "cells" / "py3.12-macos-arm64-mps.json"
    broken.write_text(a.read_text()[:40])
    proc = run_xcompat_in_process(
        "coverage",
        "merge",
        str(tmp_path / "cells"),
        "--repo",
        str(tmp_path),
        "--out-dir",
        str(tmp_path / "out"),
    )
    assert proc.returncode == 0, proc.stderr
    assert "py3.12-macos-arm64-mps" in proc.stderr and "truncated" in proc.stderr
    doc = json.loads((tmp_path / "out" / "coverage.json").read_text())
    assert doc["errors"][0]["cell_id"] == "py3.12-macos-arm64-mps"
    assert doc["totals"]["files"] == 2


def test_nothing_mergeable_exits_2_and_writes_nothing(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    proc = run_xcompat_in_process(
        "coverage", "merge", str(bad), "--repo", str(tmp_path), "--out-dir", str(tmp_path / "out")
    )
    assert proc.returncode == 2
    assert (
        "none of the 1 coverage artifact(s) could be merged" in proc.stderr and "Traceback" not in proc.stderr
    )
    assert not (tmp_path / "out").exists()


def test_bad_threshold_option_is_usage_error(tmp_path):
    a, _ = cells(tmp_path)
    proc = run_xcompat_in_process(
        "coverage", "merge", str(a), "--threshold-diff", "150", "--out-dir", str(tmp_path / "o")
    )
    assert proc.returncode == 2 and "--threshold-diff" in proc.stderr


def test_rerun_into_the_input_folder_ignores_its_own_output(tmp_path):
    cells(tmp_path)
    for _ in range(2):
        proc = run_xcompat_in_process(
            "coverage",
            "merge",
            str(tmp_path / "cells"),
            "--repo",
            str(tmp_path),
            "--out-dir",
            str(tmp_path / "cells"),
        )
        assert proc.returncode == 0, proc.stderr
    doc = read_merged_report(tmp_path / "cells" / "coverage.json")
    assert doc["errors"] == [] and len(doc["cells"]) == 2
