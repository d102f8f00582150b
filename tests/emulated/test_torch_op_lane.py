"""The sample's torch custom op on aarch64 through ``xcompat run --arch aarch64``: its build
compiles against torch, so it is not cross built but built in the emulated root against the
lane's torch; the wheel holds the aarch64 op library, and the lane runs the op's tests with
that torch, with the same outcomes as natively."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

from tests.emulated.helpers import lane, native_outcomes, outcomes

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "examples" / "sample-ext"
# All the sample's test files: test_edge_cases.py takes hypothesis (installed with the lane's
# torch) and xcompat's pytest plugin (its ``device`` fixture, loaded from the lane's copy of xcompat)
TARGETS = ["tests/test_core.py", "tests/test_ops.py", "tests/test_edge_cases.py"]
# Device tests: skipped on both sides, the CUDA part is not built (the lane has no nvcc or GPU),
# and the mixed-device check needs a second device.
CUDA_TESTS = {"tests/test_ops.py::test_cuda_kernel_shipped_when_built",
              "tests/test_ops.py::test_scaled_add_cuda_matches_float64",
              "tests/test_edge_cases.py::test_op_refuses_mixed_devices"}
LANE_TORCH = "/opt/xcompat-venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so"
MATRIX = """\
xcompat: 1
repo: example/sample-ext
serial: 1
python: ["3.11"]
platforms:
  linux:
    archs: [x86_64, aarch64]
backends:
  cpu:
    required: true
tests:
  kernels: none
  pytest: [{targets}]
  isolation: test
  timeout: 300
"""


def _project(tmp_path: Path) -> Path:
    """The sample's sources (not its local build folders) with a matrix for one lane run."""
    project = tmp_path / "sample-ext"
    project.mkdir()
    for name in ("README.md", "pyproject.toml", "setup.py"):
        shutil.copy2(SAMPLE / name, project / name)
    for name in ("csrc", "sample_ext", "tests"):
        shutil.copytree(SAMPLE / name, project / name, ignore=shutil.ignore_patterns("__pycache__"))
    (project / ".xcompat").mkdir()
    (project / ".xcompat" / "matrix.yml").write_text(MATRIX.format(targets=", ".join(TARGETS)), encoding="utf-8")
    return project


def _without_nvcc(path: str) -> str:
    """PATH less the folders holding nvcc: the sample's CUDA test checks for nvcc at test time,
    which says something of this machine, not of the wheel."""
    return os.pathsep.join(p for p in path.split(os.pathsep) if p and not (Path(p) / "nvcc").exists())


def _ops_library(wheel: Path) -> tuple[str, str, list[str]]:
    """(name, ELF machine, DT_NEEDED) of the wheel's ``sample_ext._ops`` library."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.startswith("sample_ext/_ops") and n.endswith(".so"))
        elf = ELFFile(io.BytesIO(archive.read(name)))
        dynamic = elf.get_section_by_name(".dynamic")
        assert isinstance(dynamic, DynamicSection), f"{name} has no dynamic section"
        needed = [str(t.needed) for t in dynamic.iter_tags("DT_NEEDED")]  # type: ignore[attr-defined]
        return name, str(elf.header["e_machine"]), needed


def _mapped(result: dict[str, Any]) -> set[str]:
    mapped = result.get("mapped_libraries") or {}
    found = set(mapped.get("common", []))
    for group in mapped.get("added", []):
        found.update(group if isinstance(group, list) else [group])
    return found


def test_the_sample_torch_op_is_built_in_the_root_against_the_lane_torch_and_passes_the_native_tests(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lane("aarch64")  # made (or found) here, so a machine without QEMU fails or skips with the reason
    project = _project(tmp_path)
    monkeypatch.setenv("PATH", _without_nvcc(os.environ.get("PATH", "")))
    monkeypatch.setenv("SAMPLE_EXT_CUDA", "0")
    native = native_outcomes(project, tmp_path / "native", TARGETS)
    assert {n for n, o in native.items() if o != "passed"} == CUDA_TESTS, native
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "xcompat", "run", str(project), "--out", str(out),
                           "--arch", "aarch64"], cwd=project, capture_output=True, text=True, timeout=3000,
                          check=False, env={**os.environ, "CI": ""})
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    # built in the root, against the lane's torch: the cross build said why it could not
    build = json.loads((out / "wheels" / "build.json").read_text(encoding="utf-8"))
    assert build["emulation"]["build"] == "emulated", build["emulation"]
    why = build["emulation"]["why_emulated"]
    assert "compiles against torch" in why and "the lane's aarch64 torch 2.6.0" in why, why
    name, machine, needed = _ops_library(next((out / "wheels").glob("sample_ext-*-linux_aarch64.whl")))
    assert machine == "EM_AARCH64", (name, machine)
    assert {"libtorch_cpu.so", "libc10.so"} <= set(needed), needed  # linked against torch, not only built
    # the same tests as natively, test by test: the op's CPU tests passed, not skipped
    result = json.loads((out / "test.json").read_text(encoding="utf-8"))
    assert outcomes(out / "test.json") == native, output[-3000:]
    assert sum(n.startswith("tests/test_ops.py::") and o == "passed" for n, o in native.items()) >= 19
    # the edge cases ran on the lane, hypothesis's and the device fixture's included, not skipped
    assert {"tests/test_edge_cases.py::test_op_matches_float64_reference_on_edge_inputs",
            "tests/test_edge_cases.py::test_op_on_each_backend[cpu]"} <= {n for n, o in native.items() if o == "passed"}
    mapped = _mapped(result)  # the op ran on the lane's torch
    assert LANE_TORCH in mapped and any(p.endswith(f"/{name}") for p in mapped), sorted(mapped)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    cell = next(c for c in report["cells"] if c["arch"] == "aarch64")
    assert cell["emulation"]["build"] == "emulated" and "emulated build" in cell["emulation"]["label"]
    assert result["emulation"]["why_emulated"] == why
