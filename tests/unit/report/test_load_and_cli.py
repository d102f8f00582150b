import json

import pytest
from tests.helpers.cli import xcompat_in_process
from tests.helpers.report import (
    make_cell,
    make_plan,
    make_test,
    make_test_result,
    mixed_results,
    stage_result,
)

from xcompat.errors import InputError
from xcompat.report import load_results


def write(path, document):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document) if not isinstance(document, str) else document, encoding="utf-8")
    return path


def run_cli(*args, cwd=None, env=None):
    return xcompat_in_process("report", *args, cwd=cwd, env=env)


def test_folders_are_searched_recursively_and_other_json_is_noted(tmp_path):
    cell = make_cell()
    write(tmp_path / "cell-a" / "test.json", make_test_result(cell.id, [make_test("t.py::x")]))
    write(tmp_path / "cell-a" / "coverage.json", {"meta": {"version": "7.4"}, "files": {}})
    write(tmp_path / "plan.json", make_plan([cell]))
    write(tmp_path / "node_modules" / "x.json", "not even json")
    loaded = load_results([tmp_path])
    assert [r.kind for r in loaded.results] == ["test"]
    assert loaded.plan is not None and loaded.plan_source.endswith("plan.json")
    assert loaded.skipped_files == (str(tmp_path / "cell-a" / "coverage.json"),)


def test_same_file_given_twice_is_loaded_once(tmp_path):
    path = write(tmp_path / "a.json", stage_result("build", "py3.12-linux-x86_64-cpu"))
    assert len(load_results([path, tmp_path, path]).results) == 1


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"version": 1, "kind": "test",', "invalid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"version": 3, "kind": "test", "status": "passed"}', "unsupported result version 3"),
        ('{"version": 1, "kind": "", "status": "passed"}', '"kind" must be a non-empty string'),
        ('{"version": 1, "kind": "test", "cell_id": 5, "status": "passed"}', '"cell_id" must be a string or null'),
        ('{"version": 1, "kind": "test", "status": null}', '"status" must be a string'),
    ],
)
def test_malformed_explicit_files_are_input_errors_naming_the_file(tmp_path, content, message):
    path = write(tmp_path / "r.json", content)
    with pytest.raises(InputError, match=message) as exc:
        load_results([path])
    assert exc.value.file == str(path)


def test_missing_path_and_bad_plan(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_results([tmp_path / "nope"])
    plan = write(tmp_path / "plan.json", {"version": 1, "cells": [{"python": "3.12"}]})
    with pytest.raises(InputError, match=r"cells\[0\]"):
        load_results([], plan_path=plan)


def test_cli_renders_and_exits_1_on_a_red_report(tmp_path):
    plan, results = mixed_results()
    for i, r in enumerate(results):
        write(tmp_path / "artifacts" / f"r{i}.json", r)
    write(tmp_path / "plan.json", plan)
    proc = run_cli(str(tmp_path / "artifacts"), "--plan", str(tmp_path / "plan.json"), "--format", "json", "--out", str(tmp_path / "report.json"))
    assert proc.returncode == 1, proc.stderr
    assert "report is red" in proc.stderr
    doc = json.loads((tmp_path / "report.json").read_text())
    assert doc["counts"]["missing"] == 1
    proc = run_cli(str(tmp_path / "artifacts"), "--plan", str(tmp_path / "plan.json"), "--exit-zero", "--format", "text")
    assert proc.returncode == 0 and proc.stdout.startswith("xcompat report: FAILURE")


def test_cli_green_report_exits_0(tmp_path):
    cell = make_cell()
    write(tmp_path / "r.json", make_test_result(cell.id, [make_test("t.py::x")]))
    proc = run_cli(str(tmp_path / "r.json"), "--budget", "pr_comment")
    assert proc.returncode == 0
    assert proc.stdout.startswith("## ✅")


def test_cli_malformed_input_is_one_line_exit_2_and_writes_nothing(tmp_path):
    write(tmp_path / "r.json", '{"version": 1,\n "kind": }')
    proc = run_cli(str(tmp_path / "r.json"), "--out", str(tmp_path / "out.md"))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and f"{tmp_path / 'r.json'}:2:" in lines[0] and "invalid JSON" in lines[0]
    assert not (tmp_path / "out.md").exists()


def test_cli_usage_errors(tmp_path):
    proc = run_cli()
    assert proc.returncode == 2 and "give result files" in proc.stderr
    proc = run_cli(str(tmp_path), "--budget", "tweet")
    assert proc.returncode == 2 and "unknown report channel 'tweet'" in proc.stderr
    proc = run_cli("--from-artifact", str(tmp_path / "nope"))
    assert proc.returncode == 2 and "not a folder" in proc.stderr
