"""JIT build of the conformance kernels as ONE torch extension, with a build cache.

The whole kernel set (CPU paths for every ISA, the torch glue and, on a CUDA or ROCm
build of torch, the device kernels) is compiled by ``torch.utils.cpp_extension.load``
(:mod:`xcompat.kernels.jit`) into one shared library that registers the
``torch.ops.xcompat_kernels`` operators.

The build folder is ``${XCOMPAT_CACHE:-~/.cache/xcompat}/kernels/<key>``, where the key
hashes everything that changes the binary: the kernel sources, torch's version and its
CUDA/HIP version, the Python ABI, the compiler (and nvcc) version, the compiler flags and
the device architectures and where they came from. Nothing is written into torch's own
folders (in particular no precompiled header, which torch would place in its ``include/``
folder).

Device architectures come, in this order, from the matrix cell (``gpu_archs=`` or
``XCOMPAT_GPU_ARCHS``, as the plan exports it), from ``TORCH_CUDA_ARCH_LIST`` /
``PYTORCH_ROCM_ARCH``, or from the devices of this machine (NVML or the KFD topology; no
CUDA context is created; :mod:`xcompat.kernels.archs`). A GPU-less build host without any of them gets a clear exit-5
error instead of torch's ``IndexError``. The CUDA toolkit is found and checked (nvcc,
``cuda_runtime.h``, libcudart) by :mod:`xcompat.devices.toolkit` before anything is
compiled; the pip toolkit's layout (``nvidia/cu13/lib`` with only ``libcudart.so.13``) is
linked as it is.

A finished build leaves ``manifest.json`` beside the library (:mod:`xcompat.kernels.cache`).
A later load that finds it skips ``cpp_extension`` entirely and calls
``torch.ops.load_library`` on the cached file: that is the warm path, well under half a second.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from xcompat import cxxruntime
from xcompat.errors import UnavailableError
from xcompat.kernels.archs import resolve_device_archs
from xcompat.kernels.cache import BuildKey, read_manifest, write_manifest
from xcompat.kernels.jit import ExtensionJob, compile_extension, cudart_link_flags
from xcompat.resources import data_dir

if TYPE_CHECKING:
    from xcompat.devices.toolkit import CudaToolkit

LIBRARY_NAMESPACE = "xcompat_kernels"
# The files compiled into the extension, relative to kernels/. The CUDA ones are added
# only when torch was built with CUDA or ROCm (HIP sources are produced by torch's hipify).
CPU_SOURCES = (
    "cpu/xk_cpu_scalar.cpp",
    "cpu/xk_cpu_avx2.cpp",
    "cpu/xk_cpu_avx512.cpp",
    "cpu/xk_cpu_neon.cpp",
    "cpu/xk_cpu_dispatch.cpp",
    "torch/xk_ops.cpp",
)
CUDA_SOURCES = ("cuda/xk_cuda.cu", "torch/xk_ops_cuda.cpp")
SOURCE_DIRS = ("cpu", "torch", "cuda")
CFLAGS = ("-O3",)
CUDA_CFLAGS = ("-O3",)  # no fast math: exp and the denormal cases need IEEE behaviour


@dataclass(frozen=True, kw_only=True)
class LoadedKernels:
    """The outcome of :func:`load_kernels`."""

    library: Path
    build_dir: Path
    key: BuildKey
    cached: bool  # True when the warm path loaded an existing build
    seconds: float
    with_device: bool
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "library": str(self.library),
            "build_dir": str(self.build_dir),
            "key": self.key.digest(),
            "cached": self.cached,
            "seconds": round(self.seconds, 4),
            "with_device": self.with_device,
            "toolchain": {"compiler": self.key.compiler, "nvcc": self.key.nvcc},
            "device_archs": list(self.key.device_archs),
            "arch_source": self.key.arch_source,
            "notes": list(self.notes),
        }


# library path loaded into this process (torch can register one namespace only once)
_LOADED: dict[str, LoadedKernels] = {}


def cache_root(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XCOMPAT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "xcompat")
    return Path(base) / "kernels"


def sources_digest(root: Path, dirs: tuple[str, ...] = SOURCE_DIRS) -> str:
    h = hashlib.sha256()
    for sub in dirs:
        folder = root / sub
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.suffix in (".cpp", ".cu", ".h", ".hip", ".cuh"):
                h.update(path.relative_to(root).as_posix().encode())
                h.update(b"\0")
                h.update(path.read_bytes())
    return h.hexdigest()


def _first_line(cmd: list[str]) -> str | None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [ln for ln in (proc.stdout or proc.stderr).splitlines() if ln.strip()]
    if proc.returncode != 0 or not lines:
        return None
    return lines[0].strip() if "nvcc" not in cmd[0] else lines[-1].strip()


def compiler_command(env: Mapping[str, str]) -> str:
    return env.get("CXX") or "c++"


def build_key(
    *, with_device: bool | None = None, env: Mapping[str, str] | None = None, gpu_archs: Sequence[str] | None = None
) -> BuildKey:
    import torch

    env = os.environ if env is None else env
    root = data_dir("kernels")
    torch_device = bool(torch.version.cuda or torch.version.hip)
    with_device = torch_device if with_device is None else (with_device and torch_device)
    compiler = _first_line([compiler_command(env), "--version"])
    if compiler is None:
        raise UnavailableError(
            f"no C++ compiler: '{compiler_command(env)} --version' failed",
            hint="install g++ or clang++, or point CXX at one",
        )
    nvcc = None
    cuda_home = None
    archs: tuple[str, ...] = ()
    arch_source = None
    if with_device:
        archs, arch_source = resolve_device_archs(torch_cuda=torch.version.cuda, torch_hip=torch.version.hip,
                                                  env=env, gpu_archs=gpu_archs)
    if with_device and torch.version.cuda:
        toolkit = find_toolkit(env, torch.version.cuda)
        nvcc = _first_line([str(toolkit.nvcc), "--version"])
        if nvcc is None:
            raise UnavailableError(
                f"nvcc of the CUDA toolkit in {toolkit.root} does not run",
                hint="reinstall the toolkit (or the nvidia-cuda-nvcc wheel), or point CUDA_HOME at another one",
            )
        cuda_home = str(toolkit.root)
    return BuildKey(
        torch=torch.__version__,
        torch_cuda=torch.version.cuda,
        torch_hip=torch.version.hip,
        python_abi=f"{sys.implementation.cache_tag}{getattr(sys, 'abiflags', '')}"
        f"{'-ft' if sysconfig.get_config_var('Py_GIL_DISABLED') else ''}",
        machine=platform.machine(),
        compiler=compiler,
        nvcc=nvcc,
        cflags=CFLAGS,
        cuda_cflags=CUDA_CFLAGS if with_device else (),
        device_archs=archs,
        arch_source=arch_source,
        cuda_home=cuda_home,
        # a CPU-only build does not depend on the CUDA sources
        sources_sha256=sources_digest(root, SOURCE_DIRS if with_device else ("cpu", "torch")),
        with_device=with_device,
    )


def find_toolkit(env: Mapping[str, str], torch_cuda: str) -> CudaToolkit:
    """The validated CUDA toolkit matching torch's CUDA major (``UnavailableError`` if none)."""
    from xcompat.devices.toolkit import find_cuda_toolkit

    return find_cuda_toolkit(env, torch_cuda=torch_cuda).require()


def _register_loaded(library: Path) -> None:
    import torch

    load_library = cast(Callable[[str], None], torch.ops.load_library)  # untyped in torch
    load_library(str(library))


def load_kernels(
    *,
    with_device: bool | None = None,
    cache_dir: Path | None = None,
    verbose: bool = False,
    env: Mapping[str, str] | None = None,
    gpu_archs: Sequence[str] | None = None,
) -> LoadedKernels:
    """Build (or load from the cache) the kernel library and register its operators.

    ``with_device=None`` builds the device kernels whenever torch has CUDA/HIP;
    ``gpu_archs`` (the matrix cell's ``gpu-archs``, e.g. ``["sm_80", "sm_90"]``) picks the
    device architectures. Raises ``ToolError`` with the compiler's last lines when the
    build fails, ``UnavailableError`` when no toolkit or no architecture is known.
    """
    import torch  # noqa: F401 - imported before the clock starts: its import is not build time

    env = os.environ if env is None else env
    start = time.perf_counter()
    key = build_key(with_device=with_device, env=env, gpu_archs=gpu_archs)
    digest = key.digest()
    if digest in _LOADED:
        return _LOADED[digest]
    if _LOADED:
        other = next(iter(_LOADED.values()))
        raise UnavailableError(
            f"another build of the kernels is already loaded in this process ({other.library}); "
            "torch can register the xcompat_kernels operators only once per process",
            hint="run the other configuration in a new process",
        )
    build_dir = (cache_dir or cache_root(env)) / digest
    library = read_manifest(build_dir, key, compiler_command(env))
    cached = library is not None
    notes: list[str] = []
    if library is None:
        library = _build(key, build_dir, verbose=verbose, env=env)
    _register_loaded(library)
    loaded = LoadedKernels(
        library=library,
        build_dir=build_dir,
        key=key,
        cached=cached,
        seconds=time.perf_counter() - start,
        with_device=key.with_device,
        notes=tuple(notes),
    )
    _LOADED[digest] = loaded
    return loaded


def _build(key: BuildKey, build_dir: Path, *, verbose: bool, env: Mapping[str, str]) -> Path:
    src = _copy_sources(data_dir("kernels"), build_dir)
    cxxruntime.check_compiler(compiler_command(env), build_dir / "cxx-runtime-probe", env)
    library = compile_extension(_extension_job(key, src, build_dir, env), build_dir, verbose=verbose)
    finding = cxxruntime.carried_runtime(library)
    if finding is not None:  # no manifest: a later run rebuilds instead of loading it
        raise cxxruntime.refusal(f"the kernel library built in {build_dir} is unusable", finding,
                                 compiler_command(env))
    write_manifest(build_dir, library, key)
    return library


def _copy_sources(root: Path, build_dir: Path) -> Path:
    """The kernel sources, copied into ``build_dir/src``: torch's hipify writes its output next
    to the sources, which may be a read-only installed package."""
    src = build_dir / "src"
    build_dir.mkdir(parents=True, exist_ok=True)
    for sub in SOURCE_DIRS:
        if (root / sub).is_dir():
            shutil.copytree(root / sub, src / sub, dirs_exist_ok=True)
    return src


def _extension_job(key: BuildKey, src: Path, build_dir: Path, env: Mapping[str, str]) -> ExtensionJob:
    """What ``cpp_extension.load`` compiles for ``key``, with the toolkit and archs it uses."""
    sources = [str(src / s) for s in CPU_SOURCES]
    cflags = list(key.cflags)
    cuda_cflags = list(key.cuda_cflags)
    ldflags: list[str] = []
    include_paths: list[str] = []
    if key.with_device:
        sources += [str(src / s) for s in CUDA_SOURCES]
        cflags.append("-DXK_WITH_DEVICE=1")
    environ = {"MAX_JOBS": env.get("MAX_JOBS") or "2"}  # CI runners and laptops are often 2-core machines
    if key.with_device and key.torch_cuda:
        toolkit = find_toolkit(env, key.torch_cuda)
        environ["CUDA_HOME"] = str(toolkit.root)
        environ["TORCH_CUDA_ARCH_LIST"] = ";".join(key.device_archs)
        include_paths.append(str(toolkit.include_dir))
        ldflags += cudart_link_flags(toolkit, build_dir)
    if key.with_device and key.torch_hip:
        environ["PYTORCH_ROCM_ARCH"] = ";".join(key.device_archs)
        # __shfl_*_sync on ROCm 6.2-6.x needs this before the HIP headers (7.0 has it on by default)
        cuda_cflags.append("-DHIP_ENABLE_WARP_SYNC_BUILTINS=1")
    return ExtensionJob(name=f"{LIBRARY_NAMESPACE}_{key.digest()[:12]}", sources=sources, cflags=cflags,
                        cuda_cflags=cuda_cflags, ldflags=ldflags, include_paths=include_paths, environ=environ,
                        with_device=key.with_device)


def kernel_ops() -> Any:
    """``torch.ops.xcompat_kernels`` (after :func:`load_kernels`)."""
    import torch

    return getattr(torch.ops, LIBRARY_NAMESPACE)


def isa_info() -> dict[str, Any]:
    """The CPU path the kernels use now, as reported by the library itself."""
    raw = kernel_ops().isa_info()
    info: dict[str, Any] = json.loads(raw)
    for k in ("supported", "compiled"):
        info[k] = [s for s in info[k].split(",") if s]
    info["error"] = info.get("error") or None
    return info
