"""The device architectures the kernels are built for, and where they came from: the matrix
cell (``gpu_archs=`` or ``XCOMPAT_GPU_ARCHS``, as the plan exports it), then
``TORCH_CUDA_ARCH_LIST`` / ``PYTORCH_ROCM_ARCH``, then the devices of this machine (NVML or
the KFD topology; no CUDA context is created)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from xcompat.errors import UnavailableError


def _split_archs(text: str) -> list[str]:
    return [a for a in text.replace(",", ";").replace(" ", ";").split(";") if a.strip()]


def resolve_device_archs(
    *,
    torch_cuda: str | None,
    torch_hip: str | None,
    env: Mapping[str, str],
    gpu_archs: Sequence[str] | None = None,
    probe: Callable[[], Iterable[str]] | None = None,
) -> tuple[tuple[str, ...], str]:
    """(archs in the form the build reads, where they came from).

    CUDA archs are returned as ``TORCH_CUDA_ARCH_LIST`` entries (``8.0``, ``9.0+PTX``), ROCm
    archs as ``PYTORCH_ROCM_ARCH`` entries (``gfx90a``). ``probe`` returns the archs of this
    machine's devices (default: NVML / KFD, no device context). Raises ``UnavailableError``
    (exit 5) when nothing names an arch, and ``InputError`` for a malformed one."""
    from xcompat.builder.archs import rocm_arch_list, torch_cuda_arch_list

    matrix = list(gpu_archs) if gpu_archs else _split_archs(env.get("XCOMPAT_GPU_ARCHS", ""))
    if torch_hip:
        if matrix:
            return tuple(rocm_arch_list(matrix).split(";")), "matrix"
        if env.get("PYTORCH_ROCM_ARCH", "").strip():
            return tuple(_split_archs(env["PYTORCH_ROCM_ARCH"])), "PYTORCH_ROCM_ARCH"
        found = sorted(set((probe or _probed_rocm_archs)()))
        if found:
            return tuple(found), "device"
        what, var = "ROCm", "PYTORCH_ROCM_ARCH=gfx90a"
    elif torch_cuda:
        if matrix:
            return tuple(torch_cuda_arch_list(matrix).split(";")), "matrix"
        if env.get("TORCH_CUDA_ARCH_LIST", "").strip():
            return tuple(_split_archs(env["TORCH_CUDA_ARCH_LIST"])), "TORCH_CUDA_ARCH_LIST"
        found = sorted(set((probe or _probed_cuda_archs)()))
        if found:
            return tuple(torch_cuda_arch_list(found).split(";")), "device"
        what, var = "CUDA", "TORCH_CUDA_ARCH_LIST='8.0;9.0'"
    else:
        return (), "none"
    raise UnavailableError(
        f"no {what} architecture to build the device kernels for: the matrix cell names no gpu-archs "
        "and this machine has no visible GPU",
        hint=f"set gpu-archs in the matrix backend (exported as XCOMPAT_GPU_ARCHS), or {var}",
    )


def _probed_cuda_archs() -> list[str]:
    from xcompat.devices import driver

    devices, _ = driver.nvml_devices()
    return [str(d["arch"]) for d in devices or [] if d.get("arch")]


def _probed_rocm_archs() -> list[str]:
    from xcompat.devices import driver

    return [str(g["arch"]) for g in driver.kfd_gpus()]
