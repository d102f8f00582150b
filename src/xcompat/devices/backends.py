"""The four backends. Each probe is cheap and never initialises CUDA/HIP in this process.

* ``cuda``: torch built with CUDA (read from torch's files), a driver (``cuDriverGetVersion``)
  and at least one visible device (NVML, honouring ``CUDA_VISIBLE_DEVICES``). When NVML is
  missing and torch is already imported, ``torch.cuda.is_available()`` runs with
  ``PYTORCH_NVML_BASED_CUDA_CHECK=1``, which also leaves the process fork-safe.
* ``rocm``: torch built with HIP, ``/dev/kfd`` and a GPU node in the KFD topology
  (honouring ``HIP_VISIBLE_DEVICES`` / ``ROCR_VISIBLE_DEVICES``).
* ``mps``: macOS on Apple silicon with a torch that has MPS (asking torch needs no fork
  safety there: Python uses ``spawn`` on macOS).
* ``cpu``: always available.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Mapping
from typing import Any

from xcompat.devices import driver
from xcompat.devices.base import Availability, Backend, BackendName
from xcompat.devices.torchinfo import torch_build


def _timed(backend: BackendName, fn: Any, env: Mapping[str, str]) -> Availability:
    start = time.perf_counter()
    available, reason, details = fn(env)
    return Availability(
        backend=backend, available=available, reason=reason, seconds=time.perf_counter() - start, details=details
    )


class CpuBackend:
    name: BackendName = "cpu"
    torch_device = "cpu"

    def probe(self, env: Mapping[str, str]) -> Availability:
        return _timed("cpu", lambda _env: (True, f"CPU ({platform.machine()}) is always available", {}), env)


class CudaBackend:
    name: BackendName = "cuda"
    torch_device = "cuda"

    def probe(self, env: Mapping[str, str]) -> Availability:
        return _timed("cuda", self._probe, env)

    @staticmethod
    def _probe(env: Mapping[str, str]) -> tuple[bool, str, dict[str, Any]]:
        tb = torch_build()
        details: dict[str, Any] = {"torch_cuda": tb.cuda}
        if not tb.installed:
            return False, "torch is not installed", details
        if not tb.cuda:
            kind = f"a ROCm (HIP {tb.hip}) build" if tb.hip else "a CPU-only build"
            return False, f"torch {tb.version} is {kind}, without CUDA", details
        version, how = driver.cuda_driver_version()
        details["driver_version"] = version
        if version is None:
            return False, how, details
        devices, how_dev = driver.nvml_devices()
        if devices is None:
            return CudaBackend._torch_fallback(env, details, how_dev)
        from xcompat.devices.visible import visible_nvml_devices

        shown = visible_nvml_devices(devices, env)
        visible = len(shown.devices)
        details["devices"] = devices
        details["visible_devices"] = visible
        details["device_order"] = shown.order
        if shown.notes:
            details["notes"] = list(shown.notes)
        if not devices:
            return False, f"CUDA driver {version} found but NVML reports no GPU", details
        if visible == 0:
            return False, f"CUDA_VISIBLE_DEVICES={env.get('CUDA_VISIBLE_DEVICES')!r} hides all GPUs", details
        return True, f"{visible} CUDA device(s), driver {version}, torch CUDA {tb.cuda}", details

    @staticmethod
    def _torch_fallback(env: Mapping[str, str], details: dict[str, Any], why: str) -> tuple[bool, str, dict[str, Any]]:
        torch = sys.modules.get("torch")
        if torch is None:
            return False, f"{why}; cannot count GPUs without initialising CUDA", details
        saved = os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK")
        os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
        try:
            ok = bool(torch.cuda.is_available())
        finally:
            if saved is None:
                os.environ.pop("PYTORCH_NVML_BASED_CUDA_CHECK", None)
            else:
                os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = saved
        return ok, ("torch.cuda.is_available() (NVML-based check)" if ok else "torch reports no CUDA device"), details


class RocmBackend:
    name: BackendName = "rocm"
    torch_device = "cuda"  # ROCm builds of torch keep the "cuda" device type

    def probe(self, env: Mapping[str, str]) -> Availability:
        return _timed("rocm", self._probe, env)

    @staticmethod
    def _probe(env: Mapping[str, str]) -> tuple[bool, str, dict[str, Any]]:
        tb = torch_build()
        details: dict[str, Any] = {"torch_hip": tb.hip}
        if not tb.installed:
            return False, "torch is not installed", details
        if not tb.hip:
            kind = f"a CUDA {tb.cuda} build" if tb.cuda else "a CPU-only build"
            return False, f"torch {tb.version} is {kind}, without ROCm/HIP", details
        if not driver.dev_nodes_present(("/dev/kfd",)):
            return False, "no /dev/kfd: the amdgpu kernel driver is not loaded or not visible here", details
        gpus = driver.kfd_gpus()
        details["devices"] = gpus
        version, _ = driver.hip_driver_version()
        details["driver_version"] = version
        from xcompat.devices.visible import visible_count

        limits = [visible_count(env, v, len(gpus)) for v in ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")]
        visible = len(gpus)
        for limit in limits:
            if limit is not None:
                visible = min(visible, limit)
        details["visible_devices"] = visible
        if visible == 0:
            return False, "no visible AMD GPU in the KFD topology", details
        return True, f"{visible} ROCm device(s) ({', '.join(g['arch'] for g in gpus)}), torch HIP {tb.hip}", details


class MpsBackend:
    name: BackendName = "mps"
    torch_device = "mps"

    def probe(self, env: Mapping[str, str]) -> Availability:
        return _timed("mps", self._probe, env)

    @staticmethod
    def _probe(env: Mapping[str, str]) -> tuple[bool, str, dict[str, Any]]:
        details: dict[str, Any] = {}
        if sys.platform != "darwin":
            return False, f"MPS needs macOS (this is {sys.platform})", details
        if platform.machine() != "arm64":
            return False, f"MPS needs Apple silicon (this is {platform.machine()})", details
        if not torch_build().installed:
            return False, "torch is not installed", details
        import torch

        details["built"] = bool(torch.backends.mps.is_built())
        if not details["built"]:
            return False, f"torch {torch.__version__} was built without MPS", details
        if not torch.backends.mps.is_available():
            return False, "torch has MPS but the Metal device is not available (macOS < 12.3 or no GPU)", details
        details["compile_shader"] = hasattr(torch.mps, "compile_shader")
        return True, "Apple MPS device available", details


REGISTRY: dict[str, Backend] = {
    "cpu": CpuBackend(),
    "cuda": CudaBackend(),
    "rocm": RocmBackend(),
    "mps": MpsBackend(),
}
