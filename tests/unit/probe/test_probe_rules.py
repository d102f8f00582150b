from __future__ import annotations

import pytest

from xcompat.probe import assertions as rules
from xcompat.probe.cpu import CpuInfo, normalise_arch, parse_cpuinfo

AVX2_CPU = CpuInfo(model="EPYC", arch="x86_64", features=frozenset({"sse4_2", "avx", "avx2", "fma", "f16c", "popcnt", "bmi2"}),
                   source="test")
AVX512_CPU = CpuInfo(model="Xeon", arch="x86_64", features=AVX2_CPU.features | {"avx512f", "avx512bw", "avx512vl",
                                                                                 "avx512dq", "avx512cd"}, source="test")
ARM_CPU = CpuInfo(model="Neoverse", arch="aarch64", features=frozenset({"asimd", "sve"}), source="test")


@pytest.mark.parametrize(
    ("runtime", "driver", "status", "text"),
    [
        ("12.4", "12.8", "passed", ">="),
        ("12.8", "12.4", "passed", "minor-version compatibility"),
        ("13.0", "12.8", "failed", "cuda-compat"),
        ("10.2", "10.1", "failed", "major"),
        (None, "12.8", "skipped", "not built with CUDA"),
        ("12.8", None, "skipped", "no CUDA driver"),
    ],
)
def test_driver_supports_runtime(runtime, driver, status, text) -> None:
    a = rules.driver_supports_runtime(runtime, driver, "libcuda.so.1 not found")
    assert a.status == status and text in a.reason


@pytest.mark.parametrize(
    ("cc", "archs", "ok", "text"),
    [
        ("9.0", ["sm_80", "sm_90"], True, "SASS for sm_90"),
        ("8.6", ["sm_80"], True, "binary-compatible"),
        ("8.6", ["sm_90", "compute_90"], False, "no SASS"),
        ("9.0", ["sm_80", "compute_80"], True, "only PTX"),
        ("12.0", ["8.0", "9.0+PTX"], True, "only PTX"),
        ("7.5", ["8.0", "9.0"], False, "no SASS"),
        ("10.0", [], False, "nothing"),
    ],
)
def test_cuda_arch_covered(cc, archs, ok, text) -> None:
    got, why = rules.cuda_arch_covered(cc, archs)
    assert got is ok and text in why


def test_device_arch_in_list_reports_each_device() -> None:
    devices = [{"name": "H100", "arch": "sm_90", "compute_capability": "9.0"},
               {"name": "T4", "arch": "sm_75", "compute_capability": "7.5"}]
    a = rules.device_arch_in_list("x", devices, ["sm_80", "sm_90"], what="torch arch list")
    assert a.status == "failed"
    assert "T4 (sm_75)" in a.reason
    assert rules.device_arch_in_list("x", [], ["sm_90"], what="torch").status == "skipped"
    assert rules.device_arch_in_list("x", devices[:1], [], what="torch arch list").status == "failed"


def test_rocm_arch_must_match_exactly() -> None:
    gpus = [{"name": "MI300X", "arch": "gfx942"}]
    assert rules.device_arch_in_list("x", gpus, ["gfx90a", "gfx942"], what="w", rocm=True).status == "passed"
    assert rules.device_arch_in_list("x", gpus, ["gfx90a"], what="w", rocm=True).status == "failed"


def test_toolchain() -> None:
    full = {"cxx": "g++ 12", "ninja": "1.11", "nvcc": "release 13.0", "hipcc": None}
    assert rules.toolchain_present(full, "13.0", None).status == "passed"
    a = rules.toolchain_present({**full, "nvcc": None}, "12.8", None)
    assert a.status == "failed" and "nvcc" in a.reason
    assert rules.toolchain_present({**full, "ninja": None}, None, None).status == "failed"
    assert "hipcc" in rules.toolchain_present(full, None, "6.2").reason


@pytest.mark.parametrize(
    ("cpu", "env", "numpy", "status", "text"),
    [
        (AVX2_CPU, {}, "2.4.6", "passed", "no CPU path is forced"),
        (AVX2_CPU, {"ATEN_CPU_CAPABILITY": "avx512"}, "2.4.6", "failed", "SIGILL"),
        (AVX512_CPU, {"ATEN_CPU_CAPABILITY": "avx512"}, "2.4.6", "passed", "supported"),
        (AVX2_CPU, {"ATEN_CPU_CAPABILITY": "default"}, "2.4.6", "passed", "supported"),
        (ARM_CPU, {"ATEN_CPU_CAPABILITY": "avx2"}, "2.4.6", "failed", "x86-64"),
        (AVX2_CPU, {"XCOMPAT_KERNELS_ISA": "avx512"}, "2.4.6", "failed", "lacks"),
        (AVX2_CPU, {"XCOMPAT_KERNELS_ISA": "neon"}, "2.4.6", "failed", "lacks"),
        (AVX2_CPU, {"XCOMPAT_KERNELS_ISA": "avx2"}, "2.4.6", "passed", "supported"),
        (AVX2_CPU, {"XCOMPAT_KERNELS_ISA": "sse9"}, "2.4.6", "failed", "not a path"),
        (ARM_CPU, {"XCOMPAT_KERNELS_ISA": "neon"}, "2.4.6", "passed", "supported"),
        (AVX2_CPU, {"NPY_DISABLE_CPU_FEATURES": "AVX2"}, "2.4.6", "failed", "renamed"),
        (AVX2_CPU, {"NPY_DISABLE_CPU_FEATURES": "AVX2"}, "2.3.1", "passed", "no CPU path"),
        (AVX2_CPU, {"NPY_ENABLE_CPU_FEATURES": "X86_V4"}, "2.4.6", "failed", "avx512f"),
        (AVX512_CPU, {"NPY_ENABLE_CPU_FEATURES": "X86_V2,X86_V3,X86_V4"}, "2.4.6", "passed", "no CPU path"),
    ],
)
def test_forced_isa(cpu, env, numpy, status, text) -> None:
    a = rules.forced_isa_supported(cpu, env, numpy)
    assert a.status == status, a.reason
    assert text in a.reason


def test_isa_paths() -> None:
    assert AVX2_CPU.isa_paths() == ["scalar", "avx2"]
    assert AVX512_CPU.isa_paths() == ["scalar", "avx2", "avx512"]
    assert ARM_CPU.isa_paths() == ["scalar", "neon"]
    bare = CpuInfo(model=None, arch="x86_64", features=frozenset(), source="none")
    assert bare.isa_paths() == ["scalar"]


def test_parse_cpuinfo_x86_and_arm() -> None:
    x86 = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse4_2 avx2 fma\n\nprocessor\t: 1\nflags\t: other\n"
    model, feats = parse_cpuinfo(x86)
    assert model == "AMD EPYC 7B13" and {"avx2", "fma"} <= feats and "other" not in feats
    arm = "processor\t: 0\nFeatures\t: fp asimd evtstrm sve\nCPU implementer\t: 0x41\n"
    model, feats = parse_cpuinfo(arm)
    assert model is None and "sve" in feats


@pytest.mark.parametrize("text", ["", "garbage without colons\n\n", ":::\n"])
def test_parse_cpuinfo_malformed(text: str) -> None:
    model, feats = parse_cpuinfo(text)
    assert model is None and feats == frozenset()


def test_normalise_arch() -> None:
    assert normalise_arch("AMD64") == "x86_64" and normalise_arch("arm64") == "aarch64"


def test_toolchain_check_fails_with_the_reason_an_incomplete_toolkit_was_rejected() -> None:
    from xcompat.probe.assertions import toolchain_present

    facts = {"cxx": "g++ 12", "ninja": "1.11", "nvcc": None, "cuda_toolkit": None,
             "cuda_toolkit_rejected": ["nvcc on PATH (/usr/local/bin/nvcc): /usr/local has no include/cuda_runtime.h"]}
    result = toolchain_present(facts, "13.0", None)
    assert result.status == "failed"
    assert "cuda_runtime.h" in result.reason and "/usr/local/bin/nvcc" in result.reason
    ok = toolchain_present({**facts, "nvcc": "Cuda compilation tools, release 13.0, V13.0.88",
                            "cuda_toolkit": {"layout": "pip", "root": "/site/nvidia/cu13"}}, "13.0", None)
    assert ok.status == "passed" and "pip toolkit in /site/nvidia/cu13" in ok.reason
