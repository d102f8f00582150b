"""Build script of sample-ext (shared by examples/sample-ext and examples/sample-ext-v2).

Extensions:
  sample_ext._core       C, full CPython API
  sample_ext._core_abi3  same C source, Limited API (abi3), floor from [tool.sample-ext] limited-api
  sample_ext._ops        C++ PyTorch custom op library (TORCH_LIBRARY), loaded with torch.ops.load_library
  libsample_ext_cuda.so  CUDA kernel + extern "C" launcher, built by nvcc when a CUDA toolkit is present

Environment:
  SAMPLE_EXT_TORCH=0       no torch part (_ops and the CUDA library): the C extensions only, for
                           platforms torch has no wheels for (ppc64le, s390x) and cross builds
  SAMPLE_EXT_CUDA=0|1      0: no CUDA part; 1: require it; unset: build it when nvcc is found
  TORCH_CUDA_ARCH_LIST     e.g. "8.0;9.0+PTX" (default: [tool.sample-ext] cuda-archs)
  CUDA_HOME / CUDA_PATH    CUDA toolkit root (else nvcc on PATH, else the pip toolkit
                           site-packages/nvidia/cu13, else /usr/local/cuda)
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

WITH_TORCH = os.environ.get("SAMPLE_EXT_TORCH", "").strip().lower() not in ("0", "false", "no", "off")
if WITH_TORCH:
    from torch.utils.cpp_extension import BuildExtension, CppExtension
else:  # the C extensions alone, built by setuptools
    BuildExtension = build_ext

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

HERE = Path(__file__).parent  # not resolved: for sample-ext-v2 this is the v2 folder
CONFIG = tomllib.loads((HERE / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["sample-ext"]
ABI = int(CONFIG["abi"])
LIMITED_API = str(CONFIG["limited-api"])
CUDA_LIB = "sample_ext_cuda"


def _find_nvcc() -> str | None:
    for var in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(var)
        if root and (Path(root) / "bin" / "nvcc").is_file():
            return str(Path(root) / "bin" / "nvcc")
    found = shutil.which("nvcc")
    if found:
        return found
    import sysconfig

    # the pip toolkit (cuda-toolkit[nvcc,cudart] wheels) in this build environment
    pip_nvcc = Path(sysconfig.get_paths()["platlib"]) / "nvidia" / "cu13" / "bin" / "nvcc"
    if pip_nvcc.is_file():
        return str(pip_nvcc)
    default = Path("/usr/local/cuda/bin/nvcc")
    return str(default) if default.is_file() else None


def _toolkit_lib_dirs(nvcc: str) -> list[str]:
    """The toolkit's library folders, found from where nvcc really runs (its --dryrun
    prints _HERE_, also through wrapper scripts). nvcc's own profile only looks in lib64/;
    the pip toolkit has lib/, so the folder holding libcudart_static.a is passed explicitly."""
    proc = subprocess.run([nvcc, "--dryrun", "-c", "probe.cu"], capture_output=True, text=True, check=False)
    here = next((ln.split("=", 1)[1].strip() for ln in (proc.stdout + proc.stderr).splitlines()
                 if ln.startswith("#$ _HERE_=")), None)
    root = Path(here).parent if here else Path(nvcc).resolve().parent.parent
    candidates = [root / "lib64", root / "lib", *sorted(root.glob("targets/*/lib"))]
    return [str(d) for d in candidates if (d / "libcudart_static.a").is_file()][:1]


def _cuda_wanted() -> str | None:
    flag = os.environ.get("SAMPLE_EXT_CUDA", "").strip().lower()
    if flag in ("0", "false", "no", "off"):
        return None
    nvcc = _find_nvcc()
    if nvcc is None and flag in ("1", "true", "yes", "on"):
        raise SystemExit("SAMPLE_EXT_CUDA=1 but no nvcc was found (set CUDA_HOME)")
    return nvcc


def _gencode_flags() -> list[str]:
    """Turn TORCH_CUDA_ARCH_LIST ("8.0;9.0+PTX", "8.0 9.0") into nvcc -gencode flags."""
    text = os.environ.get("TORCH_CUDA_ARCH_LIST", "").strip()
    entries = re.split(r"[;\s,]+", text) if text else list(CONFIG["cuda-archs"])
    flags: list[str] = []
    for entry in filter(None, entries):
        ptx = entry.endswith("+PTX")
        number = entry.removesuffix("+PTX").replace(".", "").replace("sm_", "")
        if not re.fullmatch(r"\d+[af]?", number):
            raise SystemExit(f"TORCH_CUDA_ARCH_LIST: cannot read arch {entry!r} (expected e.g. 8.0 or 9.0+PTX)")
        flags += ["-gencode", f"arch=compute_{number},code=sm_{number}"]
        if ptx:
            flags += ["-gencode", f"arch=compute_{number},code=compute_{number}"]
    return flags


NVCC = _cuda_wanted() if WITH_TORCH else None
ABI_MACRO = ("SAMPLE_EXT_ABI", str(ABI))
C_ARGS = ["-std=c11", "-O2", "-g0", "-fvisibility=hidden", "-Wall"]

ext_modules = [
    Extension(
        "sample_ext._core",
        sources=["csrc/core.c"],
        define_macros=[ABI_MACRO, ("SAMPLE_MODULE_NAME", "_core")],
        extra_compile_args=C_ARGS,
    ),
    Extension(
        "sample_ext._core_abi3",
        sources=["csrc/core_abi3.c"],
        define_macros=[ABI_MACRO, ("SAMPLE_MODULE_NAME", "_core_abi3"), ("Py_LIMITED_API", LIMITED_API)],
        extra_compile_args=C_ARGS,
        py_limited_api=True,
    ),
]
if WITH_TORCH:
    ext_modules.append(CppExtension(
        "sample_ext._ops",
        sources=["csrc/ops.cpp"],
        define_macros=[ABI_MACRO] + ([("SAMPLE_EXT_WITH_CUDA", "1")] if NVCC else []),
        # -ffp-contract=off: the op rounds alpha * b to float32 before the add on every
        # platform (GCC fuses it into an FMA on aarch64 by default), as its tests' reference does.
        extra_compile_args=["-O2", "-g0", "-ffp-contract=off"],
        # No Python symbols are used: the library does not link libtorch_python.
        py_limited_api=True,
    ))


class BuildWithCuda(BuildExtension):
    """torch's BuildExtension, plus the nvcc-built CUDA launcher library next to _ops."""

    def run(self) -> None:
        if NVCC:
            self._build_cuda_library()
        super().run()

    def _build_cuda_library(self) -> None:
        out_dir = Path(self.build_temp) / "cuda"
        out_dir.mkdir(parents=True, exist_ok=True)
        target = out_dir / f"lib{CUDA_LIB}.so"
        cmd = [NVCC]
        if shutil.which("ccache") and os.environ.get("SAMPLE_EXT_CCACHE", "1") != "0":
            cmd = ["ccache", NVCC]
        cmd += ["-O2", "-shared", "-Xcompiler", "-fPIC,-fvisibility=hidden", "-cudart", "static", "--fmad=false"]
        cmd += [f"-L{d}" for d in _toolkit_lib_dirs(NVCC)]
        cmd += [f"-L{d}" for d in _toolkit_lib_dirs(NVCC)]
        cmd += [f"-DSAMPLE_EXT_ABI={ABI}", *_gencode_flags(), "csrc/ops_cuda.cu", "-o", str(target)]
        print("nvcc:", shlex.join(cmd), flush=True)
        subprocess.run(cmd, check=True)
        for ext in self.extensions:
            if ext.name == "sample_ext._ops":
                ext.library_dirs.append(str(out_dir))
                ext.libraries.append(CUDA_LIB)
                ext.extra_link_args.append("-Wl,-rpath,$ORIGIN")
        self._cuda_library = target

    def build_extensions(self) -> None:
        # torch's BuildExtension adds its own flags (C++ standard, Py_LIMITED_API=3.10, ...)
        # to every extension it builds: give it only the torch extension and build the
        # plain C modules with setuptools' own build_ext first.
        everything = list(self.extensions)
        torch_exts = [ext for ext in everything if ext.name == "sample_ext._ops"]
        for ext in everything:
            if ext not in torch_exts:
                self.build_extension(ext)
        self.extensions = torch_exts
        try:
            super().build_extensions()
        finally:
            self.extensions = everything
        target = getattr(self, "_cuda_library", None)
        if target is not None:
            dest = Path(self.get_ext_fullpath("sample_ext._ops")).parent / target.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(target, dest)


setup(
    ext_modules=ext_modules,
    cmdclass={"build_ext": BuildWithCuda.with_options(use_ninja=False) if WITH_TORCH else build_ext},
)
