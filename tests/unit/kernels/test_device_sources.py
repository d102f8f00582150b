"""Source-level checks of device code that cannot run here (HIP, Metal, multi-GPU): each
fails on the defect it guards against. The CUDA sources are also compiled by nvcc
(tests/integration/kernels/test_nvcc_and_probe.py) and, with a CUDA build of torch, built
and loaded by the cuda-build tier (tests/cuda_build)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
KERNELS = REPO / "kernels"
CU = (KERNELS / "cuda" / "xk_cuda.cu").read_text(encoding="utf-8")
GLUE = (KERNELS / "torch" / "xk_ops_cuda.cpp").read_text(encoding="utf-8")
METAL = (KERNELS / "metal" / "xk_kernels.metal").read_text(encoding="utf-8")
SAMPLE_OPS = (REPO / "examples" / "sample-ext" / "csrc" / "ops.cpp").read_text(encoding="utf-8")


def _code(text: str) -> str:
    """Source without // comments."""
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def test_hip_shuffle_is_guarded_by_rocm_version_and_warp_sync_builtins() -> None:
    code = _code(CU)
    assert "__shfl_down_sync(0xffffffffffffffffull" in code
    guard = code.index("HIP_VERSION >= 60200000")
    assert guard < code.index("__shfl_down_sync(0xffffffffffffffffull")
    assert "__shfl_down((v), (off))" in code  # ROCm < 6.2 fallback
    # defined before the first HIP/CUDA header include
    assert code.index("#define HIP_ENABLE_WARP_SYNC_BUILTINS") < code.index("#include <cuda_runtime.h>")
    # every shuffle goes through the guarded macro
    assert len(re.findall(r"__shfl_down_sync\(", code)) == 2


def test_bad_index_counter_is_64_bit() -> None:
    code = _code(CU) + _code(GLUE)
    assert "unsigned long long* bad" in code and "atomicAdd(bad, 1ull)" in code
    assert "int* bad" not in code and "bad.item<int>()" not in code


def test_sum_and_scatter_add_outputs_are_poisoned_not_zero_filled() -> None:
    glue = _code(GLUE)
    assert "at::zeros" not in glue
    for fn in ("sum_cuda", "scatter_add_cuda"):
        body = glue[glue.index(f"at::Tensor {fn}("):]
        body = body[: body.index("\n}\n")]
        assert "poisoned(at::empty(" in body, fn
    # the atomic launchers zero their outputs on the stream themselves
    launchers = _code(CU)[_code(CU).index("int sum_atomic("):]
    assert launchers.count("cudaMemsetAsync(out, 0") == 2


def test_threads_is_validated_and_used_on_cuda() -> None:
    glue = _code(GLUE)
    assert "int64_t /*threads*/" not in glue
    assert glue.count("check_threads(threads,") == 2
    assert "threads, stream())" in glue


def test_kernel_indexing_is_64_bit() -> None:
    code = _code(CU)
    loops = re.findall(r"for \((\w[\w ]*?) \w+ = ", code)
    assert loops and all(t in ("int64_t", "int") for t in loops)
    # int loop variables only for warp offsets, never for element indices
    assert not re.search(r"for \(int \w+ = (blockIdx|threadIdx)", code)
    assert "softmax_kernel(const float* in, float* out, int64_t cols)" in code


def test_metal_scatter_add_checks_bounds_and_softmax_offsets_are_64_bit() -> None:
    code = _code(METAL)
    scatter = code[code.index("kernel void xk_scatter_add"):]
    assert "if (k < 0 || k >= bins)" in scatter and scatter.index("k >= bins") < scatter.index("atomic_fetch_add_explicit(out")
    assert "ulong(row) * cols" in code and "row * cols" not in code.replace("ulong(row) * cols", "")


def test_sample_op_uses_torchs_current_stream_a_device_guard_and_has_a_meta_kernel() -> None:
    code = _code(SAMPLE_OPS)
    cuda = code[code.index("at::Tensor scaled_add_impl_cuda("):]
    cuda = cuda[: cuda.index("\n}\n")]
    assert "nullptr)" not in cuda  # the legacy default stream
    assert "c10::DeviceGuard guard(a_in.device())" in cuda
    assert "getStream(a_in.device()).native_handle()" in cuda
    assert cuda.index("DeviceGuard") < cuda.index("at::empty(")
    assert "TORCH_LIBRARY_IMPL(sample_ext, Meta, m)" in code


def test_kernels_runner_metal_and_device_checks_import_no_cycle() -> None:
    """execute.py is a leaf; metal.py and device_checks.py never import the runner."""
    def imports(name: str) -> set[str]:
        tree = ast.parse((REPO / "src" / "xcompat" / "kernels" / f"{name}.py").read_text(encoding="utf-8"))
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
        return {m for m in found if m.startswith("xcompat.kernels")}

    leaf = {m.split(".")[2] if m.count(".") >= 2 else m for m in imports("execute")}
    assert not leaf & {"runner", "metal", "device_checks", "build"}, leaf
    for name in ("metal", "device_checks"):
        assert not any(m.startswith("xcompat.kernels.runner") for m in imports(name)), name
    assert not any(m.startswith("xcompat.kernels.metal") for m in imports("device_checks"))
