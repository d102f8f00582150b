"""The sample wheels, built natively through xcompat.builder: contents, repair, audits, and
the sample project's own tests run against the installed wheels."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from tests.helpers.sample import install_sample, sample_build_record

from xcompat import jsonio

pytestmark = pytest.mark.slow


def _members(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        return zf.namelist()


@pytest.mark.parametrize("variant", ["v1", "v2"])
def test_sample_tests_pass_against_installed_wheel(variant: str, sample_wheels, tmp_path: Path) -> None:
    target = install_sample(variant)
    project = Path(__file__).resolve().parents[3] / "examples" / ("sample-ext" if variant == "v1" else "sample-ext-v2")
    env = {**os.environ, "PYTHONPATH": str(target)}
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider",
         str(project / "tests")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout
    # The package came from the wheel, not from the source folder.
    check = subprocess.run(
        [sys.executable, "-P", "-c", "import sample_ext; print(sample_ext.__file__)"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
    )
    assert check.stdout.strip().startswith(str(target))


def test_wheel_contents_and_tags(sample_wheels) -> None:
    v1, v2 = sample_wheels["v1"], sample_wheels["v2"]
    assert v1.name.startswith("sample_ext-1.0.0-cp3") and "manylinux_" in v1.name
    assert v2.name.startswith("sample_ext-1.1.0-cp3")
    for wheel in (v1, v2):
        names = _members(wheel)
        assert any(n.startswith("sample_ext/_core.cpython-") for n in names)
        assert "sample_ext/_core_abi3.abi3.so" in names
        assert "sample_ext/_ops.abi3.so" in names
        # Never grafted: torch and CUDA runtime libraries.
        assert not [n for n in names if "libtorch" in n or "libc10" in n or "libcudart" in n], names


def test_build_records_validate_and_show_policy_raise() -> None:
    v1 = sample_build_record("v1")
    v2 = sample_build_record("v2")
    for record in (v1, v2):
        jsonio.validate("build", record)
        assert record["kind"] == "build" and record["status"] == "passed"
        (wheel,) = record["wheels"]
        assert wheel["repair"] == "auditwheel"
        assert set(wheel["excluded_libs"]) >= {"libc10.so", "libtorch_cpu.so"}
        assert wheel["platform_policy"]["source"] in ("auditwheel-json", "auditwheel-text")
    p1 = v1["wheels"][0]["platform_policy"]
    p2 = v2["wheels"][0]["platform_policy"]
    glibc = lambda tag: tuple(int(x) for x in tag.split("_")[1:3])
    # v2 calls arc4random (glibc 2.36): its floor is above v1's, and the record names the symbol.
    assert glibc(p2["symbol_tag"]) > glibc(p1["symbol_tag"])
    assert glibc(p2["symbol_tag"]) == (2, 36)
    set_by = {s["name"] for entry in p2["set_by"] for s in entry["symbols"]}
    assert "arc4random" in set_by


def test_abi3_audit_of_limited_api_modules() -> None:
    v1 = sample_build_record("v1")["wheels"][0]["abi3"]
    v2 = sample_build_record("v2")["wheels"][0]["abi3"]
    assert v1["scope"] == "modules" and v1["baseline"] == "3.10"
    assert v2["baseline"] == "3.11"  # from Requires-Python >= 3.11
    names = {o["name"] for o in v1["objects"]}
    assert names == {"_core_abi3.abi3.so", "_ops.abi3.so"}
    assert v1["status"] == "passed", v1
    assert all(o["is_abi3"] for o in v1["objects"])


def test_cuda_code_for_the_configured_archs(sample_wheels) -> None:
    v1 = sample_build_record("v1")["wheels"][0]["gpu_code"]
    v2 = sample_build_record("v2")["wheels"][0]["gpu_code"]
    if not v1:
        pytest.skip("sample built without nvcc (no CUDA toolkit on this machine)")
    assert v1 == {"sample_ext/libsample_ext_cuda.so": ["sm_80", "sm_90"]}
    assert v2 == {"sample_ext/libsample_ext_cuda.so": ["sm_90"]}  # sm_80 dropped in 1.1.0
