"""CPU model and ISA features, from the OS (no compiled code needed).

Linux: ``/proc/cpuinfo`` (``flags`` on x86, ``Features`` on arm64; the kernel lists only
what the OS enables, so AVX-512 appears only when the OS saves its registers).
macOS: ``sysctl`` (``machdep.cpu.brand_string``, ``hw.optional.*``).
"""

from __future__ import annotations

import platform
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# What each xcompat kernel path needs (mirrors xk_cpu_dispatch.cpp's checks).
ISA_REQUIREMENTS: dict[str, tuple[str, ...]] = {
    "scalar": (),
    "avx2": ("avx2", "fma", "f16c"),
    "avx512": ("avx512f", "avx512bw", "avx512vl", "avx512dq", "fma", "f16c"),
    "neon": ("asimd",),
}
ISA_ARCH = {"scalar": None, "avx2": "x86_64", "avx512": "x86_64", "neon": "aarch64"}

# ATen's capability names and what they need on x86-64 (torch does not check avx512).
ATEN_REQUIREMENTS: dict[str, tuple[str, ...]] = {
    "default": (),
    "avx2": ("avx2", "fma"),
    "avx512": ("avx512f", "avx512bw", "avx512vl", "avx512dq"),
}

REPORTED_FEATURES = (
    "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd",
    "avx512_bf16", "avx512_fp16", "avx512_vnni", "amx_tile", "amx_bf16",
    "asimd", "asimdhp", "asimddp", "fphp", "bf16", "i8mm", "sve", "sve2", "sme",
)


@dataclass(frozen=True, kw_only=True)
class CpuInfo:
    model: str | None
    arch: str
    features: frozenset[str]
    source: str

    def has(self, names: Iterable[str]) -> bool:
        return all(n in self.features for n in names)

    def isa_paths(self) -> list[str]:
        """The xcompat kernel paths this CPU can run (scalar always)."""
        out = []
        for isa, needs in ISA_REQUIREMENTS.items():
            if ISA_ARCH[isa] not in (None, self.arch):
                continue
            if isa == "neon" and self.arch == "aarch64":
                out.append(isa)  # Advanced SIMD is mandatory on AArch64
            elif self.has(needs):
                out.append(isa)
        return out


def normalise_arch(machine: str) -> str:
    m = machine.lower()
    if m in ("amd64", "x86_64", "x64"):
        return "x86_64"
    if m in ("arm64", "aarch64"):
        return "aarch64"
    return m


def parse_cpuinfo(text: str) -> tuple[str | None, frozenset[str]]:
    """(model name, feature set) from the text of /proc/cpuinfo (first processor)."""
    model = None
    features: set[str] = set()
    for line in text.splitlines():
        if ":" not in line:
            continue
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("model name", "hardware", "cpu model") and model is None and value.strip():
            model = value.strip()
        elif key in ("flags", "features") and not features:
            features = set(value.split())
    return model, frozenset(features)


def _sysctl(name: str) -> str | None:
    try:
        proc = subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def detect_cpu(cpuinfo: Path = Path("/proc/cpuinfo")) -> CpuInfo:
    arch = normalise_arch(platform.machine())
    if sys.platform.startswith("linux") and cpuinfo.is_file():
        model, features = parse_cpuinfo(cpuinfo.read_text(errors="replace"))
        if arch == "aarch64":
            features = features | {"asimd"}
        return CpuInfo(model=model, arch=arch, features=features, source=str(cpuinfo))
    if sys.platform == "darwin":
        model = _sysctl("machdep.cpu.brand_string")
        feats: set[str] = set()
        if arch == "aarch64":
            feats.add("asimd")
            for key, name in (("hw.optional.arm.FEAT_FP16", "fphp"), ("hw.optional.arm.FEAT_BF16", "bf16"),
                              ("hw.optional.arm.FEAT_I8MM", "i8mm"), ("hw.optional.arm.FEAT_SME", "sme")):
                if _sysctl(key) == "1":
                    feats.add(name)
        else:
            raw = (_sysctl("machdep.cpu.features") or "") + " " + (_sysctl("machdep.cpu.leaf7_features") or "")
            feats = {f.lower().replace(".", "_") for f in raw.split()}
            if "avx2_0" in feats:
                feats.add("avx2")
        return CpuInfo(model=model, arch=arch, features=frozenset(feats), source="sysctl")
    return CpuInfo(model=platform.processor() or None, arch=arch, features=frozenset(), source="none")
