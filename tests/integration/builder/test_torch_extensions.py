"""Torch extensions as they are written: a setup.py-only extension that imports torch at build
time builds against the installed torch; with a real CUDA toolkit on PATH and a CPU torch, the
CPU build hides the toolkit and builds the CPU variant; a failed build says why (the build
script's error, not the build frontend's wrapper line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.helpers.checkout import nvcc_path_env, torch_extension, wheel_variants, xcompat

pytestmark = pytest.mark.slow

WRAPPER = "Backend subprocess exited"


@pytest.fixture(autouse=True)
def _torch() -> None:
    pytest.importorskip("torch", reason="torch is needed to build a torch extension")


@pytest.fixture
def nvcc_on_path() -> dict[str, str]:
    env = nvcc_path_env()
    if env is None:
        pytest.skip("no CUDA toolkit here (nvcc not on PATH nor in /usr/local/cuda*/bin): the CPU build "
                    "has no CUDA toolchain to hide")
    return env


def test_setup_py_only_torch_extension_builds_against_the_installed_torch(tmp_path: Path) -> None:
    project = torch_extension(tmp_path / "tops")
    out = tmp_path / "wheels"
    proc = xcompat("build", ".", "--out", str(out), cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert wheel_variants(out, tmp_path / "unpacked") == ["_cpu"]
    log = (out / "logs" / "native.log").read_text()
    assert "not isolated: builds against the runner's torch==" in log and "setup.py imports torch" in log

    # Isolated on request: the build cannot import torch, and the error line says so.
    proc = xcompat("build", ".", "--isolation", "on", "--out", str(tmp_path / "isolated"), cwd=project)
    assert proc.returncode == 4
    first = next(line for line in proc.stderr.splitlines() if line.startswith("error:"))
    assert "ModuleNotFoundError: No module named 'torch'" in first and WRAPPER not in first, first


def test_cpu_build_is_the_cpu_variant_with_nvcc_on_path(tmp_path: Path, nvcc_on_path: dict[str, str]) -> None:
    project = torch_extension(tmp_path / "tops", with_cuda=True)
    # No matrix: the backend of the torch it builds against (a CPU torch here); then a CPU cell.
    for args in ([], ["--device", "cpu"]):
        out = tmp_path / f"wheels{len(args)}"
        proc = xcompat("build", ".", *args, "--out", str(out), cwd=project, env=nvcc_on_path)
        assert proc.returncode == 0, proc.stderr
        assert wheel_variants(out, tmp_path / f"unpacked{len(args)}") == ["_cpu"]
        assert "nvcc hidden from PATH" in (out / "logs" / "native.log").read_text()


def test_failed_build_names_its_cause(tmp_path: Path, nvcc_on_path: dict[str, str]) -> None:
    """A CUDA build against a CPU torch: the toolkit is named consistently, torch refuses it,
    and the error line is torch's own message."""
    project = torch_extension(tmp_path / "tops", with_cuda=True)
    out = tmp_path / "wheels"
    proc = xcompat("build", ".", "--device", "cuda", "--out", str(out), cwd=project, env=nvcc_on_path)
    assert proc.returncode == 4, proc.stderr
    first = next(line for line in proc.stderr.splitlines() if line.startswith("error:"))
    assert "python -m build failed (exit code 1): OSError: CUDA_HOME environment variable is not set" in first
    assert WRAPPER not in first
    record = json.loads((out / "build.json").read_text())
    assert "OSError: CUDA_HOME environment variable is not set" in record["cells"][0]["reason"]
    log = (out / "logs" / "native.log").read_text()
    assert "CUDA build: toolkit " in log and "(CUDA_HOME, CUDA_PATH, first nvcc on PATH)" in log
