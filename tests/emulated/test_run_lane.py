"""``xcompat run --arch``: a whole run of another architecture's cell on this machine, through
the same stages as a native run: the same tests as natively, the report marking the cell
emulated, the byte-order bug red on s390x only, and the ISA floor of ``abi.isa-floors``
applied twice (the tests at the floor's CPU model, the machine-code scan of the wheel)."""

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
    assert "(armv8.0-a floor)" in _cell(report, "aarch64")["emulation"]["label"]
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
