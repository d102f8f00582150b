"""Leak checks by repetition: call a test several times after warm-up and watch memory.

Host: resident set size (RSS) sampled after each call; tracemalloc runs alongside so
growth on the Python heap can be told apart from native growth (C/C++ ``malloc``, a
leaked tensor storage). Device: torch's allocated-bytes counter for CUDA/HIP/MPS, read
only when the test itself initialised the device (we never initialise one to measure).

The verdict is a pure function of the samples (``classify_growth``) so its rules are
tested on numbers; the policy (threshold, how many steps must grow) is data.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

from xcompat.isolate.outcomes import LeakReport


@dataclass(frozen=True, kw_only=True)
class LeakPolicy:
    repeats: int = 5
    warmups: int = 2
    host_threshold_bytes: int = 1 << 20  # 1 MiB over the repeats
    device_threshold_bytes: int = 1 << 16  # 64 KiB: the allocator's granularity is 512 B
    # A one-off allocation (a cache filled on the first call after warm-up) or the
    # allocator moving memory around shows as one or two steps; a leak grows on most calls.
    min_growing_fraction: float = 0.75


MARKER = "check_leaks"


def from_marker(
    marker: object, kinds: Sequence[str], policy: LeakPolicy
) -> tuple[tuple[str, ...], LeakPolicy]:
    """Apply ``@pytest.mark.check_leaks(kinds="host,device", repeats=N, threshold=BYTES)``."""
    from dataclasses import replace

    kwargs = dict(getattr(marker, "kwargs", {}))
    args = tuple(getattr(marker, "args", ()))
    raw = kwargs.pop("kinds", args[0] if args else "host")
    names = tuple(k.strip() for k in (raw.split(",") if isinstance(raw, str) else raw) if k.strip())
    bad = [k for k in names if k not in ("host", "device")] + [
        k for k in kwargs if k not in ("repeats", "threshold")
    ]
    if bad or not names:
        raise ValueError(
            f"check_leaks: expected kinds from host, device and repeats=/threshold=, got {bad or raw!r}"
        )
    if "repeats" in kwargs:
        policy = replace(policy, repeats=int(kwargs["repeats"]))
    if "threshold" in kwargs:
        policy = replace(policy, host_threshold_bytes=int(kwargs["threshold"]))
    return tuple(dict.fromkeys((*kinds, *names))), policy


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def current_rss() -> int:
    """Resident bytes of this process now (Linux /proc; peak RSS elsewhere)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except OSError:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def classify_growth(
    samples: Sequence[int], *, threshold: int, min_growing_fraction: float
) -> tuple[int, bool]:
    """(total growth, leaked?) for memory samples taken before and after each call.

    A step "grows" when it adds at least a quarter of the per-call share of the threshold,
    so page-sized allocator jitter does not count.
    """
    if len(samples) < 2:
        return 0, False
    growth = samples[-1] - samples[0]
    steps = [b - a for a, b in pairwise(samples)]
    significant = max(threshold // (4 * len(steps)), 1)
    growing = sum(1 for s in steps if s >= significant)
    leaked = growth >= threshold and growing >= min_growing_fraction * len(steps)
    return growth, leaked


def device_allocated() -> tuple[str, int] | None:
    """(backend, bytes allocated by torch) when the test initialised a device, else None."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        if torch.cuda.is_initialized():
            torch.cuda.synchronize()
            return ("rocm" if torch.version.hip else "cuda", int(torch.cuda.memory_allocated()))
        mps = getattr(torch, "mps", None)
        if mps is not None and torch.backends.mps.is_available() and hasattr(mps, "current_allocated_memory"):
            mps.synchronize()
            return ("mps", int(mps.current_allocated_memory()))
    except Exception:  # noqa: BLE001 - a broken device runtime means no device figure, not a failed test
        return None
    return None


def measure_leaks(call: Callable[[], object], kinds: Sequence[str], policy: LeakPolicy) -> list[LeakReport]:
    """Run ``call`` warmups + repeats times and report growth per requested kind.

    Exceptions from ``call`` propagate: a test that fails on a repeat is a failure.
    """
    import tracemalloc

    for _ in range(policy.warmups):
        call()
    gc.collect()
    want_host = "host" in kinds
    want_device = "device" in kinds
    started_tracing = False
    if want_host and not tracemalloc.is_tracing():
        tracemalloc.start()
        started_tracing = True
    try:
        rss = [current_rss()]
        py_heap = [tracemalloc.get_traced_memory()[0]] if want_host else []
        overhead = [tracemalloc.get_tracemalloc_memory()] if want_host else []
        dev_first = device_allocated() if want_device else None
        dev = [dev_first[1]] if dev_first else []
        for _ in range(policy.repeats):
            call()
            gc.collect()
            if want_host:
                # tracemalloc's own bookkeeping lives in RSS too; take it out.
                overhead.append(tracemalloc.get_tracemalloc_memory())
                rss.append(current_rss() - (overhead[-1] - overhead[0]))
                py_heap.append(tracemalloc.get_traced_memory()[0])
            if dev_first:
                now = device_allocated()
                dev.append(now[1] if now else dev[-1])
    finally:
        if started_tracing:
            tracemalloc.stop()
    reports: list[LeakReport] = []
    if want_host:
        growth, leaked = classify_growth(
            rss, threshold=policy.host_threshold_bytes, min_growing_fraction=policy.min_growing_fraction
        )
        py_growth, py_leaked = classify_growth(
            py_heap, threshold=policy.host_threshold_bytes, min_growing_fraction=policy.min_growing_fraction
        )
        # Python objects that stay alive also raise RSS; whichever crossed the threshold counts.
        where: Literal["python", "native"] = (
            "python" if py_leaked or (leaked and py_growth * 2 >= growth) else "native"
        )
        reports.append(
            LeakReport(
                kind="host",
                repeats=policy.repeats,
                growth_bytes=max(growth, py_growth),
                python_bytes=py_growth,
                threshold_bytes=policy.host_threshold_bytes,
                leaked=leaked or py_leaked,
                where=where,
                samples=tuple(rss),
            )
        )
    if want_device and dev_first:
        growth, leaked = classify_growth(
            dev, threshold=policy.device_threshold_bytes, min_growing_fraction=policy.min_growing_fraction
        )
        reports.append(
            LeakReport(
                kind="device",
                repeats=policy.repeats,
                growth_bytes=growth,
                threshold_bytes=policy.device_threshold_bytes,
                leaked=leaked,
                where="device",
                samples=tuple(dev),
            )
        )
    return reports
