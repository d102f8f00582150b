"""The CUDA build path on a GPU-less host, with a CUDA build of torch (``make test-cuda-build``).

The kernels and the sample's CUDA part are built through xcompat's own code for the archs
the sample's matrix names (``gpu-archs: [sm_80, sm_90]``), with the pip CUDA toolkit
(``nvidia/cu13``: no CUDA_HOME, no nvcc on PATH), then checked: they link, load without a
GPU, register CUDA, CPU and Meta kernels, and their fatbinaries carry the matrix's archs,
read by xcompat's ELF/fatbin reader and by ``cuobjdump``, which must agree.

Collected by ``make test`` too, where torch is the CPU build: skipped there, with the reason.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from xcompat.devices.torchinfo import torch_build

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "examples" / "sample-ext"
OPS = ("add", "fma", "exp", "softmax", "sum", "scatter_add")

if os.environ.get("XCOMPAT_CUDA_BUILD_TIER") == "1" and not torch_build().cuda:
    # in its own tier a skip would be a silent pass: refuse to collect instead
    pytest.fail(f"make test-cuda-build needs a CUDA build of torch; found {torch_build().version}", pytrace=False)

pytestmark = [
    pytest.mark.skipif(not torch_build().cuda, reason="needs a CUDA build of torch (make test-cuda-build installs one)"),
    pytest.mark.timeout(900),
]


def _matrix_archs() -> tuple[str, ...]:
    from xcompat.matrix import load_matrix

    spec = load_matrix(SAMPLE / ".xcompat" / "matrix.yml").backend("cuda")
    assert spec is not None and spec.gpu_archs
    return tuple(spec.gpu_archs)


def _cache() -> Path:
    base = os.environ.get("XCOMPAT_CACHE") or str(Path.home() / ".cache" / "xcompat-ci")
    return Path(base) / "cuda-build" / "work"


def _env_without_system_toolkit() -> dict[str, str]:
    """The pip toolkit must be found on its own: no CUDA_HOME, no nvcc on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH", "TORCH_CUDA_ARCH_LIST")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and not (Path(p) / "nvcc").exists())
    return env


def _cuobjdump_archs(path: Path) -> set[str]:
    from xcompat.devices.toolkit import find_cuobjdump

    tool = find_cuobjdump({"PATH": ""})
    assert tool, "cuobjdump not found (the tier installs nvidia-cuda-cuobjdump)"
    archs: set[str] = set()
    for flag, kind in (("--list-elf", "sm"), ("--list-ptx", "compute")):
        proc = subprocess.run([tool, flag, str(path)], capture_output=True, text=True, check=False, timeout=120)
        # "ELF file 1: name.1.sm_90.cubin" / "PTX file 1: name.1.sm_90.ptx" (PTX named by its virtual arch)
        archs.update(f"{kind}_{m}" for m in re.findall(r"\.sm_(\d+[af]?)\.(?:cubin|ptx)", proc.stdout))
    return archs


def _registered(namespace: str, ops: tuple[str, ...], library: Path, sys_path: list[str] | None = None) -> dict:
    """Load the library in a fresh interpreter (no GPU here) and list each op's dispatch keys."""
    code = (
        "import json, sys, torch\n"
        f"sys.path[:0] = {sys_path or []!r}\n"
        f"torch.ops.load_library({str(library)!r})\n"
        f"print(json.dumps({{op: [k for k in ('CPU', 'CUDA', 'Meta') if torch._C._dispatch_has_kernel_for_dispatch_key("
        f"'{namespace}::' + op, k)] for op in {list(ops)!r}}}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_kernels_build_from_the_matrix_with_the_pip_toolkit_link_load_and_carry_its_archs() -> None:
    from xcompat.abi.elf import read_elf

    archs = _matrix_archs()
    env = _env_without_system_toolkit()
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from xcompat.kernels.build import load_kernels\n"
        f"r = load_kernels(with_device=True, gpu_archs={list(archs)!r}, cache_dir=Path({str(_cache() / 'kernels')!r}))\n"
        "print(json.dumps({**r.to_dict(), 'cuda_home': r.key.cuda_home}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    build = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"kernel library: {'cached' if build['cached'] else 'built'} in {build['seconds']:.1f} s")
    assert build["with_device"] and build["arch_source"] == "matrix"
    assert build["device_archs"] == ["8.0", "9.0+PTX"]
    assert build["cuda_home"].endswith(os.path.join("nvidia", "cu13"))  # the pip layout, found on its own
    library = Path(build["library"])
    elf = read_elf(library)
    assert {"libc10_cuda.so", "libcudart.so.13"} <= set(elf.needed), elf.needed
    ours = set(elf.cuda_archs)
    assert {f"sm_{a[3:]}" for a in archs} <= ours and "compute_90" in ours
    assert _cuobjdump_archs(library) == ours
    keys = _registered("xcompat_kernels", OPS, library)
    assert all(set(keys[op]) == {"CPU", "CUDA", "Meta"} for op in OPS), keys


def test_kernels_build_without_archs_or_gpu_is_exit_5_with_kernels_json(tmp_path: Path) -> None:
    out = tmp_path / "kernels.json"
    env = {**_env_without_system_toolkit(), "XCOMPAT_CACHE": str(_cache())}
    env.pop("XCOMPAT_GPU_ARCHS", None)
    code = (
        "import sys\n"
        "from xcompat.kernels.build import load_kernels\n"
        "from xcompat.errors import UnavailableError\n"
        "try:\n"
        "    load_kernels(with_device=True)\n"
        "except UnavailableError as exc:\n"
        "    print(exc); sys.exit(exc.exit_code)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False,
                          timeout=300)
    assert proc.returncode == 5 and "gpu-archs" in proc.stdout, proc.stdout + proc.stderr
    assert "IndexError" not in proc.stderr
    cli = subprocess.run([sys.executable, "-m", "xcompat", "kernels", "run", "--backend", "cuda", "--json", str(out)],
                         capture_output=True, text=True, env=env, check=False, timeout=300, cwd=REPO)
    assert cli.returncode == 5 and "Traceback" not in cli.stderr
    doc = json.loads(out.read_text())
    assert doc["status"] == "failed" and doc["unavailable"]["exit_code"] == 5


def test_sample_cuda_part_built_by_xcompat_build_links_loads_and_carries_the_matrix_archs(tmp_path: Path) -> None:
    from xcompat.abi.elf import read_elf
    from xcompat.builder.driver import BuildSettings, build_project
    from xcompat.model import Cell

    archs = _matrix_archs()
    cell = Cell(id="linux-x86_64-cuda-py3", python=f"{sys.version_info.major}.{sys.version_info.minor}",
                platform="linux", arch="x86_64", backend="cuda", gpu_archs=archs)
    src = tmp_path / "sample"
    shutil.copytree(SAMPLE, src, symlinks=False, ignore=shutil.ignore_patterns("build", "*.egg-info", "*.so", "dist"))
    env = {**_env_without_system_toolkit(), "SAMPLE_EXT_CUDA": "1", "SAMPLE_EXT_CCACHE": "0"}
    record = build_project(src, tmp_path / "out", cells=[cell], settings=BuildSettings(env=env))
    wheels = sorted((tmp_path / "out").glob("*.whl"))
    assert len(wheels) == 1, record
    site = tmp_path / "site"
    with zipfile.ZipFile(wheels[0]) as zf:
        names = zf.namelist()
        assert "sample_ext/libsample_ext_cuda.so" in names, names
        zf.extractall(site)
    cuda_lib = site / "sample_ext" / "libsample_ext_cuda.so"
    ours = set(read_elf(cuda_lib).cuda_archs)
    assert {f"sm_{a[3:]}" for a in archs} <= ours
    assert _cuobjdump_archs(cuda_lib) == ours
    ops_lib = next((site / "sample_ext").glob("_ops*.so"))
    assert "libsample_ext_cuda.so" in read_elf(ops_lib).needed
    keys = _registered("sample_ext", ("scaled_add",), ops_lib, [str(site)])
    assert set(keys["scaled_add"]) == {"CPU", "CUDA", "Meta"}, keys


def test_probe_finds_and_checks_the_same_pip_toolkit(tmp_path: Path) -> None:
    env = _env_without_system_toolkit()
    proc = subprocess.run([sys.executable, "-m", "xcompat", "probe", "--json"], capture_output=True, text=True,
                          env=env, check=False, timeout=300, cwd=REPO)
    doc = json.loads(proc.stdout)
    check = next(c for c in doc["checks"] if c["name"] == "jit_toolchain_present")
    assert check["status"] == "passed" and "pip toolkit" in check["reason"], check
    assert doc["toolchain"]["cuda_toolkit"]["layout"] == "pip"
    assert doc["toolchain"]["cuobjdump"] and doc["toolchain"]["cuobjdump"].endswith("nvidia/cu13/bin/cuobjdump")
    # a CUDA_HOME without headers (what torch guesses from a wrapper nvcc) is named and passed over
    broken = tmp_path / "wrapper-home"
    (broken / "bin").mkdir(parents=True)
    (broken / "bin" / "nvcc").write_text("#!/bin/sh\n")
    proc = subprocess.run([sys.executable, "-m", "xcompat", "probe", "--json"], capture_output=True, text=True,
                          env={**env, "CUDA_HOME": str(broken)}, check=False, timeout=300, cwd=REPO)
    doc = json.loads(proc.stdout)
    assert any("include/cuda_runtime.h" in r for r in doc["toolchain"]["cuda_toolkit_rejected"]), doc["toolchain"]
    assert doc["toolchain"]["cuda_toolkit"]["layout"] == "pip"
