"""The warp-shuffle selection in xk_cuda.cu, preprocessed by nvcc as CUDA and as HIP of
two ROCm versions (no ROCm toolchain here: the preprocessor shows which intrinsic each
build would compile)."""

from __future__ import annotations

import re
import subprocess

import pytest
from tests.helpers.kernels import KERNELS, nvcc


@pytest.mark.skipif(nvcc() is None, reason="nvcc is not installed on this machine")
@pytest.mark.parametrize(("defines", "expected", "builtins"), [
    ((), "__shfl_down_sync(0xffffffffu,", False),
    (("-D__HIP_PLATFORM_AMD__", "-DHIP_VERSION=60100000"), "__shfl_down((v), (off))", True),
    (("-D__HIP_PLATFORM_AMD__", "-DHIP_VERSION=60200000"), "__shfl_down_sync(0xffffffffffffffffull,", True),
])
def test_shuffle_intrinsic_matches_the_platform(defines: tuple[str, ...], expected: str, builtins: bool,
                                                tmp_path) -> None:
    src = (KERNELS / "cuda" / "xk_cuda.cu").read_text(encoding="utf-8")
    # report whether HIP_ENABLE_WARP_SYNC_BUILTINS is defined where the headers are included
    probe = src.replace("#include <cuda_runtime.h>",
                        "#ifdef HIP_ENABLE_WARP_SYNC_BUILTINS\nint xk_warp_sync_builtins_on;\n#endif\n"
                        "#include <cuda_runtime.h>", 1)
    (tmp_path / "xk_cuda.h").write_text((KERNELS / "cuda" / "xk_cuda.h").read_text(encoding="utf-8"))
    (tmp_path / "probe.cu").write_text(probe)
    exe = nvcc()
    assert exe is not None
    proc = subprocess.run([exe, "-E", "-x", "cu", *defines, str(tmp_path / "probe.cu")], capture_output=True,
                          text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    ours = proc.stdout[proc.stdout.index("block_reduce_max"):]
    found = re.findall(r"__shfl_down(?:_sync)?\([^,]*,?", ours)
    assert found and all(f.startswith(expected.split("(")[0] + "(") for f in found), found
    assert expected in ours
    assert ("xk_warp_sync_builtins_on" in proc.stdout) is builtins
