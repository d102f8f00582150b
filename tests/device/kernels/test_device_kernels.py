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
    for name in (graph, "two_stream_event_ordering", "device_move_bit_exact", "wrong_device_input"):
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
