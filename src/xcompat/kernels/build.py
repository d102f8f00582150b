"""JIT build of the conformance kernels as ONE torch extension, with a build cache.

The whole kernel set (CPU paths for every ISA, the torch glue and, on a CUDA or ROCm
build of torch, the device kernels) is compiled by ``torch.utils.cpp_extension.load`` into
one shared library that registers the ``torch.ops.xcompat_kernels`` operators.

The build folder is ``${XCOMPAT_CACHE:-~/.cache/xcompat}/kernels/<key>``, where the key
hashes everything that changes the binary: the kernel sources, torch's version and its
CUDA/HIP version, the Python ABI, the compiler (and nvcc) version, the compiler flags and
the device architectures. Nothing is written into torch's own folders (in particular no
precompiled header, which torch would place in its ``include/`` folder).

A finished build leaves ``manifest.json`` beside the library. A later load that finds it
skips ``cpp_extension`` entirely and calls ``torch.ops.load_library`` on the cached file:
that is the warm path, well under half a second.
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
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from xcompat.errors import ToolError, UnavailableError
from xcompat.resources import data_dir

LIBRARY_NAMESPACE = "xcompat_kernels"
MANIFEST = "manifest.json"
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
class BuildKey:
    """Everything that changes the compiled library; its hash names the cache folder."""

    torch: str
    torch_cuda: str | None
    torch_hip: str | None
    python_abi: str
    machine: str
    compiler: str
    nvcc: str | None
    cflags: tuple[str, ...]
    cuda_cflags: tuple[str, ...]
    device_archs: tuple[str, ...]
    sources_sha256: str
    with_device: bool

    def digest(self) -> str:
        text = json.dumps(asdict(self), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:20]


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


def _device_archs(torch: Any, env: Mapping[str, str]) -> tuple[str, ...]:
    if torch.version.hip:
        archs = env.get("PYTORCH_ROCM_ARCH")
        if archs:
            return tuple(sorted(a for a in archs.replace(",", ";").split(";") if a))
        if torch.cuda.is_available():
            return tuple(
                sorted({torch.cuda.get_device_properties(i).gcnArchName for i in range(torch.cuda.device_count())})
            )
        return ()
    if torch.version.cuda:
        archs = env.get("TORCH_CUDA_ARCH_LIST")
        if archs:
            return tuple(sorted(a for a in archs.replace(",", ";").replace(" ", ";").split(";") if a))
        if torch.cuda.is_available():
            caps = {torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())}
            return tuple(sorted(f"{major}.{minor}" for major, minor in caps))
    return ()


def build_key(*, with_device: bool | None = None, env: Mapping[str, str] | None = None) -> BuildKey:
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
    if with_device and torch.version.cuda:
        from torch.utils.cpp_extension import CUDA_HOME

        nvcc_path = os.path.join(CUDA_HOME, "bin", "nvcc") if CUDA_HOME else shutil.which("nvcc")
        nvcc = _first_line([nvcc_path or "nvcc", "--version"])
        if nvcc is None:
            raise UnavailableError(
                "torch has CUDA but nvcc was not found, so the CUDA kernels cannot be built",
                hint="install the CUDA toolkit (or the nvidia-cuda-nvcc wheel) and set CUDA_HOME",
            )
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
        device_archs=_device_archs(torch, env) if with_device else (),
        # a CPU-only build does not depend on the CUDA sources
        sources_sha256=sources_digest(root, SOURCE_DIRS if with_device else ("cpu", "torch")),
        with_device=with_device,
    )


def _read_manifest(build_dir: Path, key: BuildKey) -> Path | None:
    try:
        manifest = json.loads((build_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    expected = json.loads(json.dumps(asdict(key)))  # tuples read back as lists
    if not isinstance(manifest, dict) or manifest.get("key") != expected:
        return None
    library = build_dir / str(manifest.get("library", ""))
    return library if library.is_file() else None


def _register_loaded(library: Path) -> None:
    import torch

    torch.ops.load_library(str(library))


def load_kernels(
    *,
    with_device: bool | None = None,
    cache_dir: Path | None = None,
    verbose: bool = False,
    env: Mapping[str, str] | None = None,
) -> LoadedKernels:
    """Build (or load from the cache) the kernel library and register its operators.

    ``with_device=None`` builds the device kernels whenever torch has CUDA/HIP.
    Raises ``ToolError`` with the compiler's last lines when the build fails.
    """
    import torch  # noqa: F401 - imported before the clock starts: its import is not build time

    env = os.environ if env is None else env
    start = time.perf_counter()
    key = build_key(with_device=with_device, env=env)
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
    library = _read_manifest(build_dir, key)
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
    from torch.utils import cpp_extension

    root = data_dir("kernels")
    src = build_dir / "src"
    build_dir.mkdir(parents=True, exist_ok=True)
    # Sources are copied into the build folder: torch's hipify writes its output next to
    # the sources, which may be a read-only installed package.
    for sub in SOURCE_DIRS:
        if (root / sub).is_dir():
            shutil.copytree(root / sub, src / sub, dirs_exist_ok=True)
    sources = [str(src / s) for s in CPU_SOURCES]
    cflags = list(key.cflags)
    if key.with_device:
        sources += [str(src / s) for s in CUDA_SOURCES]
        cflags.append("-DXK_WITH_DEVICE=1")
    name = f"{LIBRARY_NAMESPACE}_{key.digest()[:12]}"
    saved = {k: os.environ.get(k) for k in ("MAX_JOBS", "TORCH_CUDA_ARCH_LIST")}
    # Two compile jobs by default: CI runners (and laptops) are often 2-core machines.
    os.environ["MAX_JOBS"] = env.get("MAX_JOBS") or "2"
    if key.torch_cuda and key.device_archs and not env.get("TORCH_CUDA_ARCH_LIST"):
        os.environ["TORCH_CUDA_ARCH_LIST"] = ";".join(key.device_archs)
    try:
        library = cpp_extension.load(
            name=name,
            sources=sources,
            extra_cflags=cflags,
            extra_cuda_cflags=list(key.cuda_cflags) if key.with_device else None,
            build_directory=str(build_dir),
            verbose=verbose,
            with_cuda=key.with_device,
            is_python_module=False,
        )
    except (RuntimeError, subprocess.CalledProcessError, OSError) as exc:
        tail = _build_log_tail(exc)
        raise ToolError(
            f"building the kernel library failed in {build_dir}",
            hint="see the compiler output below; rerun with -v for the full log",
            details=tail,
        ) from None
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    library_path = Path(library) if isinstance(library, str) else build_dir / f"{name}.so"
    if not library_path.is_file():
        candidates = sorted(build_dir.glob(f"{name}*.so"))
        if not candidates:
            raise ToolError(f"the build finished but no library was found in {build_dir}")
        library_path = candidates[-1]
    from xcompat.jsonio import atomic_write_text

    atomic_write_text(
        build_dir / MANIFEST,
        json.dumps({"version": 1, "library": library_path.name, "key": asdict(key)}, indent=2) + "\n",
    )
    return library_path


def _build_log_tail(exc: BaseException, lines: int = 20) -> list[str]:
    text = str(exc)
    out = getattr(exc, "output", None)
    if isinstance(out, bytes):
        text += "\n" + out.decode(errors="replace")
    elif isinstance(out, str):
        text += "\n" + out
    return [ln for ln in text.splitlines() if ln.strip()][-lines:]


def kernel_ops() -> Any:
    """``torch.ops.xcompat_kernels`` (after :func:`load_kernels`)."""
    import torch

    return getattr(torch.ops, LIBRARY_NAMESPACE)


def isa_info() -> dict[str, Any]:
    """The CPU path the kernels use now, as reported by the library itself."""
    raw = kernel_ops().isa_info()
    info = json.loads(raw)
    for k in ("supported", "compiled"):
        info[k] = [s for s in info[k].split(",") if s]
    info["error"] = info.get("error") or None
    return info
