"""``xcompat report DIR`` on a run's output folder and on a folder of downloaded artifacts."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests.helpers.cli import xcompat_in_process
from tests.helpers.report import make_cell, make_plan, make_test, make_test_result, stage_result

from xcompat.settings import ProjectFacts, defaults_settings


def _write(path: Path, document) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))


def _report(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith(("GITHUB_", "GITLAB", "CI_"))}
    return xcompat_in_process("report", *args, env=env)


def _run_folder(tmp_path: Path, test_outcome: str = "passed") -> Path:
    """The files `xcompat run` leaves: stage results, its own report/verify/run JSON, settings.json."""
    out = tmp_path / ".xcompat-out"
    cell = make_cell("3.11")
    _write(out / "plan.json", make_plan([cell]))
    _write(out / "wheels" / "build.json", stage_result("build", None, "passed", "1 wheel(s) built"))
    _write(out / "stages" / "build-cell.json", stage_result("build", cell.id, "passed", "the wheel built here"))
    _write(out / "test.json", make_test_result(cell.id, [make_test("tests/test_a.py::test_x", test_outcome)]))
    _write(out / "stages" / "kernels.json", stage_result("kernels", cell.id, "skipped", "not required"))
    _write(out / "report.json", {"version": 1, "kind": "report", "conclusion": "success", "cells": []})
    _write(out / "verify.json", {"version": 1, "verified": True, "sha256": "0" * 64})
    _write(out / "run.json", {"version": 1, "project": "p", "matrix": "m", "cell_id": cell.id, "stages": []})
    _write(out / "badge.json", {"schemaVersion": 1, "label": "xcompat", "message": "passing", "color": "green"})
    _write(out / "extra" / "package.json", {"name": "not-xcompat", "version": "1.0.0"})
    settings = {**defaults_settings(required_backends=("cpu",)).to_dict(),
                "project": ProjectFacts(name="p", uses_torch=False, torch_evidence="none").to_dict()}
    _write(out / "settings.json", settings)
    return out


def test_report_reads_a_run_output_folder_and_notes_only_json_it_did_not_write(tmp_path: Path):
    out = _run_folder(tmp_path)
    proc = _report(str(out), "--format", "json")
    assert proc.returncode == 0, proc.stderr  # used to exit 2 reading report.json as a stage result
    report = json.loads(proc.stdout)
    assert report["conclusion"] == "success"
    notes = "\n".join(report["notes"])
    # xcompat's own documents that are not stage results are passed over without a word
    for name in ("report.json", "verify.json", "run.json", "badge.json", "settings.json", "plan.json"):
        assert name not in notes, notes
    # a JSON file xcompat did not write is named, relative to the folder given
    assert notes.count("not a stage result, ignored:") == 1, notes
    assert f"not a stage result, ignored: {out / 'extra' / 'package.json'}" in notes


def test_report_of_a_red_run_folder_is_red(tmp_path: Path):
    out = _run_folder(tmp_path, test_outcome="failed")
    proc = _report(str(out))
    assert proc.returncode == 1
    assert "tests/test_a.py::test_x" in proc.stdout


def test_report_reads_a_folder_of_downloaded_artifacts(tmp_path: Path):
    a, b = make_cell("3.11"), make_cell("3.12")
    art = tmp_path / "artifacts"
    _write(art / "plan" / "plan.json", make_plan([a, b]))
    for cell in (a, b):
        _write(art / f"results-{cell.id}" / "build.json", stage_result("build", cell.id))
        _write(art / f"results-{cell.id}" / "test.json", make_test_result(cell.id, [make_test("t.py::x")]))
    _write(art / "coverage-raw" / "coverage.json", {"meta": {"version": "7.4"}, "files": {}})
    proc = _report(str(art), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert [c["status"] for c in report["cells"]] == ["passed", "passed"]
    assert any("coverage-raw" in n for n in report["notes"])
    (art / f"results-{b.id}" / "test.json").unlink()
    proc = _report(str(art), "--format", "json")
    assert proc.returncode == 1


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({**defaults_settings().to_dict(), "settings": {**defaults_settings().to_dict()["settings"],
                                                         "tests.timeout": "soon"}},
         "$.settings.tests.timeout: expected seconds, got 'soon'"),
        ({"version": 1, "kind": "settings", "origin": "matrix", "settings": {"tests.timeout": 3}},
         "missing abi.baseline"),
        ({"version": 2, "kind": "settings", "settings": {}}, "$.version"),
        ({"version": 1, "kind": "settings", "origin": "matrix", "settings": {"tests.shards": 4}}, "known keys only"),
    ],
)
def test_a_malformed_settings_json_is_one_line_exit_2(tmp_path: Path, document, message):
    out = _run_folder(tmp_path)
    _write(out / "settings.json", document)
    proc = _report(str(out))
    assert proc.returncode == 2, proc.stderr
    assert "settings.json" in proc.stderr and message in proc.stderr and "Traceback" not in proc.stderr
