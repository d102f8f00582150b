"""The gate judges the verified matrix's own cells, not the plan file's (a filtered plan cannot drop one)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.helpers.action import REPO_ROOT, checks_by_name, envelope, gate_in_process, write
from tests.helpers.cli import xcompat_in_process

SAMPLE = REPO_ROOT / "examples" / "sample-ext" / ".xcompat"
pytestmark = pytest.mark.skipif(not (SAMPLE / "matrix.yml.sig").is_file(),
                                reason="the sample project's signed matrix is not there")


@pytest.fixture
def cpu_only(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The sample's signed matrix, a plan made with --backend cpu, and passing results for every planned cell."""
    import yaml

    folder = tmp_path / ".xcompat"
    folder.mkdir()
    for name in ("matrix.yml", "matrix.yml.sig", "allowed_signers"):
        shutil.copy(SAMPLE / name, folder / name)
    repo = yaml.safe_load((folder / "matrix.yml").read_text())["repo"]
    planned = xcompat_in_process("matrix", "plan", str(folder / "matrix.yml"), "--format", "json",
                                 "--backend", "cpu", "--output", str(tmp_path / "plan.json"))
    assert planned.returncode == 0, planned.stderr
    plan = json.loads((tmp_path / "plan.json").read_text())
    for cell in plan["cells"]:
        write(tmp_path / "results" / cell["id"] / "build.json", envelope("build", cell["id"], "passed"))
        write(tmp_path / "results" / cell["id"] / "test.json", envelope("test", cell["id"], "passed", "9 passed"))
    return tmp_path, {"GITHUB_REPOSITORY": repo}


ARGS = ("--matrix", ".xcompat/matrix.yml", "--allowed-signers", ".xcompat/allowed_signers", "--plan", "plan.json",
        "--results", "results")


def test_a_cpu_only_plan_cannot_drop_the_required_cuda_cell(cpu_only) -> None:
    path, env = cpu_only
    plan = json.loads((path / "plan.json").read_text())
    assert all(c["backend"] == "cpu" for c in plan["cells"])
    rc, out, doc = gate_in_process(path, *ARGS, env=env)
    assert rc == 1, out
    checks = checks_by_name(doc)
    assert checks["matrix-signature"]["passed"] is True and checks["plan-source"]["passed"] is True
    cuda = [name for name in checks if name.startswith("cell:") and "cuda" in name]
    assert cuda, "the verified matrix's required include cell must be judged"
    assert all(checks[name]["passed"] is False for name in cuda)
    assert checks[cuda[0]]["reason"].startswith("got no result")
    assert any("the verified matrix has" in w for w in doc["warnings"])


def test_with_the_cuda_results_the_release_is_allowed(cpu_only) -> None:
    path, env = cpu_only
    rc, out, doc = gate_in_process(path, *ARGS, env=env)
    cuda = [name.removeprefix("cell:") for name, c in checks_by_name(doc).items()
            if name.startswith("cell:") and not c["passed"]]
    for cid in cuda:
        write(path / "results" / cid / "build.json", envelope("build", cid, "passed"))
        write(path / "results" / cid / "test.json", envelope("test", cid, "passed", "9 passed"))
    rc, out, doc = gate_in_process(path, *ARGS, env=env)
    assert rc == 0, out


def test_without_a_verified_matrix_the_gate_refuses_with_exit_3(cpu_only) -> None:
    path, env = cpu_only
    rc, out, doc = gate_in_process(path, "--plan", "plan.json", "--results", "results", env=env)
    assert rc == 3 and doc is None
    assert "--insecure-no-verify" in out and "Traceback" not in out
    rc, out, doc = gate_in_process(path, "--plan", "plan.json", "--results", "results", "--insecure-no-verify", env=env)
    assert rc == 0, out  # the documented escape hatch judges the plan as it is, and says so
    assert any("--insecure-no-verify" in w for w in doc["warnings"])
