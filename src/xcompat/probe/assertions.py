"""Compatibility assertions of the probe: each passes, fails or is skipped, with a reason.

The rules are data-light functions of the collected facts, so they are tested directly
with crafted facts (no GPU needed).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from xcompat.probe.cpu import ATEN_REQUIREMENTS, ISA_ARCH, ISA_REQUIREMENTS, CpuInfo

Outcome = Literal["passed", "failed", "skipped"]

# CUDA minor-version compatibility: within a major release (11 and later), an application
# built with any toolkit of that major runs on a driver of the same major; below that
# major nothing is promised (forward compatibility needs the cuda-compat package).
MINOR_VERSION_COMPAT_FROM = 11
MIN_DRIVER_BRANCH = {11: "450.80.02", 12: "525.60.13", 13: "580"}

# NumPy >= 2.4 replaced the individual x86 feature names with these groups; the old
# names are ignored with a warning at most.
NUMPY_X86_GROUPS = {
    "X86_V2": ("sse4_2", "popcnt"),
    "X86_V3": ("avx2", "fma", "f16c", "bmi2"),
    "X86_V4": ("avx512f", "avx512cd", "avx512vl", "avx512bw", "avx512dq"),
    "AVX512_ICL": ("avx512f", "avx512_vnni", "avx512_vbmi2", "avx512_bitalg", "avx512_vpopcntdq"),
    "AVX512_SPR": ("avx512f", "avx512_fp16"),
}
NUMPY_OLD_X86_NAMES = {
    "SSE", "SSE2", "SSE3", "SSSE3", "SSE41", "POPCNT", "SSE42", "AVX", "F16C", "FMA3", "AVX2", "AVX512F",
    "AVX512CD", "AVX512_KNL", "AVX512_KNM", "AVX512_SKX", "AVX512_CLX", "AVX512_CNL", "FMA4", "XOP",
}


@dataclass(frozen=True, kw_only=True)
class Assertion:
    name: str
    status: Outcome
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "reason": self.reason}


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:2])


def driver_supports_runtime(runtime: str | None, driver: str | None, driver_reason: str = "") -> Assertion:
    name = "cuda_driver_supports_runtime"
    if not runtime:
        return Assertion(name=name, status="skipped", reason="torch is not built with CUDA")
    if not driver:
        return Assertion(name=name, status="skipped", reason=f"no CUDA driver to check ({driver_reason or 'absent'})")
    rt, drv = _version_tuple(runtime), _version_tuple(driver)
    if drv >= rt:
        return Assertion(name=name, status="passed", reason=f"driver supports CUDA {driver} >= runtime {runtime}")
    if drv[0] == rt[0] and rt[0] >= MINOR_VERSION_COMPAT_FROM:
        branch = MIN_DRIVER_BRANCH.get(rt[0], "?")
        return Assertion(
            name=name,
            status="passed",
            reason=(
                f"driver CUDA {driver} < runtime {runtime}, allowed by minor-version compatibility "
                f"(driver >= {branch}); PTX built by the newer toolkit cannot be JIT-compiled by this driver "
                "(cudaErrorUnsupportedPtxVersion) and newer APIs may fail"
            ),
        )
    return Assertion(
        name=name,
        status="failed",
        reason=(
            f"driver CUDA {driver} is older than runtime {runtime} across a major version; "
            "upgrade the driver or install the cuda-compat forward-compatibility package"
        ),
    )


def _sm(arch: str) -> tuple[str, int, int] | None:
    """'sm_90' -> ('sm', 9, 0); 'compute_86' -> ('compute', 8, 6); 'sm_90a' -> ('sm', 9, 0)."""
    m = re.fullmatch(r"(sm|compute)_(\d+)(\d)([af]?)", arch.strip())
    if not m:
        return None
    return m.group(1), int(m.group(2)), int(m.group(3))


def normalise_cuda_archs(archs: Iterable[str]) -> list[str]:
    """Accept 'sm_90', 'compute_90', '9.0', '9.0+PTX', '8.6' as in TORCH_CUDA_ARCH_LIST."""
    out: list[str] = []
    for a in archs:
        a = a.strip()
        m = re.fullmatch(r"(\d+)\.(\d)(\+PTX)?", a)
        if m:
            out.append(f"sm_{m.group(1)}{m.group(2)}")
            if m.group(3):
                out.append(f"compute_{m.group(1)}{m.group(2)}")
        elif a:
            out.append(a)
    return out


def cuda_arch_covered(device_cc: str, archs: Sequence[str]) -> tuple[bool, str]:
    """Can code built for ``archs`` run on a device of compute capability ``device_cc`` (e.g. '8.6')?

    SASS (sm_XY) runs on devices of the same major and an equal or higher minor; PTX
    (compute_XY) is JIT-compiled by the driver for any device at least that new."""
    major, minor = (int(p) for p in device_cc.split(".")[:2])
    sass = []
    ptx = []
    archs = normalise_cuda_archs(archs)
    for a in archs:
        parsed = _sm(a)
        if parsed is None:
            continue
        kind, arch_major, arch_minor = parsed
        if kind == "sm" and arch_major == major and arch_minor <= minor:
            sass.append(a)
        if kind == "compute" and (arch_major, arch_minor) <= (major, minor):
            ptx.append(a)
    if f"sm_{major}{minor}" in archs:
        return True, f"SASS for sm_{major}{minor}"
    if sass:
        return True, f"binary-compatible SASS {', '.join(sass)}"
    if ptx:
        return True, f"only PTX ({', '.join(ptx)}), JIT-compiled by the driver at first use"
    return False, f"no SASS for sm_{major}{minor} (same major) and no PTX at or below it in {', '.join(archs) or 'nothing'}"


def device_arch_in_list(
    name: str, devices: Sequence[Mapping[str, Any]], archs: Sequence[str], *, what: str, rocm: bool = False
) -> Assertion:
    if not devices:
        return Assertion(name=name, status="skipped", reason="no GPU device to check")
    if not archs:
        return Assertion(name=name, status="failed" if what.startswith("torch") else "skipped",
                         reason=f"{what} lists no GPU architectures")
    problems: list[str] = []
    notes: list[str] = []
    for dev in devices:
        label = f"{dev.get('name') or 'device'} ({dev.get('arch')})"
        if rocm:
            ok = any(str(dev.get("arch", "")).split(":")[0] == a.split(":")[0] for a in archs)
            (notes if ok else problems).append(f"{label}: {'in' if ok else 'not in'} {what}")
            continue
        ok, why = cuda_arch_covered(str(dev.get("compute_capability")), archs)
        (notes if ok else problems).append(f"{label}: {why}")
    if problems:
        return Assertion(name=name, status="failed", reason=f"{what}: " + "; ".join(problems))
    return Assertion(name=name, status="passed", reason=f"{what}: " + "; ".join(notes))


def toolchain_present(toolchain: Mapping[str, Any], torch_cuda: str | None, torch_hip: str | None) -> Assertion:
    name = "jit_toolchain_present"
    missing = []
    if not toolchain.get("cxx"):
        missing.append("a C++ compiler (c++/g++/clang++ or $CXX)")
    if not toolchain.get("ninja"):
        missing.append("ninja (pip install ninja)")
    if torch_cuda and not toolchain.get("nvcc"):
        rejected = list(toolchain.get("cuda_toolkit_rejected") or ())
        why = f": {'; '.join(rejected)}" if rejected else ""
        missing.append(f"a complete CUDA {torch_cuda} toolkit (bin/nvcc, include/cuda_runtime.h, libcudart in lib64/ "
                       f"or lib/; CUDA_HOME or pip install 'cuda-toolkit[nvcc,cccl,cudart]'){why}")
    if torch_hip and not toolchain.get("hipcc"):
        missing.append("hipcc (ROCm)")
    if missing:
        return Assertion(name=name, status="failed", reason="cannot JIT-build torch extensions: missing " + ", ".join(missing))
    parts = [f"c++: {toolchain['cxx']}", f"ninja {toolchain['ninja']}"]
    if toolchain.get("nvcc"):
        tk = toolchain.get("cuda_toolkit") or {}
        where = f" ({tk.get('layout')} toolkit in {tk.get('root')})" if tk else ""
        parts.append(f"nvcc: {toolchain['nvcc']}{where}")
    return Assertion(name=name, status="passed", reason="; ".join(parts))


def forced_isa_supported(cpu: CpuInfo, env: Mapping[str, str], numpy_version: str | None) -> Assertion:
    """XCOMPAT_KERNELS_ISA, ATEN_CPU_CAPABILITY and NPY_*_CPU_FEATURES against this CPU."""
    name = "forced_cpu_isa_supported"
    problems: list[str] = []
    notes: list[str] = []
    _kernels_isa(cpu, env, problems, notes)
    _aten_capability(cpu, env, problems, notes)
    _numpy_features(cpu, env, numpy_version, problems)
    if problems:
        return Assertion(name=name, status="failed", reason="; ".join(problems))
    return Assertion(name=name, status="passed", reason="; ".join(notes) if notes else "no CPU path is forced")


def _kernels_isa(cpu: CpuInfo, env: Mapping[str, str], problems: list[str], notes: list[str]) -> None:
    forced = env.get("XCOMPAT_KERNELS_ISA", "").strip()
    if not forced or forced == "auto":
        return
    if forced not in ISA_REQUIREMENTS:
        problems.append(f"XCOMPAT_KERNELS_ISA={forced} is not a path (scalar, avx2, avx512, neon)")
    elif ISA_ARCH[forced] not in (None, cpu.arch) or forced not in cpu.isa_paths():
        problems.append(f"XCOMPAT_KERNELS_ISA={forced} needs {', '.join(ISA_REQUIREMENTS[forced]) or forced} "
                        f"which this {cpu.arch} CPU lacks (it runs: {', '.join(cpu.isa_paths())})")
    else:
        notes.append(f"XCOMPAT_KERNELS_ISA={forced} is supported")


def _aten_capability(cpu: CpuInfo, env: Mapping[str, str], problems: list[str], notes: list[str]) -> None:
    aten = env.get("ATEN_CPU_CAPABILITY", "").strip().lower()
    if not aten:
        return
    needs = ATEN_REQUIREMENTS.get(aten)
    if cpu.arch != "x86_64" and aten in ("avx2", "avx512"):
        problems.append(f"ATEN_CPU_CAPABILITY={aten} is an x86-64 capability; this CPU is {cpu.arch}")
    elif needs is None:
        notes.append(f"ATEN_CPU_CAPABILITY={aten} not checked (not an x86 capability name)")
    elif not cpu.has(needs):
        lacking = [f for f in needs if f not in cpu.features]
        problems.append(f"ATEN_CPU_CAPABILITY={aten} needs {', '.join(lacking)} which this CPU lacks; torch "
                        "accepts it unchecked and the first vectorised op dies with SIGILL")
    else:
        notes.append(f"ATEN_CPU_CAPABILITY={aten} is supported")


def _numpy_features(cpu: CpuInfo, env: Mapping[str, str], numpy_version: str | None, problems: list[str]) -> None:
    np_ge_24 = numpy_version is not None and _version_tuple(numpy_version) >= (2, 4)
    for var in ("NPY_ENABLE_CPU_FEATURES", "NPY_DISABLE_CPU_FEATURES"):
        value = env.get(var, "").strip()
        if not value:
            continue
        for feat in re.split(r"[,\s]+", value):
            up = feat.upper()
            if not up:
                continue
            if np_ge_24 and up in NUMPY_OLD_X86_NAMES:
                problems.append(f"{var}={feat}: numpy {numpy_version} renamed its x86 features (X86_V2/V3/V4, "
                                "AVX512_ICL, AVX512_SPR); the old name is ignored, so nothing is forced")
            elif var == "NPY_ENABLE_CPU_FEATURES" and up in NUMPY_X86_GROUPS and cpu.arch == "x86_64":
                lacking = [f for f in NUMPY_X86_GROUPS[up] if f not in cpu.features]
                if lacking:
                    problems.append(f"{var}={feat} needs {', '.join(lacking)} which this CPU lacks")
