"""The kernel suite on a real GPU. Skipped, with the probe's reason, where the device is absent."""

from __future__ import annotations

import pytest

from xcompat.devices import probe_backend


def _require(backend: str) -> None:
    result = probe_backend(backend)
    if not result.available:
        pytest.skip(f"{backend} not available here: {result.reason}")


@pytest.mark.device
@pytest.mark.parametrize("backend", [pytest.param("cuda", marks=pytest.mark.cuda),
                                     pytest.param("rocm", marks=pytest.mark.rocm)])
def test_gpu_kernel_suite_passes(backend: str) -> None:
    _require(backend)
    from xcompat.jsonio import validate
    from xcompat.kernels import run_kernels

    doc = run_kernels(backend=backend)
    validate("kernels", doc)
    failed = [f"{c['id']}: {c['detail']}" for k in doc["kernels"] for c in k["cases"] if c["status"] == "failed"]
    assert not failed, "\n".join(failed[:20])
    checks = {c["name"]: c for c in doc["checks"]}
    graph = "hip_graph_capture_replay" if backend == "rocm" else "cuda_graph_capture_replay"
    for name in (graph, "graph_capture_reductions", "two_stream_event_ordering", "device_move_bit_exact",
                 "wrong_device_input"):
        assert checks[name]["status"] == "passed", checks[name]
    assert all(r["status"] == "passed" for r in doc["opcheck"].values()), doc["opcheck"]
    assert doc["status"] == "passed" and doc["backend_used"] == backend


@pytest.mark.device
@pytest.mark.cuda
def test_cuda_wrong_device_and_bit_exact_moves() -> None:
    _require("cuda")
    import torch

    from xcompat.kernels.build import kernel_ops, load_kernels

    load_kernels()
    ops = kernel_ops()
    with pytest.raises(RuntimeError, match="same device"):
        ops.add(torch.ones(4, device="cuda"), torch.ones(4))
    bits = torch.randint(-(2**31), 2**31 - 1, (1 << 16,), dtype=torch.int64).to(torch.int32)
    assert torch.equal(bits.view(torch.float32).cuda().cpu().view(torch.int32), bits)


@pytest.mark.device
@pytest.mark.mps
def test_mps_kernel_suite_passes() -> None:
    _require("mps")
    from xcompat.kernels import run_kernels

    doc = run_kernels(backend="mps")
    failed = [c["id"] for k in doc["kernels"] for c in k["cases"] if c["status"] == "failed"]
    assert not failed
    checks = {c["name"]: c["status"] for c in doc["checks"]}
    assert checks["metal_command_buffer_completion"] == "passed"


@pytest.mark.device
@pytest.mark.cuda
def test_cuda_add_over_2_to_the_31_elements_uses_64_bit_indexing() -> None:
    """2^31 + 257 float16 elements: an int32 index would wrap and leave the tail unwritten."""
    _require("cuda")
    import torch

    from xcompat.kernels.build import kernel_ops, load_kernels

    n = 2**31 + 257
    free, _total = torch.cuda.mem_get_info()
    if free < 4 * n * 2:
        pytest.skip(f"needs {4 * n * 2 / 2**30:.0f} GiB of free device memory, {free / 2**30:.0f} GiB free")
    load_kernels()
    ops = kernel_ops()
    a = torch.ones(n, dtype=torch.float16, device="cuda")
    b = torch.full((n,), 2.0, dtype=torch.float16, device="cuda")
    ops.set_poison(1)
    try:
        out = ops.add(a, b)
    finally:
        ops.set_poison(0)
    del a, b
    tail = out[-1024:].float().cpu()
    assert torch.equal(tail, torch.full((1024,), 3.0)), tail[-8:]
    assert int(torch.isnan(out).sum()) == 0


@pytest.mark.device
@pytest.mark.cuda
def test_kernels_run_on_a_non_zero_device_index() -> None:
    """cuda:1 (when there is one): the ops allocate and launch on the inputs' device."""
    _require("cuda")
    import torch

    from xcompat.kernels.build import kernel_ops, load_kernels

    if torch.cuda.device_count() < 2:
        pytest.skip(f"needs two CUDA devices, {torch.cuda.device_count()} visible")
    load_kernels()
    ops = kernel_ops()
    with torch.cuda.device(0):
        x = torch.randint(-8, 9, (4099,), device="cuda:1").float()
        out = ops.add(x, x)
        total = ops.sum(x, True, 8)
        hist = ops.scatter_add(torch.zeros(4099, dtype=torch.long, device="cuda:1"), x, 1, 8)
    assert out.device == torch.device("cuda:1") and torch.equal(out, x * 2)
    assert float(total) == float(x.double().sum()) and float(hist[0]) == float(x.double().sum())


@pytest.mark.device
@pytest.mark.cuda
def test_cuda_half_precision_sums_and_threads_validation() -> None:
    _require("cuda")
    import torch

    from xcompat.kernels.build import kernel_ops, load_kernels

    load_kernels()
    ops = kernel_ops()
    for dtype in (torch.float16, torch.bfloat16):
        x = torch.randint(-8, 9, (100003,), device="cuda").to(dtype)
        exact = float(x.double().sum())
        for deterministic in (True, False):
            got = ops.sum(x, deterministic, 8)
            assert got.dtype == dtype and abs(float(got) - exact) <= abs(exact) * 2**-7 + 1
    with pytest.raises(RuntimeError, match=r"threads must be in \[1, 256\]"):
        ops.sum(torch.ones(4, device="cuda"), False, 0)
