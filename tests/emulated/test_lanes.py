"""Cells of other architectures, run here: byte order on s390x, the SVE floor on aarch64, the
sample's C extensions on aarch64, s390x and ppc64le with the same tests as natively."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.emulated.helpers import lane, native_outcomes, outcomes
from tests.helpers.emulation import FIXTURES, need_tool
from xcompat.emulation.cell import run_tests_in_lane

REPO = Path(__file__).resolve().parents[2]


def test_byte_order_bug_is_caught_on_s390x_only(tmp_path: Path) -> None:
    project = FIXTURES / "byteorder_ext"
    native = native_outcomes(project, tmp_path / "native", ["tests"])
    assert set(native.values()) == {"passed"} and len(native) == 6
    for name, expected_failures in (("aarch64", set()), ("s390x", {"tests/test_wire.py::test_pack_writes_the_wire_format"})):
        run = run_tests_in_lane(lane(name), project, tmp_path / name)
        found = outcomes(run.result)
        assert set(found) == set(native), f"{name}: not the native tests"
        assert {n for n, o in found.items() if o != "passed"} == expected_failures, (name, run.output[-2000:])
        assert run.build.mode == "cross", run.build.why_emulated
        assert (run.returncode != 0) == bool(expected_failures)


def test_sve_without_dispatch_faults_at_the_armv8_floor_only(tmp_path: Path) -> None:
    project = FIXTURES / "isa_ext"
    floor = run_tests_in_lane(lane("aarch64", "armv8.0-a"), project, tmp_path / "floor")
    objdump = need_tool("aarch64-linux-gnu-objdump", "binutils-aarch64-linux-gnu")
    library = next((tmp_path / "floor" / "site").glob("isa_unguarded*.so"))
    listing = subprocess.run([objdump, "-d", str(library)], capture_output=True, text=True, check=True).stdout
    assert "cntw" in listing, "the fixture holds no SVE instruction: the floor run would prove nothing"
    document = outcomes(floor.result)
    assert document == {"tests/test_isa.py::test_dispatched_lanes": "passed",
                        "tests/test_isa.py::test_unguarded_lanes": "crashed"}, floor.output[-2000:]
    assert "SIGILL" in floor.output
    rich = run_tests_in_lane(lane("aarch64"), project, tmp_path / "rich")
    assert set(outcomes(rich.result).values()) == {"passed"}, rich.output[-2000:]


@pytest.mark.parametrize("arch", ["aarch64", "s390x", "ppc64le"])
def test_sample_c_extensions_pass_the_native_tests(arch: str, tmp_path: Path) -> None:
    project = REPO / "examples" / "sample-ext"
    targets = ["tests/test_core.py"]  # the C extensions; the other files test the torch op
    env = {"SAMPLE_EXT_TORCH": "0"}
    native = native_outcomes(project, tmp_path / "native", targets, env)
    assert native and set(native.values()) == {"passed"}
    # torch=False: SAMPLE_EXT_TORCH=0 is the sample's own switch, which xcompat cannot see; without
    # it the aarch64 build would go to the root against the lane's torch
    run = run_tests_in_lane(lane(arch), project, tmp_path / arch, targets=targets, build_env=env, torch=False)
    assert run.build.mode == "cross", run.build.why_emulated
    assert outcomes(run.result) == native, run.output[-3000:]


@pytest.mark.parametrize("arch", ["aarch64", "s390x"])
def test_released_project_passes_its_native_tests(arch: str, tmp_path: Path) -> None:
    from tests.helpers.real_projects import PROJECTS, source_tree

    project = PROJECTS["markupsafe"]
    tree = source_tree(project, project.version, tmp_path / "src")
    native = native_outcomes(tree, tmp_path / "native", [project.tests], isolation=True)
    assert len(native) >= project.min_tests and "failed" not in native.values()
    run = run_tests_in_lane(lane(arch), tree, tmp_path / arch, targets=[project.tests])
    assert any(n.endswith(f"{arch}-linux-gnu.so") for n in _wheel_names(run.build.wheel)), \
        "the wheel holds no compiled speedups for the lane: its C code would go untested"
    assert outcomes(run.result) == native, run.output[-3000:]


def _wheel_names(wheel: Path) -> list[str]:
    import zipfile

    return zipfile.ZipFile(wheel).namelist()
