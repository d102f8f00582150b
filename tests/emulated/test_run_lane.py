"""``xcompat run --arch``: a whole run of another architecture's cell on this machine, through
the same stages as a native run: the same tests as natively, the report marking the cell
emulated, the byte-order bug red on s390x only, and the ISA floor of ``abi.isa-floors``
applied twice (the tests at the floor's CPU model and at the feature-rich one, the machine-code
scan of the wheel), and the conformance kernels run in the aarch64 root."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.emulated.helpers import lane, native_outcomes, outcomes
from tests.helpers.emulation import FIXTURES

MATRIX = """\
xcompat: 1
repo: example/{name}
serial: 1
python: ["3.11", "3.13"]
platforms:
  linux:
    archs: [x86_64, aarch64, s390x]
backends:
  cpu:
    required: true
tests:
  kernels: none
  pytest: [tests]
  isolation: test
  timeout: 300
abi:
  isa-floors: {{aarch64: armv8.0-a}}
"""


def _project(fixture: str, tmp_path: Path) -> Path:
    project = tmp_path / fixture
    shutil.copytree(FIXTURES / fixture, project)
    (project / ".xcompat").mkdir()
    (project / ".xcompat" / "matrix.yml").write_text(MATRIX.format(name=fixture), encoding="utf-8")
    return project


def _run(project: Path, out: Path, *options: str) -> tuple[int, dict[str, Any], str]:
    done = subprocess.run([sys.executable, "-m", "xcompat", "run", str(project), "--out", str(out), *options],
                          cwd=project, capture_output=True, text=True, timeout=1800, check=False,
                          env={**os.environ, "CI": ""})
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return done.returncode, report, done.stdout + done.stderr


def _cell(report: dict[str, Any], arch: str) -> dict[str, Any]:
    return next(c for c in report["cells"] if c["arch"] == arch)


@pytest.mark.parametrize(("arch", "failing"), [
    ("aarch64", set()),
    ("s390x", {"tests/test_wire.py::test_pack_writes_the_wire_format"}),
])
def test_a_lane_runs_the_native_tests_and_the_report_marks_it_emulated(
        arch: str, failing: set[str], tmp_path: Path) -> None:
    lane(arch)  # made (or found) here, so a machine without QEMU fails or skips with the reason
    project = _project("byteorder_ext", tmp_path)
    native = native_outcomes(project, tmp_path / "native", ["tests"])
    assert len(native) == 6 and set(native.values()) == {"passed"}
    baseline = shutil.copytree(project, tmp_path / "baseline")  # the last release: the same code
    code, report, output = _run(project, tmp_path / "out", "--arch", arch, "--baseline", str(baseline))
    found = outcomes(tmp_path / "out" / "test.json")
    assert set(found) == set(native), output[-3000:]  # the same tests, by node id
    assert {n for n, o in found.items() if o != "passed"} == failing, output[-3000:]
    assert (code == 0) == (not failing) and report["conclusion"] == ("failure" if failing else "success")
    cell = _cell(report, arch)
    emulation = cell["emulation"]
    assert emulation["arch"] == arch and emulation["build"] == "cross" and emulation["qemu"][0].isdigit()
    floor_cpu = {"aarch64": "cortex-a57", "s390x": "max"}[arch]  # abi.isa-floors names aarch64's only
    assert emulation["cpu"] == floor_cpu and emulation["label"].startswith(f"emulated: QEMU {emulation['qemu'][:3]}")
    markdown = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert f"linux {arch} (emulated: QEMU" in markdown and "cross build" in markdown
    # the baseline is built for the lane too, and the diff reads both foreign wheels natively
    assert report["abi"]["compared"] and report["abi"]["required_bump"] == "none", output[-3000:]
    assert f"linux_{arch}.whl" in " ".join(p.name for p in (tmp_path / "out" / "baseline").rglob("*.whl"))
    stages = {s["kind"]: s for s in cell["stages"]}
    assert stages["coverage"]["status"] == "skipped" and "native cells" in stages["coverage"]["summary"]
    # the root has Python 3.11 only: the matrix's 3.13 cell of the arch is not run here, and says so
    elsewhere = {c["id"]: c["why"] for c in report["not_run_here"]}
    assert "the emulated" in elsewhere[f"py3.13-linux-{arch}-cpu"]
    assert not any(c["id"] == f"py3.13-linux-{arch}-cpu" for c in report["cells"])


def test_the_isa_floor_faults_the_unguarded_test_and_the_scan_names_its_function(tmp_path: Path) -> None:
    lane("aarch64", "armv8.0-a")
    project = _project("isa_ext", tmp_path)
    code, report, output = _run(project, tmp_path / "floor", "--arch", "aarch64")
    assert code == 1, output[-3000:]
    assert outcomes(tmp_path / "floor" / "test.json") == {"tests/test_isa.py::test_dispatched_lanes": "passed",
                                                          "tests/test_isa.py::test_unguarded_lanes": "crashed"}
    crash = next(f for f in report["failures"] if f["name"] == "tests/test_isa.py::test_unguarded_lanes")
    assert crash["outcome"] == "crashed" and "SIGILL" in crash["message"] + crash["log_tail"]
    # the tests ran at the floor's model and again at the feature-rich one: the failure names the floor
    assert crash["message"].startswith("at cortex-a57 (armv8.0-a floor): "), crash["message"]
    emulation = _cell(report, "aarch64")["emulation"]
    assert "(armv8.0-a floor)" in emulation["label"]
    assert emulation["runs"] == [
        {"cpu": "cortex-a57", "floor": "armv8.0-a", "status": "crashed",
         "failed": ["tests/test_isa.py::test_unguarded_lanes"]},
        {"cpu": "max", "floor": None, "status": "passed", "failed": []}], output[-3000:]
    markdown = (tmp_path / "floor" / "report.md").read_text(encoding="utf-8")
    assert "at cortex-a57 (armv8.0-a floor): crashed" in emulation["label"] and "at max: passed" in emulation["label"]
    assert "crashed (at cortex-a57 (armv8.0-a floor): killed by SIGILL)" in markdown
    # one test result, the two runs merged: two tests, not four
    assert _cell(report, "aarch64")["tests"] == {"passed": 1, "failed": 1, "skipped": 0, "not_run": 0}
    assert not (tmp_path / "floor" / "test-max.json").exists()
    assert (tmp_path / "floor" / "logs" / "test-max.log").is_file()
    scan = json.loads((tmp_path / "floor" / "isa.json").read_text(encoding="utf-8"))
    verdicts = {o["path"].rsplit(":", 1)[-1].split(".")[0]: o for o in scan["objects"]}
    assert scan["status"] == "failed" and scan["floor"] == "armv8.0-a"
    assert verdicts["isa_unguarded"]["verdict"] == "unguarded" and verdicts["isa_dispatched"]["verdict"] == "dispatched"
    assert [f["function"] for f in verdicts["isa_unguarded"]["functions"]] == ["wide_lanes"]
    # --floor overrides the matrix: at the SVE level both tests pass and nothing is above it
    code, report, output = _run(project, tmp_path / "sve", "--arch", "aarch64", "--floor", "armv8.2-a+sve")
    assert code == 0, output[-3000:]
    assert set(outcomes(tmp_path / "sve" / "test.json").values()) == {"passed"}
    assert _cell(report, "aarch64")["emulation"]["cpu"] == "a64fx"
    assert [r["cpu"] for r in _cell(report, "aarch64")["emulation"]["runs"]] == ["a64fx", "max"]


def test_the_conformance_kernels_run_in_the_aarch64_lane(tmp_path: Path) -> None:
    """A project that uses torch: the kernels stage runs ``xcompat kernels run`` in the root
    (torch installed there from the cached wheel), on the CPU paths of an aarch64 CPU, at the
    matrix's floor and on the feature-rich model."""
    lane("aarch64")
    project = _project("byteorder_ext", tmp_path)
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text(encoding="utf-8").replace(
        'requires-python = ">=3.10"', 'requires-python = ">=3.10"\ndependencies = ["torch"]'), encoding="utf-8")
    matrix = project / ".xcompat" / "matrix.yml"
    matrix.write_text(matrix.read_text(encoding="utf-8").replace("kernels: none", "kernels: [add, softmax]"),
                      encoding="utf-8")
    code, report, output = _run(project, tmp_path / "out", "--arch", "aarch64")
    stages = {s["kind"]: s for s in _cell(report, "aarch64")["stages"]}
    assert stages["kernels"]["status"] == "passed", output[-3000:]
    kernels = json.loads((tmp_path / "out" / "kernels.json").read_text(encoding="utf-8"))
    assert kernels["status"] == "passed" and kernels["backend_used"] == "cpu"
    assert kernels["environment"]["platform"] == "linux-aarch64", kernels["environment"]
    # at the matrix's armv8.0-a floor, then again on the feature-rich model
    assert kernels["emulation"]["arch"] == "aarch64" and kernels["emulation"]["cpu"] == "cortex-a57"
    assert [(r["cpu"], r["floor"], r["status"], r["failed"]) for r in kernels["emulation"]["runs"]] == [
        ("cortex-a57", "armv8.0-a", "passed", []), ("max", None, "passed", [])]
    assert not (tmp_path / "out" / "kernels-max.json").exists()
    assert {k["name"] for k in kernels["kernels"]} == {"add", "softmax"}
    assert all(k["status"] == "passed" and k["counts"]["passed"] > 0 for k in kernels["kernels"])
    assert "neon" in kernels["isa"]["supported"], kernels["isa"]  # the NEON path ran, not only the scalar one
    assert kernels["operators"]["status"] == "not_run" and "emulated aarch64 lane" in kernels["operators"]["summary"]
    assert code == 0, output[-3000:]


CROSS_REFUSING_SETUP = """\
import os

from setuptools import Extension, setup

# as a build that runs code of its target does: it cannot be cross compiled
if os.environ.get("_PYTHON_HOST_PLATFORM"):
    raise SystemExit("this build runs its own target code")

setup(ext_modules=[Extension("byteorder_ext", sources=["csrc/byteorder.c"])])
"""


def test_a_build_that_cannot_cross_compile_is_built_in_the_root_and_the_result_says_so(tmp_path: Path) -> None:
    lane("aarch64")
    project = _project("byteorder_ext", tmp_path)
    (project / "setup.py").write_text(CROSS_REFUSING_SETUP, encoding="utf-8")
    code, report, output = _run(project, tmp_path / "out", "--arch", "aarch64")
    assert code == 0, output[-3000:]
    found = outcomes(tmp_path / "out" / "test.json")
    assert len(found) == 6 and set(found.values()) == {"passed"}
    build = json.loads((tmp_path / "out" / "wheels" / "build.json").read_text(encoding="utf-8"))
    assert build["emulation"]["build"] == "emulated"
    assert "cross build for aarch64 failed" in build["emulation"]["why_emulated"]
    kept = tmp_path / "out" / "wheels" / "logs"
    assert "this build runs its own target code" in (kept / "cross-build-aarch64.log").read_text(encoding="utf-8")
    assert build["wheels"][0]["log"] == "logs/emulated-build-aarch64.log"
    assert "emulated build" in _cell(report, "aarch64")["emulation"]["label"]
