"""Checks that need a device: graph capture/replay, two-stream ordering, device moves,
wrong-device errors, Metal command-buffer completion. Each returns a short detail string
on success and raises on failure."""

from __future__ import annotations

from typing import Any

# expf's error bound in CUDA's and HIP's math libraries (without fast math): 2 ulp; one
# more half ulp for the rounding of the float64 reference to float32.
EXPF_ULPS = 2.5


def exp_of_float32_sum_reference(a: Any, b: Any) -> Any:
    """What add-then-exp computes, modelled as the kernels do it: the sum is rounded to
    float32 first (the add kernel's output), then exp is taken of that float32 value. The
    float64 exp of the rounded sum is rounded once to float32."""
    import numpy as np
    import torch

    s32 = (a.detach().cpu() + b.detach().cpu()).to(torch.float32)  # float32 add, as the kernel
    with np.errstate(over="ignore", under="ignore"):
        ref = np.exp(s32.double().numpy())
    return torch.from_numpy(ref).to(torch.float32)


def within_ulps(out: Any, ref: Any, ulps: float) -> tuple[bool, str]:
    """Elementwise |out - ref| <= ulps * ulp(ref) (float32), equal infinities and NaNs."""
    import torch

    out, ref = out.detach().cpu().double(), ref.detach().cpu()
    finite = torch.isfinite(ref)
    ulp = torch.where(finite, torch.nextafter(ref.abs(), torch.tensor(float("inf"))) - ref.abs(),
                      torch.zeros_like(ref)).double()
    ulp = torch.clamp(ulp, min=float(torch.finfo(torch.float32).smallest_normal) * 2.0**-23)
    err = (out - ref.double()).abs()
    ok_finite = (err <= ulps * ulp) | ~finite
    same_special = (out[~finite] == ref.double()[~finite]) | (out[~finite].isnan() & ref[~finite].isnan())
    ok = bool(ok_finite.all()) and bool(same_special.all())
    worst = float((err[finite] / ulp[finite]).max()) if bool(finite.any()) else 0.0
    return ok, f"max error {worst:.2f} ulp (limit {ulps})"


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
        ok, how = within_ulps(out, exp_of_float32_sum_reference(a, b), EXPF_ULPS)
        if not ok:
            raise AssertionError(f"replay {trial} differs from exp(float32(a + b)): {how}")
    return f"3 replays equal eager and exp(float32(a + b)) within {EXPF_ULPS} ulp"


def graph_capture_reductions(ops: Any) -> str:
    """Capture sum (deterministic: its scratch buffer is allocated inside the capture) and
    scatter_add (its capture branch skips the bad-index read-back) into one graph; replay
    with new inputs and compare with eager runs and exact integer references."""
    import torch

    n, bins = 100003, 17
    x = torch.randint(-8, 9, (n,), device="cuda").float()
    idx = torch.randint(0, bins, (n,), device="cuda")
    w = torch.randint(-8, 9, (n,), device="cuda").float()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            ops.sum(x, True, 8)
            ops.scatter_add(idx, w, bins, 8)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, capture_error_mode="global"):
        total = ops.sum(x, True, 8)
        hist = ops.scatter_add(idx, w, bins, 8)
    for trial in range(3):
        x.copy_(torch.randint(-8, 9, (n,), device="cuda").float())
        idx.copy_(torch.randint(0, bins, (n,), device="cuda"))
        w.copy_(torch.randint(-8, 9, (n,), device="cuda").float())
        graph.replay()
        torch.cuda.synchronize()
        exact_sum = float(x.double().sum().item())
        exact_hist = torch.zeros(bins, dtype=torch.float64).index_add_(0, idx.cpu(), w.double().cpu())
        if float(total.item()) != exact_sum:
            raise AssertionError(f"replay {trial}: captured sum {total.item()} != exact {exact_sum}")
        if not torch.equal(hist.double().cpu(), exact_hist):
            raise AssertionError(f"replay {trial}: captured scatter_add differs from the exact histogram")
        if not torch.equal(total, ops.sum(x, True, 8)) or not torch.equal(hist, ops.scatter_add(idx, w, bins, 8)):
            raise AssertionError(f"replay {trial}: captured results differ from eager")
    return "sum (scratch inside the capture) and scatter_add replayed 3 times, exact and equal to eager"


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
    """Dispatch a Metal kernel, wait for command-buffer completion, check every element.
    ``ops`` is the Metal ops backend (:class:`xcompat.kernels.metal.MetalKernels`)."""
    return str(ops.command_buffer_check())
