"""A plan's settings count only when they are the verified matrix's.

A plan is a JSON file: whoever can put one where a test job reads it (a committed
``.xcompat-out/plan.json``, a swapped artifact) can edit its settings, add
``--deselect`` to ``tests.pytest_args`` or raise ``tests.timeout``, and keep its
``matrix_sha256`` field as it was. ``matrix settings --expect-sha256`` therefore checks the
verified matrix bytes (``--matrix``, which the plan artifact carries) against the hash, and
the plan against what those bytes yield; the field proves nothing on its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from xcompat.matrix import load_matrix
from xcompat.matrix.plan import cells_for_runner, expand, plan_document

MATRIX = """\
xcompat: 1
repo: acme/widget
serial: 4
python: ["3.11", "3.12"]
platforms:
  linux:
    archs: [x86_64]
backends:
  cpu:
    required: true
    runs-on: [ubuntu-24.04]
  cuda:
    required: false
    toolkits: ["12.8"]
    gpu-archs: [sm_90]
    runs-on: [self-hosted, gpu]
tests:
  pytest: [tests]
  isolation: test
  timeout: 120
"""


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith(("GITHUB_", "GITLAB"))}
    env["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "xcompat", "matrix", "settings", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def artifact(tmp_path: Path) -> tuple[Path, str, dict]:
    """The plan job's artifact: plan.json and the verified matrix bytes it was made from."""
    (tmp_path / "matrix.yml").write_text(MATRIX)
    matrix = load_matrix(tmp_path / "matrix.yml")
    plan = plan_document(matrix, expand(matrix))
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    return tmp_path, matrix.sha256, plan


def _forge(folder: Path, plan: dict, edit) -> None:
    forged = json.loads(json.dumps(plan))
    edit(forged)
    (folder / "plan.json").write_text(json.dumps(forged))


def _refused(proc: subprocess.CompletedProcess[str], *, naming: str, where: str = "") -> None:
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stdout == "", "nothing may be printed for a refused plan"
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and naming in lines[0] and where in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


EDITS = {
    "pytest_args": (lambda p: p["settings"]["tests"].update(pytest_args=["--deselect", "tests/test_a.py::test_b"]),
                    "$.settings.tests.pytest_args"),
    "timeout": (lambda p: p["settings"]["tests"].update(timeout=300), "$.settings.tests.timeout"),
    "pytest": (lambda p: p["settings"]["tests"].update(pytest=["tests/test_easy.py"]), "$.settings.tests.pytest"),
    "isolation": (lambda p: p["settings"]["tests"].update(isolation="none"), "$.settings.tests.isolation"),
    "a required cell made optional": (lambda p: p["cells"][0].update(required=False), "$.cells[0].required"),
    "a cell's runner": (lambda p: p["cells"][0].update(runs_on=["attacker-runner"]), "$.cells[0].runs_on"),
    "the required list": (lambda p: p.update(required=[]), "$.required"),
    "an added cell": (lambda p: p["cells"].append({**p["cells"][0], "id": "py3.12-linux-x86_64-extra"}), "$.cells"),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_plan_with_edited_settings_and_the_right_sha_field_is_refused(artifact, edit: str) -> None:
    folder, sha, plan = artifact
    change, where = EDITS[edit]
    _forge(folder, plan, change)
    assert json.loads((folder / "plan.json").read_text())["matrix_sha256"] == sha  # the field still "matches"
    proc = _cli(folder, "--plan", "plan.json", "--matrix", "matrix.yml", "--expect-sha256", sha,
                "--format", "test-argv")
    _refused(proc, naming="plan.json", where=where)


def test_expect_sha256_without_the_verified_bytes_does_not_vouch_for_a_plan(artifact) -> None:
    folder, sha, plan = artifact
    _forge(folder, plan, EDITS["pytest_args"][0])
    proc = _cli(folder, "--plan", "plan.json", "--expect-sha256", sha, "--format", "test-argv")
    _refused(proc, naming="plan.json")


def test_matrix_bytes_of_another_hash_are_refused(artifact) -> None:
    folder, sha, _ = artifact
    (folder / "matrix.yml").write_text(MATRIX.replace("timeout: 120", "timeout: 300"))
    proc = _cli(folder, "--plan", "plan.json", "--matrix", "matrix.yml", "--expect-sha256", sha)
    _refused(proc, naming="matrix.yml", where=sha)


def test_the_plan_the_verified_bytes_yield_is_read(artifact) -> None:
    folder, sha, _ = artifact
    proc = _cli(folder, "--plan", "plan.json", "--matrix", "matrix.yml", "--expect-sha256", sha.upper(),
                "--format", "test-argv")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["tests", "--isolate", "test", "--timeout", "120"]


def test_a_plan_of_some_of_the_cells_is_still_the_matrix_plan(artifact) -> None:
    """`matrix plan --backend cpu` (the plan-args input) writes a subset; it is the verified plan."""
    folder, sha, _ = artifact
    matrix = load_matrix(folder / "matrix.yml")
    cpu = cells_for_runner(expand(matrix), backends=["cpu"])
    (folder / "plan.json").write_text(json.dumps(plan_document(matrix, cpu)))
    proc = _cli(folder, "--plan", "plan.json", "--matrix", "matrix.yml", "--expect-sha256", sha,
                "--cell", cpu[0].id, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["cell"]["id"] == cpu[0].id


def test_plan_mismatch_compares_the_whole_document() -> None:
    from xcompat.matrix.plan import plan_mismatch

    matrix = load_matrix(MATRIX.encode())
    plan = json.loads(json.dumps(plan_document(matrix, expand(matrix))))
    assert plan_mismatch(plan, matrix) is None
    reordered = {**plan, "cells": list(reversed(plan["cells"]))}
    assert plan_mismatch(reordered, matrix) is not None
    as_bool = json.loads(json.dumps(plan))
    as_bool["serial"] = True  # JSON true is not the serial 1, nor any number
    assert plan_mismatch(as_bool, matrix) == "$.serial"
    extra = {**plan, "note": "added"}
    assert plan_mismatch(extra, matrix) == "$.note"
    assert plan_mismatch([], matrix) == "$" and plan_mismatch({"cells": {}}, matrix) == "$.cells"
