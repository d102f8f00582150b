"""Collect the machine's device stack into the ``probe`` result document.

Never initialises CUDA or HIP: driver facts come from ``cuDriverGetVersion`` and NVML
through ctypes, torch's CUDA facts from its build metadata, and the one torch call that
could look at devices runs with ``PYTORCH_NVML_BASED_CUDA_CHECK=1``.
"""

from __future__ import annotations

import importlib
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from xcompat.devices import BACKEND_NAMES, probe_backend
from xcompat.devices import driver as drv
from xcompat.devices.torchinfo import torch_build
from xcompat.probe import assertions as rules
from xcompat.probe.cpu import CpuInfo, detect_cpu


def _run_first_line(cmd: list[str]) -> str | None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [ln.strip() for ln in (proc.stdout or proc.stderr).splitlines() if ln.strip()]
    return lines[0] if proc.returncode == 0 and lines else None


def _glibc() -> str | None:
    try:
        value = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"
    except (AttributeError, ValueError, OSError):
        value = None
    if value and value.startswith("glibc "):
        return value.split()[1]
    lib, version = platform.libc_ver()
    return version if lib == "glibc" and version else None


def _python() -> dict[str, Any]:
    free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    gil = getattr(sys, "_is_gil_enabled", None)
    return {
        "version": platform.python_version(),
        "implementation": sys.implementation.name,
        "abiflags": getattr(sys, "abiflags", ""),
        "soabi": sysconfig.get_config_var("SOABI"),
        "free_threaded": free_threaded,
        "gil_enabled": bool(gil()) if callable(gil) else True,
        "executable": sys.executable,
    }


def _toolchain(env: Mapping[str, str], torch_cuda: str | None) -> dict[str, Any]:
    cxx_cmd = env.get("CXX") or "c++"
    cxx = _run_first_line([cxx_cmd, "--version"]) if shutil.which(cxx_cmd) else None
    ninja_path = shutil.which("ninja")
    if ninja_path is None:
        candidate = Path(sys.executable).parent / "ninja"
        ninja_path = str(candidate) if candidate.is_file() else None
    ninja = _run_first_line([ninja_path, "--version"]) if ninja_path else None
    # the same discovery and checks (nvcc, cuda_runtime.h, libcudart) the kernel build uses
    from xcompat.devices.toolkit import find_compute_sanitizer, find_cuda_toolkit, find_cuobjdump

    search = find_cuda_toolkit(env, torch_cuda=torch_cuda)
    toolkit = search.toolkit
    nvcc = None
    if toolkit is not None:
        out = subprocess.run([str(toolkit.nvcc), "--version"], capture_output=True, text=True, timeout=30,
                             check=False)
        lines = [ln for ln in out.stdout.splitlines() if "release" in ln]
        nvcc = lines[-1].strip() if lines else None
    hipcc = shutil.which("hipcc")
    return {"cxx": cxx, "ninja": ninja, "nvcc": nvcc, "nvcc_path": str(toolkit.nvcc) if toolkit and nvcc else None,
            "cuda_toolkit": toolkit.to_dict() if toolkit else None, "cuda_toolkit_rejected": list(search.rejected),
            "hipcc": hipcc, "cuobjdump": find_cuobjdump(env), "compute_sanitizer": find_compute_sanitizer(env)}


def _numpy() -> dict[str, Any]:
    try:
        import numpy
    except ImportError:
        return {"version": None}
    info: dict[str, Any] = {"version": numpy.__version__}
    # by name: the module moved in numpy 2, and the stubs of either version lack the other path
    try:
        mu = importlib.import_module("numpy._core._multiarray_umath")  # numpy >= 2
    except ImportError:  # pragma: no cover - numpy 1.x
        mu = importlib.import_module("numpy.core._multiarray_umath")
    info["cpu_baseline"] = list(getattr(mu, "__cpu_baseline__", []))
    info["cpu_dispatch"] = list(getattr(mu, "__cpu_dispatch__", []))
    feats = getattr(mu, "__cpu_features__", {})
    info["cpu_dispatch_found"] = [f for f in info["cpu_dispatch"] if feats.get(f)]
    return info


def _torch(env: Mapping[str, str]) -> dict[str, Any]:
    tb = torch_build()
    if not tb.installed:
        return {"installed": False}
    saved = os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK")
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    try:
        import torch

        arch_flags = torch._C._cuda_getArchFlags() if hasattr(torch._C, "_cuda_getArchFlags") else None
        archs = sorted(set(arch_flags.split())) if arch_flags else []
        if torch.version.hip:
            archs = sorted({a for a in (env.get("PYTORCH_ROCM_ARCH") or "").replace(",", ";").split(";") if a} | set(archs))
        try:
            cpu_capability = torch.backends.cpu.get_cpu_capability()
        except Exception:  # noqa: BLE001 - older torch
            cpu_capability = None
        return {
            "installed": True,
            "version": torch.__version__,
            "location": tb.location,
            "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI),
            "cuda": torch.version.cuda,
            "hip": getattr(torch.version, "hip", None),
            "arch_list": archs,
            "cpu_capability": cpu_capability,
            "mps_built": bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_built()),
            "compile_shader": hasattr(getattr(torch, "mps", None), "compile_shader"),
        }
    finally:
        if saved is None:
            os.environ.pop("PYTORCH_NVML_BASED_CUDA_CHECK", None)
        else:
            os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = saved


def _arch_order(arch: str) -> tuple[int, str]:
    digits = "".join(ch for ch in arch if ch.isdigit())
    return (int(digits) if digits else 0, arch)


def wheel_cuda_archs(wheel: Path) -> tuple[list[str], list[str], str]:
    """(archs, libraries with device code, how) for the CUDA device code in a wheel."""
    try:
        from xcompat.abi.wheel import WheelError, iter_native_members
    except ImportError:  # the ABI package is optional at run time
        iter_native_members = None  # type: ignore[assignment]
    if iter_native_members is not None:
        archs: set[str] = set()
        libs: list[str] = []
        try:
            for member, lib in iter_native_members(wheel, want_fatbin=True):
                found = list(getattr(lib, "cuda_archs", ()) or ())
                if found:
                    libs.append(member)
                    archs.update(found)
        except WheelError as exc:
            from xcompat.errors import InputError

            raise InputError(str(exc), file=wheel) from None
        return sorted(archs, key=_arch_order), libs, ".nv_fatbin parser"
    return [], [], "unavailable: xcompat.abi is not installed"


def collect_probe(*, wheel: str | Path | None = None, env: Mapping[str, str] | None = None,
                  cell_id: str | None = None) -> dict[str, Any]:
    """The ``probe`` document (envelope kind ``probe``), validated by ``schemas/probe.schema.json``."""
    env = os.environ if env is None else env
    start = time.perf_counter()
    cpu = detect_cpu()
    torch_info = _torch(env)
    np_info = _numpy()
    toolchain = _toolchain(env, torch_info.get("cuda"))

    driver_version, driver_how = drv.cuda_driver_version()
    nvml_devices, nvml_how = drv.nvml_devices() if driver_version else (None, "no CUDA driver")
    hip_version, hip_how = drv.hip_driver_version()
    amd_gpus = drv.kfd_gpus()
    backends = {name: probe_backend(name, env).to_dict() for name in BACKEND_NAMES}
    devices = _devices(nvml_devices or [], amd_gpus, cpu, mps=bool(backends["mps"]["available"]))

    checks = [
        rules.driver_supports_runtime(torch_info.get("cuda"), driver_version, driver_how),
        _torch_arch_check(torch_info, nvml_devices or [], amd_gpus),
    ]
    wheel_info = None
    if wheel is not None:
        wheel_info, wheel_check = _wheel_check(Path(wheel), nvml_devices or [])
        checks.append(wheel_check)
    checks.append(rules.toolchain_present(toolchain, torch_info.get("cuda"), torch_info.get("hip")))
    checks.append(rules.forced_isa_supported(cpu, env, np_info.get("version")))

    failed = [c.name for c in checks if c.status == "failed"]
    used = next((b for b in ("cuda", "rocm", "mps", "cpu") if backends[b]["available"]), "cpu")
    summary = (
        f"{len(checks) - len(failed)}/{len(checks)} checks ok"
        + (f"; failed: {', '.join(failed)}" if failed else "")
        + f"; best backend here: {used}"
        + (f" ({len(devices)} device(s))" if devices else "; no GPU")
    )
    return {
        "version": 1,
        "kind": "probe",
        "cell_id": cell_id,
        "status": "failed" if failed else "passed",
        "summary": summary,
        "os": {
            "system": platform.system(),
            "release": platform.release(),
            "platform": sysconfig.get_platform(),
            "machine": platform.machine(),
            "glibc": _glibc(),
        },
        "cpu": _cpu_section(cpu, env),
        "python": _python(),
        "torch": torch_info,
        "numpy": np_info,
        "cuda": {
            "driver_version": driver_version,
            "driver_source": driver_how if driver_version else None,
            "driver_absent_reason": None if driver_version else driver_how,
            "nvml": nvml_how,
        },
        "rocm": {"hip_runtime_version": hip_version, "hip_absent_reason": None if hip_version else hip_how},
        "mps": {"available": backends["mps"]["available"], "reason": backends["mps"]["reason"]},
        "devices": devices,
        "backends": backends,
        "toolchain": toolchain,
        "wheel": wheel_info,
        "checks": [c.to_dict() for c in checks],
        "duration_seconds": round(time.perf_counter() - start, 3),
    }


def _devices(nvml_devices: list[dict[str, Any]], amd_gpus: list[dict[str, Any]], cpu: CpuInfo, *,
             mps: bool) -> list[dict[str, Any]]:
    """Every GPU found, NVIDIA (NVML) first, then AMD (KFD), then the Apple GPU behind MPS."""
    devices: list[dict[str, Any]] = []
    for d in nvml_devices:
        devices.append({"backend": "cuda", **d})
    for d in amd_gpus:
        devices.append({"backend": "rocm", **d})
    if mps:
        devices.append({"backend": "mps", "index": 0, "name": cpu.model or "Apple GPU", "arch": "apple"})
    return devices


def _torch_arch_check(torch_info: Mapping[str, Any], nvml_devices: list[dict[str, Any]],
                      amd_gpus: list[dict[str, Any]]) -> rules.Assertion:
    """Whether torch carries device code for every GPU of its own kind (CUDA or ROCm) here."""
    name = "device_arch_in_torch_arch_list"
    torch_archs = torch_info.get("arch_list") or []
    if torch_info.get("hip"):
        return rules.device_arch_in_list(name, amd_gpus, torch_archs,
                                         what=f"torch {torch_info.get('version')} ROCm arch list", rocm=True)
    if torch_info.get("cuda"):
        return rules.device_arch_in_list(name, nvml_devices, torch_archs,
                                         what=f"torch {torch_info.get('version')} CUDA arch list")
    return rules.Assertion(name=name, status="skipped", reason="torch has no CUDA or ROCm device code")


def _wheel_check(wheel: Path, nvml_devices: list[dict[str, Any]]) -> tuple[dict[str, Any], rules.Assertion]:
    """(the wheel's section of the document, whether its fat binaries cover the CUDA devices here)."""
    if not wheel.is_file():
        from xcompat.errors import InputError

        raise InputError("wheel not found", file=wheel, hint="pass the path of a .whl file")
    archs, libs, how = wheel_cuda_archs(wheel)
    wheel_info = {"path": str(wheel), "cuda_archs": archs, "libraries": libs, "reader": how}
    name = "device_arch_in_wheel_fatbin"
    if not libs:
        return wheel_info, rules.Assertion(name=name, status="skipped",
                                           reason=f"{wheel.name} has no CUDA device code ({how})")
    if not nvml_devices:
        return wheel_info, rules.Assertion(name=name, status="skipped",
                                           reason=f"no CUDA device to check; the wheel carries {', '.join(archs)}")
    return wheel_info, rules.device_arch_in_list(name, nvml_devices, archs, what=f"{wheel.name} fatbinary")


def _cpu_section(cpu: CpuInfo, env: Mapping[str, str]) -> dict[str, Any]:
    return {
        "model": cpu.model,
        "arch": cpu.arch,
        "features": sorted(f for f in cpu.features if f in rules_reported()),
        "feature_source": cpu.source,
        "kernel_isa_paths": cpu.isa_paths(),
        "kernel_isa_selected": _selected_isa(cpu, env),
        "forced": {k: env[k] for k in ("XCOMPAT_KERNELS_ISA", "ATEN_CPU_CAPABILITY", "NPY_ENABLE_CPU_FEATURES",
                                       "NPY_DISABLE_CPU_FEATURES") if env.get(k)},
    }


def _selected_isa(cpu: CpuInfo, env: Mapping[str, str]) -> str | None:
    """The path the kernels will run: the forced one when this CPU can run it, else the best.
    None when the forced path is unusable (the kernels then refuse to run)."""
    paths = cpu.isa_paths()
    forced = env.get("XCOMPAT_KERNELS_ISA", "").strip()
    if forced and forced != "auto":
        return forced if forced in paths else None
    return paths[-1]


def rules_reported() -> tuple[str, ...]:
    from xcompat.probe.cpu import REPORTED_FEATURES

    return REPORTED_FEATURES
