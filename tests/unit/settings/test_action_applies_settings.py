"""The composite action's test and abi stages take tests.* and abi.* from the verified plan (run as the
GitHub runner would, with GitHub's own expression library), and the signed settings win over `args`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from tests.helpers.action import REPO_ROOT, expressions_available, run_composite_action, write

from xcompat.matrix import load_matrix
from xcompat.matrix.plan import expand, plan_document

REASON = expressions_available()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"composite action runner unavailable: {REASON}")

MATRIX = """xcompat: 1
repo: acme/proj
serial: 1
python: ["3.11"]
platforms: {linux: {archs: [x86_64]}}
backends: {cpu: {required: true}}
tests:
  pytest: [checks]
  pytest-args: ["-k", "not slow"]
  isolation: file
  timeout: 33
"""


def test_test_stage_runs_the_plans_tests_with_its_args(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "proj" / "checks").mkdir(parents=True)
    (workspace / "proj" / "checks" / "test_a.py").write_text(
        "def test_fast():\n    assert True\n\n\ndef test_slow():\n    assert False\n")
    (workspace / "proj" / "tests").mkdir()
    (workspace / "proj" / "tests" / "test_other.py").write_text("def test_not_in_the_matrix():\n    assert False\n")
    matrix = load_matrix(MATRIX.encode())
    write(workspace / ".xcompat-out" / "plan.json", plan_document(matrix, expand(matrix)))
    cell = expand(matrix)[0].id
    run = run_composite_action(
        REPO_ROOT,
        {"stage": "test", "cell": cell, "project-dir": "proj", "install-wheel": "false", "python": sys.executable,
         "install": "false", "verify": "false", "args": "--isolate\nnone\n--timeout\n1\n--no-warm-torch"},
        workspace=workspace,
    )
    assert run.status == "success", run.log
    document = json.loads(Path(run.outputs["result"]).read_text())
    assert [t["nodeid"].rsplit("::", 1)[-1] for t in document["tests"]] == ["test_fast"]
    # the signed settings come after `args`: isolation file and timeout 33, not none / 1
    assert document["isolation"] == "file" and document["timeout_s"] == 33
