"""Device slots for sharding tests across GPUs: one worker per visible device.

The outer environment decides which devices this run may use. A CI job that already
narrowed ``CUDA_VISIBLE_DEVICES=2,3`` must get two workers pinned to physical GPUs 2 and
3, not to 0 and 1. The rules per runtime:

* CUDA: ``CUDA_VISIBLE_DEVICES`` lists physical indices, UUIDs (``GPU-...``) or MIG ids; the
  runtime stops at the first invalid entry. A worker gets the outer entry itself.
* ROCm: ``ROCR_VISIBLE_DEVICES`` filters first (physical ids, UUIDs), then
  ``HIP_VISIBLE_DEVICES`` (or ``CUDA_VISIBLE_DEVICES``, which HIP also honours) indexes
  *into the ROCR-visible list*. So an outer ROCR list is left alone and a worker narrows
  with the HIP variable: the outer HIP entry when there is one, else the index.

Nothing here initialises a device runtime; the environment is passed in as a mapping.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import cast

from xcompat.devices.visible import parse_visible_list  # the one parser of *_VISIBLE_DEVICES
from xcompat.errors import UsageError


@dataclass(frozen=True, kw_only=True)
class DeviceSlot:
    """One worker: the label recorded per test and the variables set in its children."""

    label: str  # "cpu", "cuda:3", "rocm:1"
    env: tuple[tuple[str, str], ...] = field(default=())


def plan_slots(
    backend: str, count: int, env: Mapping[str, str], *, limit: int | None = None
) -> list[DeviceSlot]:
    """One slot per device of ``backend`` visible under ``env``.

    ``count`` is the number of devices the runtime reports as visible (it already applies
    the outer variables). ``limit`` caps the number of workers (``--devices N``).
    """
    if backend in ("cpu", "mps") or count <= 0:
        # MPS is one device per machine and fork-unsafe: a single worker.
        return [DeviceSlot(label=backend if backend == "mps" else "cpu")]
    if backend == "cuda":
        outer = env.get("CUDA_VISIBLE_DEVICES")
        entries = parse_visible_list(outer)[:count] if outer is not None else [str(i) for i in range(count)]
        pin: tuple[tuple[str, str], ...] = ()
        if outer is None and not env.get("CUDA_DEVICE_ORDER"):
            # Our own indices: in PCI bus order, so that worker cuda:N is nvidia-smi's and
            # NVML's GPU N (CUDA's default order is fastest first). Outer indices keep the
            # order they were written for.
            pin = (("CUDA_DEVICE_ORDER", "PCI_BUS_ID"),)
        slots = [DeviceSlot(label=f"cuda:{e}", env=(("CUDA_VISIBLE_DEVICES", e), *pin)) for e in entries]
    elif backend == "rocm":
        if env.get("HIP_VISIBLE_DEVICES") is not None:
            var, entries = "HIP_VISIBLE_DEVICES", parse_visible_list(env["HIP_VISIBLE_DEVICES"])[:count]
        elif env.get("CUDA_VISIBLE_DEVICES") is not None:
            var, entries = "CUDA_VISIBLE_DEVICES", parse_visible_list(env["CUDA_VISIBLE_DEVICES"])[:count]
        else:
            # Indices into whatever ROCR_VISIBLE_DEVICES left visible (or all devices).
            var, entries = "HIP_VISIBLE_DEVICES", [str(i) for i in range(count)]
        rocr = env.get("ROCR_VISIBLE_DEVICES")
        physical = parse_visible_list(rocr) if rocr is not None else None

        def label(entry: str) -> str:
            # Name the physical device when the outer ROCR list lets us resolve it.
            if physical is not None and entry.isdigit() and int(entry) < len(physical):
                return f"rocm:{physical[int(entry)]}"
            return f"rocm:{entry}"

        slots = [DeviceSlot(label=label(e), env=((var, e),)) for e in entries]
    else:
        raise UsageError(f"unknown device backend {backend!r}", hint="use one of cpu, cuda, rocm, mps")
    if not slots:
        return [DeviceSlot(label="cpu")]
    if limit is not None:
        slots = slots[: max(limit, 1)]
    return slots


def cpu_slots(n: int) -> list[DeviceSlot]:
    """``n`` parallel CPU workers (``--devices N`` on a machine without a GPU)."""
    return [DeviceSlot(label="cpu") for _ in range(max(n, 1))]


def detect_accelerator(env: Mapping[str, str] | None = None) -> tuple[str, int]:
    """(backend, visible device count) without initialising CUDA/HIP/MPS in this process."""
    env = os.environ if env is None else env
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    try:
        from xcompat.devices import available_backends, probe_backend
    except ImportError:
        return _detect_with_torch()
    names = available_backends(env)
    for backend in ("cuda", "rocm"):
        if backend in names:
            details = probe_backend(backend, env).details
            count = details.get("visible_devices") or len(details.get("devices") or ()) or 1
            return backend, int(count)
    return ("mps", 1) if "mps" in names else ("cpu", 0)


def _detect_with_torch() -> tuple[str, int]:
    """Fallback when xcompat.devices is not installed: torch's NVML-based count."""
    try:
        import torch
    except ImportError:
        return ("cpu", 0)
    try:
        # With PYTORCH_NVML_BASED_CUDA_CHECK=1 this asks NVML/amdsmi, not the CUDA runtime,
        # and so leaves fork usable. The count already honours the outer *_VISIBLE_DEVICES.
        cuda_built = cast("Callable[[], bool]", torch.backends.cuda.is_built)  # untyped in torch
        count = int(torch.cuda.device_count()) if cuda_built() or torch.version.hip else 0
    except Exception:  # noqa: BLE001 - no count means no GPU workers, never a failed run
        count = 0
    if count > 0:
        return ("rocm" if torch.version.hip else "cuda", count)
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return ("mps", 1)
    return ("cpu", 0)
