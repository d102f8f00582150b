"""The sample's CUDA kernel on a real GPU: the launcher from the built wheel against a
float64 host reference. Skipped, with the reason, where there is no CUDA device."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def _compute_capability() -> tuple[int, int] | None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    out = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                         text=True, check=False)
    if out.returncode != 0 or not out.stdout.strip():
        return None
    major, _, minor = out.stdout.splitlines()[0].strip().partition(".")
    return int(major), int(minor or 0)


def _nvcc() -> str | None:
    return shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)


# Decided at collection, before the sample_wheels fixture builds two wheels (~2 min).
pytestmark = [
    pytest.mark.device, pytest.mark.cuda, pytest.mark.slow,
    pytest.mark.skipif(_compute_capability() is None, reason="no CUDA device (nvidia-smi reports none)"),
    pytest.mark.skipif(_nvcc() is None, reason="no nvcc to build the test harness"),
]


@pytest.mark.parametrize("variant", ["v1", "v2"])
def test_scaled_add_kernel_matches_float64_on_the_gpu(variant: str, sample_wheels, tmp_path: Path) -> None:
    capability = _compute_capability()
    nvcc = _nvcc()
    assert capability is not None and nvcc is not None  # the module is skipped otherwise
    with zipfile.ZipFile(sample_wheels[variant]) as zf:
        if "sample_ext/libsample_ext_cuda.so" not in zf.namelist():
            pytest.skip("sample wheel built without the CUDA kernel")
        lib = tmp_path / "libsample_ext_cuda.so"
        lib.write_bytes(zf.read("sample_ext/libsample_ext_cuda.so"))
    harness = tmp_path / "harness"
    subprocess.run([nvcc, "-O2", "-cudart", "static", str(HERE / "scaled_add_harness.cu"), "-o", str(harness),
                    "-ldl"], check=True)
    run = subprocess.run([str(harness), str(lib)], capture_output=True, text=True, timeout=120, check=False)
    # Cubins only (no PTX): v1 runs on compute capability 8.x and 9.x, v2 (sm_80 dropped) on 9.x.
    runs_here = capability[0] == 9 or (variant == "v1" and capability[0] == 8)
    if not runs_here:
        # No kernel image for this GPU: the launch must fail cleanly, not compute garbage.
        assert run.returncode == 4, run.stdout + run.stderr
        return
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip() == "ok"
