"""The release gate takes a plan only when it is the plan the verified matrix yields.

The plan file travels as an artifact next to the results; whoever can replace it can edit
its settings or cells and keep its ``matrix_sha256`` field, which is all the gate used to
compare. The gate now recomputes the plan from the verified matrix bytes and compares it
whole (``plan_mismatch``, as ``xcompat matrix settings --plan --matrix --expect-sha256``
does): an edited plan is refused with exit 3, naming the file and the first JSON path that
differs, and no gate.json is written. The release job's own abi stage reads the plan's ``abi``
settings only bound the same way, to the hash the plan job verified.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.helpers.action import REPO_ROOT, checks_by_name, envelope, run_gate, write

SAMPLE = REPO_ROOT / "examples" / "sample-ext" / ".xcompat"
needs_sample = pytest.mark.skipif(not (SAMPLE / "matrix.yml.sig").is_file(),
                                  reason="the sample project's signed matrix is not there")

ARGS = ("--matrix", ".xcompat/matrix.yml", "--allowed-signers", ".xcompat/allowed_signers", "--plan", "plan.json",
        "--results", "results")


@pytest.fixture
def signed(tmp_path: Path) -> tuple[Path, dict, dict[str, str]]:
    """The sample's signed matrix, its plan (cpu cells) and passing results for every planned cell."""
    import yaml

    from xcompat.matrix import load_matrix
    from xcompat.matrix.plan import cells_for_runner, expand, plan_document

    folder = tmp_path / ".xcompat"
    folder.mkdir()
    for name in ("matrix.yml", "matrix.yml.sig", "allowed_signers"):
        shutil.copy(SAMPLE / name, folder / name)
    matrix = load_matrix(folder / "matrix.yml")
    plan = json.loads(json.dumps(plan_document(matrix, cells_for_runner(expand(matrix), backends=["cpu"]))))
    write(tmp_path / "plan.json", plan)
    for cell in plan["cells"]:
        write(tmp_path / "results" / cell["id"] / "build.json", envelope("build", cell["id"], "passed"))
        write(tmp_path / "results" / cell["id"] / "test.json", envelope("test", cell["id"], "passed", "9 passed"))
    repo = yaml.safe_load((folder / "matrix.yml").read_text())["repo"]
    return tmp_path, plan, {"GITHUB_REPOSITORY": repo}


EDITS = {
    "tests.timeout": (lambda p: p["settings"]["tests"].update(timeout=3600.0), "$.settings.tests.timeout"),
    "tests.pytest_args": (lambda p: p["settings"]["tests"].update(pytest_args=["--deselect", "tests/test_a.py::b"]),
                          "$.settings.tests.pytest_args"),
    "coverage.overall": (lambda p: p["settings"]["coverage"].update(overall=1.0), "$.settings.coverage.overall"),
    "gate.tag_pattern": (lambda p: p["settings"]["gate"].update(tag_pattern="*"), "$.settings.gate.tag_pattern"),
    "a required cell made optional": (lambda p: p["cells"][0].update(required=False), "$.cells[0].required"),
}


@needs_sample
@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_plan_edited_after_it_was_made_is_refused_with_exit_3(signed, edit: str) -> None:
    path, plan, env = signed
    change, where = EDITS[edit]
    change(plan)
    write(path / "plan.json", plan)
    assert plan["matrix_sha256"] == json.loads((path / "plan.json").read_text())["matrix_sha256"]  # field kept
    rc, out, doc = run_gate(path, *ARGS, env=env)
    assert rc == 3, out
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and "plan.json" in lines[0] and where in lines[0], out
    assert "Traceback" not in out and doc is None


@needs_sample
def test_the_plan_the_verified_matrix_yields_is_taken(signed) -> None:
    path, _, env = signed
    rc, out, doc = run_gate(path, *ARGS, env=env)
    checks = checks_by_name(doc)
    assert checks["matrix-signature"]["passed"] is True and checks["plan-source"]["passed"] is True, out
    # the cpu plan is a subset of the matrix: its other required cells are judged and have no result
    assert rc == 1 and all(c["passed"] for n, c in checks.items() if n.startswith("cell:") and "cpu" in n)


def test_the_release_jobs_abi_stage_reads_the_plan_bound_to_the_verified_hash() -> None:
    import yaml

    release = yaml.safe_load((REPO_ROOT / "workflows" / "release.yml").read_text())
    reusable = yaml.safe_load((REPO_ROOT / "workflows" / "xcompat.yml").read_text())
    publish = release["jobs"]["publish"]
    abi = next(s for s in publish["steps"] if s.get("with", {}).get("stage") == "abi")
    assert publish["needs"] == "xcompat"
    assert abi["with"]["matrix-sha256"] == "${{ needs.xcompat.outputs.matrix-sha256 }}"
    trigger = reusable.get("on") or reusable[True]  # YAML 1.1 reads the key `on` as true
    output = trigger["workflow_call"]["outputs"]["matrix-sha256"]
    assert output["value"] == "${{ jobs.plan.outputs.matrix-sha256 }}"
    assert reusable["jobs"]["plan"]["outputs"]["matrix-sha256"] == "${{ steps.plan.outputs.matrix-sha256 }}"
