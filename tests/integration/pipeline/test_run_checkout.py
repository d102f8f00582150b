"""``xcompat run`` on a checkout as users keep one: the stale instrumented ``build/`` is not what
is built, tested and diffed, and the checkout is left byte for byte as it was, its output folder
ignoring itself for git; a setup.py-only torch extension builds as the project and as its git
baseline; ``--isolation`` reaches both builds; a CPU cell builds the CPU variant with a real
nvcc on PATH; a failed build's summary line names its cause."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.helpers.checkout import (
    assert_not_instrumented,
    git,
    nvcc_path_env,
    stale_checkout_at,
    torch_extension,
    tree_hashes,
    wheel_variants,
    xcompat,
)

pytestmark = pytest.mark.slow

WRAPPER = "Backend subprocess exited"


def _stages(out: Path) -> dict[str, dict]:
    return {s["name"]: s for s in json.loads((out / "run.json").read_text())["stages"]}


def _release(project: Path, setup_file: str, old: str, new: str) -> None:
    """Tag the committed state v1.0.0 (the ABI baseline), then commit version 1.1.0."""
    git(project, "tag", "v1.0.0")
    path = project / setup_file
    path.write_text(path.read_text().replace(old, new))
    git(project, "commit", "-q", "-am", "1.1.0")


def test_run_leaves_the_checkout_as_it_was(tmp_path: Path) -> None:
    project = stale_checkout_at(tmp_path)
    _release(project, "pyproject.toml", 'version = "1.0.0"', 'version = "1.1.0"')
    before = tree_hashes(project)

    proc = xcompat("run", ".", cwd=project)  # default --out: .xcompat-out inside the checkout
    out = project / ".xcompat-out"
    # The wheel built, tested and diffed is a clean one (the baseline's too), not build/'s leftover.
    assert_not_instrumented(sorted((out / "wheels").glob("*.whl")), tmp_path / "unpacked")
    stages = _stages(out)
    # Every stage that builds, installs or runs the tests ran (the verdict is not this test's subject).
    for name in ("build", "baseline", "test", "abi", "coverage", "report"):
        assert stages[name]["status"] == "passed", (name, stages[name], proc.stderr)
    assert tree_hashes(project, skip={".xcompat-out"}) == before
    assert "*" in (out / ".gitignore").read_text().splitlines()
    assert git(project, "status", "--porcelain", "--untracked-files=all") == ""


def test_setup_py_only_torch_extension_is_project_and_baseline(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="torch is needed to build a torch extension")
    project = torch_extension(tmp_path / "tops")
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "1.0.0")
    _release(project, "setup.py", 'version="1.0.0"', 'version="1.1.0"')

    out = tmp_path / "out"
    proc = xcompat("run", ".", "--no-coverage", "--out", str(out), cwd=project)
    stages = _stages(out)
    assert stages["build"]["status"] == "passed", (stages["build"], proc.stderr)
    assert stages["baseline"]["status"] == "passed", (stages["baseline"], proc.stderr)
    assert "the last release tag v1.0.0" in stages["baseline"]["detail"]
    abi = json.loads((out / "abi.json").read_text())
    assert abi["old"]["version"] == "1.0.0" and abi["new"]["version"] == "1.1.0"
    assert proc.returncode == 0, proc.stderr

    # `run` takes build's override: isolated, the build cannot import torch, and its summary says so.
    isolated = tmp_path / "isolated"
    proc = xcompat("run", ".", "--no-coverage", "--isolation", "on", "--out", str(isolated), cwd=project)
    assert proc.returncode == 1
    build = _stages(isolated)["build"]
    assert build["status"] == "error" and build["exit_code"] == 4
    assert "No module named 'torch'" in build["detail"] and WRAPPER not in build["detail"], build["detail"]
    summary = [line for line in proc.stderr.splitlines() if line.strip().startswith("build ")]
    assert summary and all("No module named 'torch'" in line for line in summary), proc.stderr


def test_cpu_cell_builds_the_cpu_variant_with_nvcc_on_path(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="torch is needed to build a torch extension")
    env = nvcc_path_env()
    if env is None:
        pytest.skip("no CUDA toolkit here (nvcc not on PATH nor in /usr/local/cuda*/bin): the CPU cell "
                    "has no CUDA toolchain to hide")
    project = torch_extension(tmp_path / "tops", with_cuda=True)
    out = tmp_path / "out"
    proc = xcompat("run", ".", "--no-coverage", "--out", str(out), cwd=project, env=env)
    assert _stages(out)["build"]["status"] == "passed", proc.stderr
    assert wheel_variants(out / "wheels", tmp_path / "unpacked") == ["_cpu"]
    assert "device backend cpu (asked for)" in (out / "wheels" / "logs" / "native.log").read_text()
