"""CUDA sources compile with nvcc here; the probe reads a real wheel's fatbinary."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from tests.helpers.kernels import KERNELS, artifact_cache, cached_nvcc_object, nvcc, run_cli, subprocess_env

needs_nvcc = pytest.mark.skipif(nvcc() is None, reason="nvcc is not installed on this machine")


def _cuda_include() -> Path | None:
    exe = nvcc()
    if exe is None:
        return None
    out = subprocess.run([exe, "-v", "--dryrun", "-c", "x.cu"], capture_output=True, text=True, check=False)
    for token in (out.stdout + out.stderr).split():
        if token.startswith("-I") and (Path(token[2:].strip('"')) / "cuda_runtime.h").is_file():
            return Path(token[2:].strip('"'))
    for cand in sorted(Path("/usr/local").glob("cuda*/include")):
        if (cand / "cuda_runtime.h").is_file():
            return cand
    return None


@needs_nvcc
def test_cuda_kernels_compile_with_nvcc_for_two_targets() -> None:
    from xcompat.abi.elf import read_elf

    # the defines torch's cpp_extension passes to nvcc for every extension
    torch_defines = ["-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                     "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__", "--expt-relaxed-constexpr"]
    obj = cached_nvcc_object(KERNELS / "cuda" / "xk_cuda.cu", ["80", "90"], extra=torch_defines)
    assert obj.stat().st_size > 0
    assert set(read_elf(obj).cuda_archs) == {"sm_80", "sm_90"}


@needs_nvcc
def test_cuda_glue_compiles_against_torch_headers(tmp_path: Path) -> None:
    """xk_ops_cuda.cpp is checked with the host compiler against torch's CUDA headers.

    A CPU build of torch lacks the generated ``c10/cuda/impl/cuda_cmake_macros.h``; an
    empty stand-in is enough for a syntax and type check (nothing is linked)."""
    import torch.utils.cpp_extension as ce

    include = _cuda_include()
    if include is None:
        pytest.skip("the CUDA toolkit headers (cuda_runtime.h) were not found")
    src = KERNELS / "torch" / "xk_ops_cuda.cpp"
    digest = hashlib.sha256(src.read_bytes() + (KERNELS / "cuda" / "xk_cuda.h").read_bytes()).hexdigest()[:16]
    marker = artifact_cache() / "glue-check" / f"{digest}.ok"
    if marker.is_file():
        return
    stub = tmp_path / "stub" / "c10" / "cuda" / "impl"
    stub.mkdir(parents=True)
    (stub / "cuda_cmake_macros.h").write_text("#pragma once\n")
    cmd = [shutil.which("c++") or "g++", "-std=c++20", "-fsyntax-only", "-DAT_PER_OPERATOR_HEADERS",
           f"-I{tmp_path / 'stub'}", *[f"-I{p}" for p in ce.include_paths()], f"-I{include}", str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("ok\n")


def _fake_cuda_wheel(tmp_path: Path) -> Path:
    exe = nvcc()
    assert exe is not None
    src = tmp_path / "fake.cu"
    src.write_text('__global__ void k(float* x) { x[threadIdx.x] += 1.0f; }\n'
                   'extern "C" void launch(float* x) { k<<<1, 32>>>(x); }\n')
    lib = artifact_cache() / "nvcc" / "libfakecuda-80-c90.so"
    if not lib.is_file():
        lib.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([exe, "-shared", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_80,code=sm_80",
                        "-gencode", "arch=compute_90,code=compute_90", str(src), "-o", str(lib)],
                       check=True, capture_output=True)
    wheel = tmp_path / "fakecuda-1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(lib, "fakecuda/_kernels.so")
        zf.writestr("fakecuda/__init__.py", "")
        zf.writestr("fakecuda-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: fakecuda\nVersion: 1.0\n")
        zf.writestr("fakecuda-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\n"
                    "Tag: cp311-cp311-linux_x86_64\n")
        zf.writestr("fakecuda-1.0.dist-info/RECORD", "")
    return wheel


@needs_nvcc
def test_probe_reads_the_wheel_fatbinary(tmp_path: Path) -> None:
    from xcompat.jsonio import validate
    from xcompat.probe import collect_probe

    doc = collect_probe(wheel=_fake_cuda_wheel(tmp_path))
    validate("probe", doc)
    assert doc["wheel"]["cuda_archs"] == ["sm_80", "compute_90"]
    assert doc["wheel"]["libraries"] == ["fakecuda/_kernels.so"]
    check = next(c for c in doc["checks"] if c["name"] == "device_arch_in_wheel_fatbin")
    if not doc["devices"]:
        assert check["status"] == "skipped" and "sm_80" in check["reason"]


def test_probe_cli_json_validates_and_reports_the_absent_driver(tmp_path: Path) -> None:
    from xcompat.jsonio import read_json

    out = tmp_path / "probe.json"
    proc = run_cli(["probe", "--json", "-o", str(out)])
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc == read_json(out, schema="probe")
    assert doc["kind"] == "probe" and doc["version"] == 1 and doc["status"] == "passed"
    assert doc["cpu"]["kernel_isa_paths"][0] == "scalar"
    assert doc["cpu"]["kernel_isa_selected"] == doc["cpu"]["kernel_isa_paths"][-1]
    assert doc["python"]["version"].count(".") == 2 and doc["torch"]["version"].startswith("2.")
    if doc["cuda"]["driver_version"] is None:
        assert "libcuda" in doc["cuda"]["driver_absent_reason"]


def test_probe_cli_fails_on_a_forced_path_the_cpu_lacks() -> None:
    from xcompat.probe.cpu import detect_cpu

    other = "neon" if detect_cpu().arch == "x86_64" else "avx512"
    proc = run_cli(["probe", "--json"], env=subprocess_env(XCOMPAT_KERNELS_ISA=other))
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    check = next(c for c in doc["checks"] if c["name"] == "forced_cpu_isa_supported")
    assert doc["status"] == "failed" and check["status"] == "failed" and other in check["reason"]
    assert doc["cpu"]["kernel_isa_selected"] is None and doc["cpu"]["forced"] == {"XCOMPAT_KERNELS_ISA": other}


def test_probe_cli_bad_wheel_is_an_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "broken-1.0-py3-none-any.whl"
    bad.write_bytes(b"not a zip file")
    proc = run_cli(["probe", "--wheel", str(bad)])
    assert proc.returncode == 2
    assert "broken-1.0-py3-none-any.whl" in proc.stderr and "Traceback" not in proc.stderr


def test_probe_missing_wheel_is_an_input_error(tmp_path: Path) -> None:
    from xcompat.errors import InputError
    from xcompat.probe import collect_probe

    with pytest.raises(InputError, match="not found") as info:
        collect_probe(wheel=tmp_path / "absent.whl")
    assert info.value.exit_code == 2 and info.value.file.endswith("absent.whl")
