"""Checks that need a device: graph capture/replay, two-stream ordering, device moves,
wrong-device errors, Metal command-buffer completion. Each returns a short detail string
on success and raises on failure."""

from __future__ import annotations

from typing import Any


def _np_exp_round(x: Any, dtype: Any) -> Any:
    import numpy as np
    import torch

    ref = np.exp(x.detach().cpu().double().numpy())
    return torch.from_numpy(ref).to(dtype)


def wrong_device_input(ops: Any, device: str) -> str:
    """Mixing devices must raise the error a user expects, not compute garbage."""
    import torch

    other = "meta" if device == "cpu" else "cpu"
    a = torch.ones(8, device=device)
    b = torch.ones(8, device=other)
    try:
        ops.add(a, b)
    except (RuntimeError, NotImplementedError) as exc:
        text = str(exc)
        if "device" not in text.lower():
            raise AssertionError(f"add({device}, {other}) raised an unrelated error: {text.splitlines()[0]}") from None
        return f"add({device}, {other}) raised: {text.splitlines()[0][:160]}"
    raise AssertionError(f"add({device}, {other}) returned a result instead of raising")


def device_move_bit_exact(device: str, skip: type[Exception]) -> str:
    """Every bit pattern (NaN payloads, subnormals, -0.0) survives host->device->host."""
    import torch

    if device == "cpu":
        raise skip("no second device to move tensors to on the CPU backend")
    moved = []
    for dtype, itype, bits in ((torch.float32, torch.int32, 32), (torch.float16, torch.int16, 16),
                               (torch.bfloat16, torch.int16, 16)):
        lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        raw = torch.randint(lo, hi, (65537,), dtype=itype if bits == 16 else torch.int64).to(itype)
        host = raw.view(dtype)
        back = host.to(device).to("cpu")
        if not torch.equal(back.view(itype), raw):
            diff = int((back.view(itype) != raw).sum())
            raise AssertionError(f"{dtype}: {diff} element(s) changed bits on the round trip to {device}")
        moved.append(str(dtype).replace("torch.", ""))
    return f"bit-exact round trip cpu->{device}->cpu for {', '.join(moved)}"


def graph_capture_replay(ops: Any) -> str:
    """Capture add+exp into a CUDA (HIP) graph, replay with new inputs, compare to eager."""
    import torch

    n = 4099  # odd, not a multiple of the block size
    a = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):  # warm-up outside capture, as torch requires
            ops.exp(ops.add(a, b))
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, capture_error_mode="global"):
        out = ops.exp(ops.add(a, b))
    for trial in range(3):
        a.copy_(torch.randn(n, device="cuda"))
        b.copy_(torch.randn(n, device="cuda"))
        graph.replay()
        torch.cuda.synchronize()
        eager = ops.exp(ops.add(a, b))
        if not torch.equal(out, eager):
            raise AssertionError(f"replay {trial} differs from eager: max diff {(out - eager).abs().max().item()}")
        ref = _np_exp_round(a.double() + b.double(), torch.float32).to("cuda")
        if not torch.allclose(out, ref, rtol=5e-7, atol=1.2e-38, equal_nan=True):
            raise AssertionError(f"replay {trial} differs from the float64 reference")
    return "3 replays equal eager and the float64 reference"


def two_stream_ordering(ops: Any) -> str:
    """Producer on stream 1, event, consumer on stream 2: the consumer sees finished data."""
    import torch

    n = 1 << 22
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    x = torch.randn(n, device="cuda")
    torch.cuda.synchronize()
    done = torch.cuda.Event()
    with torch.cuda.stream(s1):
        y = x
        for _ in range(8):  # enough work that an unordered consumer would read stale data
            y = ops.add(y, x)
        done.record(s1)
    s2.wait_event(done)
    with torch.cuda.stream(s2):
        z = ops.fma(y, torch.full_like(y, 2.0), x)
    y.record_stream(s2)
    torch.cuda.synchronize()
    expected = x * 9 * 2 + x
    if not torch.allclose(z, expected, rtol=1e-5, atol=1e-5):
        bad = int((~torch.isclose(z, expected, rtol=1e-5, atol=1e-5)).sum())
        raise AssertionError(f"{bad} of {n} elements read before the producer stream finished")
    return "consumer on stream 2 saw the producer's results after the event"


def metal_command_buffer(ops: Any) -> str:
    """Dispatch a Metal kernel, wait for command-buffer completion, check every element."""
    from xcompat.kernels.metal import MetalKernels

    return MetalKernels().command_buffer_check()
