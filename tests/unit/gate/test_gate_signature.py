"""The gate's matrix-signature and plan-source checks, with the sample project's real signed matrix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.helpers.action import REPO_ROOT, checks_by_name, gate_in_process
from tests.helpers.cli import xcompat_in_process

SAMPLE = REPO_ROOT / "examples" / "sample-ext" / ".xcompat"
pytestmark = pytest.mark.skipif(not (SAMPLE / "matrix.yml.sig").is_file(),
                                reason="the sample project's signed matrix is not there")


@pytest.fixture
def signed(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    import yaml

    folder = tmp_path / ".xcompat"
    folder.mkdir()
    for name in ("matrix.yml", "matrix.yml.sig", "allowed_signers"):
        shutil.copy(SAMPLE / name, folder / name)
    repo = yaml.safe_load((folder / "matrix.yml").read_text())["repo"]
    planned = xcompat_in_process("matrix", "plan", str(folder / "matrix.yml"),
                                 "--format", "json", "--output", str(tmp_path / "plan.json"))
    assert planned.returncode == 0, planned.stderr
    return tmp_path, {"GITHUB_REPOSITORY": repo}


ARGS = ("--matrix", ".xcompat/matrix.yml", "--allowed-signers", ".xcompat/allowed_signers", "--plan", "plan.json")


def test_signed_matrix_and_its_plan_pass(signed) -> None:
    path, env = signed
    _, out, doc = gate_in_process(path, *ARGS, env=env)
    checks = checks_by_name(doc)
    assert checks["matrix-signature"]["passed"] is True, out
    assert checks["matrix-signature"]["reason"].startswith("got a valid signature by ")
    assert checks["plan-source"]["passed"] is True


def test_tampered_matrix_is_refused(signed) -> None:
    path, env = signed
    matrix = path / ".xcompat" / "matrix.yml"
    matrix.write_text(matrix.read_text() + "\n# one more line\n")
    rc, _, doc = gate_in_process(path, *ARGS, env=env)
    assert rc == 1
    checks = checks_by_name(doc)
    assert checks["matrix-signature"]["passed"] is False
    assert checks["matrix-signature"]["reason"].endswith("expected a signature by a trusted key")
    assert checks["plan-source"]["passed"] is False


def test_plan_of_another_matrix_is_refused(signed) -> None:
    path, env = signed
    plan = json.loads((path / "plan.json").read_text())
    plan["matrix_sha256"] = "0" * 64
    (path / "plan.json").write_text(json.dumps(plan))
    rc, _, doc = gate_in_process(path, *ARGS, env=env)
    assert rc == 1
    check = checks_by_name(doc)["plan-source"]
    assert check["passed"] is False and check["reason"].startswith("got a plan of matrix sha256 0000000000000000")


def test_matrix_from_another_repository_is_refused(signed) -> None:
    path, _ = signed
    rc, _, doc = gate_in_process(path, *ARGS, env={"GITHUB_REPOSITORY": "mallory/fork"})
    assert rc == 1
    assert "mallory/fork" in checks_by_name(doc)["matrix-signature"]["reason"]


def test_bound_repository_can_be_named_explicitly(signed) -> None:
    path, env = signed
    _, out, doc = gate_in_process(path, *ARGS, "--repo", env["GITHUB_REPOSITORY"], env={"GITHUB_REPOSITORY": "org/other"})
    assert checks_by_name(doc)["matrix-signature"]["passed"] is True, out
