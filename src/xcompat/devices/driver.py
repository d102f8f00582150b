"""Driver queries through ctypes that create no device context (fork-safe).

* CUDA: ``cuDriverGetVersion`` from ``libcuda.so.1`` needs no ``cuInit``;
  NVML (``libnvidia-ml.so.1``) gives device count, names, memory and compute capability
  without touching the CUDA runtime.
* ROCm: ``hipDriverGetVersion`` from ``libamdhip64.so``; devices come from the KFD
  topology in sysfs.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_CUDA_LIBS = {"linux": ("libcuda.so.1", "libcuda.so"), "win32": ("nvcuda.dll",)}
_NVML_LIBS = {"linux": ("libnvidia-ml.so.1", "libnvidia-ml.so"), "win32": ("nvml.dll",)}
_HIP_LIBS = ("libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5")


def _open(names: tuple[str, ...]) -> tuple[Any, str | None]:
    errors = []
    for name in names:
        try:
            return ctypes.CDLL(name), None
        except OSError as exc:
            errors.append(str(exc).split(":")[-1].strip() or name)
    return None, f"{names[0]} not found ({errors[0] if errors else 'no candidates'})"


def _platform_key() -> str:
    return "win32" if sys.platform == "win32" else "linux"


def format_cuda_version(value: int) -> str:
    """12080 -> '12.8' (the encoding of cuDriverGetVersion and cudaRuntimeGetVersion)."""
    return f"{value // 1000}.{(value % 1000) // 10}"


def cuda_driver_version() -> tuple[str | None, str]:
    """(version such as '12.8', reason). The version is None when no driver is installed."""
    lib, err = _open(_CUDA_LIBS.get(_platform_key(), ()))
    if lib is None:
        return None, f"no CUDA driver: {err}"
    version = ctypes.c_int(0)
    rc = lib.cuDriverGetVersion(ctypes.byref(version))
    if rc != 0 or version.value <= 0:
        return None, f"cuDriverGetVersion failed (CUresult {rc})"
    return format_cuda_version(version.value), "cuDriverGetVersion"


def visible_device_filter(env: Mapping[str, str], var: str) -> int | None:
    """How many devices a *_VISIBLE_DEVICES value allows: None = no limit (the variable
    is unset). Read by :func:`xcompat.devices.visible.parse_visible_list`, the one parser."""
    from xcompat.devices.visible import visible_count

    return visible_count(env, var)


def nvml_devices() -> tuple[list[dict[str, Any]] | None, str]:
    """Devices as NVML sees them (all of them, before CUDA_VISIBLE_DEVICES)."""
    lib, err = _open(_NVML_LIBS.get(_platform_key(), ()))
    if lib is None:
        return None, f"NVML not available: {err}"
    if lib.nvmlInit_v2() != 0:
        return None, "nvmlInit failed"
    try:
        count = ctypes.c_uint(0)
        if lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
            return None, "nvmlDeviceGetCount failed"
        devices = []
        for i in range(count.value):
            handle = ctypes.c_void_p()
            if lib.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle)) != 0:
                continue
            name = ctypes.create_string_buffer(96)
            lib.nvmlDeviceGetName(handle, name, 96)
            major, minor = ctypes.c_int(0), ctypes.c_int(0)
            lib.nvmlDeviceGetCudaComputeCapability(handle, ctypes.byref(major), ctypes.byref(minor))

            class _Memory(ctypes.Structure):
                _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]

            mem = _Memory()
            lib.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(mem))
            uuid = ctypes.create_string_buffer(96)
            uuid_ok = lib.nvmlDeviceGetUUID(handle, uuid, 96) == 0

            class _Pci(ctypes.Structure):  # nvmlPciInfo_t: the bus id string comes first
                _fields_ = [("busIdLegacy", ctypes.c_char * 16), ("domain", ctypes.c_uint), ("bus", ctypes.c_uint),
                            ("device", ctypes.c_uint), ("pciDeviceId", ctypes.c_uint),
                            ("pciSubSystemId", ctypes.c_uint), ("busId", ctypes.c_char * 32)]

            pci = _Pci()
            pci_ok = lib.nvmlDeviceGetPciInfo_v3(handle, ctypes.byref(pci)) == 0
            devices.append(
                {
                    "index": i,
                    "uuid": uuid.value.decode(errors="replace") if uuid_ok else None,
                    "pci_bus_id": pci.busId.decode(errors="replace") if pci_ok else None,
                    "name": name.value.decode(errors="replace"),
                    "arch": f"sm_{major.value}{minor.value}",
                    "compute_capability": f"{major.value}.{minor.value}",
                    "memory_bytes": int(mem.total),
                }
            )
        return devices, "NVML"
    finally:
        lib.nvmlShutdown()


def hip_driver_version() -> tuple[str | None, str]:
    lib, err = _open(_HIP_LIBS)
    if lib is None:
        return None, f"no HIP runtime: {err}"
    version = ctypes.c_int(0)
    rc = lib.hipDriverGetVersion(ctypes.byref(version))
    if rc != 0 or version.value <= 0:
        return None, f"hipDriverGetVersion failed (hipError {rc})"
    v = version.value  # HIP encodes major*10000000 + minor*100000 + patch
    return f"{v // 10000000}.{(v // 100000) % 100}", "hipDriverGetVersion"


def kfd_gpus(root: Path = Path("/sys/class/kfd/kfd/topology/nodes")) -> list[dict[str, Any]]:
    """AMD GPUs from the KFD topology (CPU nodes have gfx_target_version 0)."""
    gpus: list[dict[str, Any]] = []
    if not root.is_dir():
        return gpus
    for node in sorted(root.iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else 0):
        try:
            props = dict(
                line.split(None, 1) for line in (node / "properties").read_text().splitlines() if " " in line
            )
        except OSError:
            continue
        target = int(props.get("gfx_target_version", "0") or 0)
        if target == 0:
            continue
        major, minor, step = target // 10000, (target // 100) % 100, target % 100
        name = ""
        with contextlib.suppress(OSError):
            name = (node / "name").read_text().strip()
        gpus.append({"index": len(gpus), "name": name, "arch": f"gfx{major}{minor:x}{step:x}"})
    return gpus


def dev_nodes_present(paths: tuple[str, ...]) -> bool:
    return any(os.path.exists(p) for p in paths)
