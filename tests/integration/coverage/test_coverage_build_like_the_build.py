"""The coverage stage's instrumented build is made the way the run's build is: from the private
copy of the sources ``xcompat build`` works in, and with the toolchain environment of the cell's
device backend. A checkout's leftovers (``build/``, egg-info) never reach it and the checkout is
never written; a torch extension that adds its CUDA part when it sees ``nvcc`` builds its CPU
variant for a CPU cell and is measured. Each through ``xcompat run``, with a coverage-build
cache of its own."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from tests.helpers.checkout import (
    c_extension,
    git,
    nvcc_path_env,
    stale_checkout_at,
    torch_extension,
    tree_hashes,
    xcompat,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("gcc") is None,
                       reason="the coverage build needs gcc and gcov (Linux)"),
]


def _stages(out: Path) -> dict[str, dict]:
    return {s["name"]: s for s in json.loads((out / "run.json").read_text())["stages"]}


def _measured(out: Path) -> set[str]:
    return {f["path"] for f in json.loads((out / "coverage" / "coverage.json").read_text())["files"]}


def _coverage_build(cache: Path, name: str) -> Path:
    (built,) = sorted((cache / "coverage-builds").glob(f"{name}-*/src"))
    return built


def _sources_in(built: Path) -> set[str]:
    """The files of an instrumented build that it did not make: its ``build/`` folder, the
    in-place modules and gcov notes left out, and its private git repository."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(built):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if d != ".git" and not (here == built and d == "build")]
        out.update(str((here / n).relative_to(built)) for n in filenames if not n.endswith((".so", ".gcno")))
    return out


def test_stale_checkout_is_not_written_and_its_leftovers_stay_out_of_the_coverage_build(tmp_path: Path) -> None:
    project = stale_checkout_at(tmp_path)  # build/ with an instrumented module, tinyc.egg-info beside it
    before = tree_hashes(project)
    cache = tmp_path / "cache"
    out = tmp_path / "out"
    proc = xcompat("run", ".", "--out", str(out), cwd=project, env={"XCOMPAT_CACHE": str(cache)})
    stages = _stages(out)
    assert stages["coverage"]["status"] == "passed", (stages["coverage"], proc.stderr[-3000:])
    assert "tinyc/_core.c" in _measured(out)

    assert tree_hashes(project) == before
    assert git(project, "status", "--porcelain", "--untracked-files=all") == ""
    built = _coverage_build(cache, "tinyc")
    assert not list(built.glob("*.egg-info")), "the checkout's egg-info was copied into the coverage build"
    # Exactly the files git knows, as the wheel's build copy holds them; nothing else of the checkout's.
    assert _sources_in(built) == set(git(project, "ls-files").split()), sorted(_sources_in(built))
    log = (out / "logs" / "coverage-build.log").read_text()
    assert f"sources of {project} copied to {built}" in log, log[:2000]


def test_torch_extension_with_nvcc_in_sight_is_measured_as_its_cpu_variant(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="torch is needed to build a torch extension")
    env = nvcc_path_env()
    if env is None:
        pytest.skip("no CUDA toolkit here (nvcc not on PATH nor in /usr/local/cuda*/bin): the CPU cell "
                    "has no CUDA toolchain to hide")
    project = torch_extension(tmp_path / "tops", with_cuda=True)
    cache = tmp_path / "cache"
    out = tmp_path / "out"
    proc = xcompat("run", ".", "--out", str(out), cwd=project, env={**env, "XCOMPAT_CACHE": str(cache)})
    stages = _stages(out)
    assert stages["build"]["status"] == "passed", (stages["build"], proc.stderr[-3000:])
    # Measured, not "not measured: ... CUDA_HOME ...": the instrumented build is the CPU variant.
    assert stages["coverage"]["status"] == "passed", (stages["coverage"], proc.stderr[-3000:])
    assert "csrc/cpu.cpp" in _measured(out)
    built = _coverage_build(cache, "tops")
    assert sorted(p.name.split(".")[0] for p in (built / "tops").glob("*.so")) == ["_cpu"]
    log = (out / "logs" / "coverage-build.log").read_text()
    assert "device backend cpu" in log and "nvcc hidden from PATH" in log, log[:2000]


# A setup.py that, as torch extensions do, adds a CUDA extension when it sees a toolkit; here it
# refuses to build instead, so neither torch nor a real toolkit is needed to tell.
SEES_NO_TOOLKIT = """import os
import shutil

from setuptools import Extension, setup

if shutil.which("nvcc") or os.environ.get("CUDA_HOME"):
    raise SystemExit("nvcc or CUDA_HOME in sight: this would be the CUDA variant")
setup(packages=["tinyc"], ext_modules=[Extension("tinyc._core", ["tinyc/_core.c"])])
"""


def test_cpu_cells_coverage_build_sees_no_cuda_toolkit(tmp_path: Path) -> None:
    toolkit = tmp_path / "cuda-12.4"
    (toolkit / "include").mkdir(parents=True)
    (toolkit / "include" / "cuda.h").write_text("")
    (toolkit / "bin").mkdir()
    (toolkit / "bin" / "nvcc").write_text("#!/bin/sh\nexit 1\n")
    (toolkit / "bin" / "nvcc").chmod(0o755)
    project = c_extension(tmp_path / "tinyc")
    (project / "setup.py").write_text(SEES_NO_TOOLKIT)
    git(project, "commit", "-q", "-am", "CPU variant only without a toolkit")
    out = tmp_path / "out"
    env = {"PATH": f"{toolkit / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", "CUDA_HOME": str(toolkit),
           "XCOMPAT_CACHE": str(tmp_path / "cache")}
    proc = xcompat("run", ".", "--out", str(out), cwd=project, env=env)
    stages = _stages(out)
    assert stages["build"]["status"] == "passed", (stages["build"], proc.stderr[-3000:])
    assert stages["coverage"]["status"] == "passed", (stages["coverage"], proc.stderr[-3000:])
    assert "tinyc/_core.c" in _measured(out)
    log = (out / "logs" / "coverage-build.log").read_text()
    # The toolkit is first on PATH, so it is the first folder named (another nvcc may follow).
    assert f"nvcc hidden from PATH ({toolkit / 'bin'}" in log and "unset CUDA_HOME" in log, log[:2000]
