"""CUDA toolkit discovery on the system and pip layouts, built in tmp folders.

Where this machine has a CUDA toolkit, the fake layouts are made of its real files
(symlinks to nvcc, cuda_runtime.h, libcudart), so nvcc really runs and the linker really
links; elsewhere small stand-ins keep the layout checks running."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from xcompat.devices import toolkit as tk
from xcompat.errors import UnavailableError
from xcompat.kernels.archs import resolve_device_archs
from xcompat.kernels.jit import cudart_link_flags

REAL = tk.find_cuda_toolkit(os.environ, sites=[]).toolkit  # a real toolkit on this machine, if any
needs_real = pytest.mark.skipif(REAL is None, reason="no CUDA toolkit (nvcc + headers + libcudart) on this machine")


def _link_or_write(dest: Path, real: Path | None, text: str = "") -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    if real is not None and real.exists():
        dest.symlink_to(real.resolve())
    else:
        dest.write_text(text)
        dest.chmod(dest.stat().st_mode | stat.S_IXUSR)


def _cudart_file() -> Path | None:
    if REAL is None:
        return None
    versioned = sorted(REAL.lib_dir.glob("libcudart.so.[0-9]*"))
    return versioned[0] if versioned else REAL.cudart


def make_system_layout(root: Path) -> Path:
    _link_or_write(root / "bin" / "nvcc", REAL.nvcc if REAL else None, "#!/bin/sh\necho 'release 13.0'\n")
    _link_or_write(root / "include" / "cuda_runtime.h", REAL.include_dir / "cuda_runtime.h" if REAL else None)
    _link_or_write(root / "lib64" / "libcudart.so", _cudart_file())
    return root


def make_pip_layout(site: Path, *, with_runtime: bool = True) -> Path:
    root = site / "nvidia" / "cu13"
    _link_or_write(root / "bin" / "nvcc", REAL.nvcc if REAL else None, "#!/bin/sh\necho 'release 13.0'\n")
    if with_runtime:
        _link_or_write(root / "include" / "cuda_runtime.h", REAL.include_dir / "cuda_runtime.h" if REAL else None)
        _link_or_write(root / "lib" / "libcudart.so.13", _cudart_file())  # only the SONAME file, in lib/
    return root


def _release(_: Path) -> str:
    return "13.0"


def _no_nvcc(*_a, **_k):
    return None


def test_system_layout_is_found_through_cuda_home(tmp_path: Path) -> None:
    root = make_system_layout(tmp_path / "cuda-13.0")
    found = tk.find_cuda_toolkit({"CUDA_HOME": str(root)}, sites=[], which=_no_nvcc, release=_release,
                                 default_root=tmp_path / "absent").require()
    assert found.layout == "system" and found.source == "CUDA_HOME"
    assert found.lib_dir == root / "lib64" and found.cudart.name == "libcudart.so"
    assert found.cudart_link_flag == "-lcudart"


def test_pip_layout_is_found_in_site_packages(tmp_path: Path) -> None:
    root = make_pip_layout(tmp_path / "site")
    found = tk.find_cuda_toolkit({}, sites=[tmp_path / "site"], which=_no_nvcc, release=_release,
                                 default_root=tmp_path / "absent", torch_cuda="13.0").require()
    assert found.layout == "pip" and found.root == root
    assert found.lib_dir == root / "lib" and found.cudart.name == "libcudart.so.13"
    assert found.cudart_link_flag == "-l:libcudart.so.13"


def test_cuda_home_without_headers_is_rejected_with_the_reason_and_the_next_candidate_used(tmp_path: Path) -> None:
    broken = tmp_path / "wrapper-home"
    _link_or_write(broken / "bin" / "nvcc", None, "#!/bin/sh\n")
    good = make_pip_layout(tmp_path / "site")
    search = tk.find_cuda_toolkit({"CUDA_HOME": str(broken)}, sites=[tmp_path / "site"], which=_no_nvcc,
                                  release=_release, default_root=tmp_path / "absent")
    assert search.toolkit is not None and search.toolkit.root == good
    assert any("cuda_runtime.h" in r and "CUDA_HOME" in r for r in search.rejected), search.rejected


def test_no_toolkit_is_exit_5_naming_what_is_missing(tmp_path: Path) -> None:
    make_pip_layout(tmp_path / "site", with_runtime=False)  # nvcc wheel without the runtime wheel
    search = tk.find_cuda_toolkit({}, sites=[tmp_path / "site"], which=_no_nvcc, release=_release,
                                  default_root=tmp_path / "absent")
    with pytest.raises(UnavailableError) as info:
        search.require()
    assert info.value.exit_code == 5
    assert "include/cuda_runtime.h" in str(info.value) and "cuda-toolkit" in str(info.value)


def test_toolkit_of_another_cuda_major_is_rejected(tmp_path: Path) -> None:
    root = make_system_layout(tmp_path / "cuda-12.8")
    search = tk.find_cuda_toolkit({"CUDA_HOME": str(root)}, sites=[], which=_no_nvcc, release=lambda _: "12.8",
                                  default_root=tmp_path / "absent", torch_cuda="13.0")
    assert search.toolkit is None and "does not match torch's CUDA 13.0" in search.rejected[0]


def test_lib_folder_under_targets_is_accepted(tmp_path: Path) -> None:
    root = tmp_path / "cuda"
    _link_or_write(root / "bin" / "nvcc", None, "#!/bin/sh\n")
    _link_or_write(root / "targets" / "x86_64-linux" / "include" / "cuda_runtime.h", None)
    _link_or_write(root / "targets" / "x86_64-linux" / "lib" / "libcudart.so.13", None)
    found, why = tk.inspect_root(root, source="test", release=_release)
    assert why is None and found is not None
    assert found.include_dir.name == "include" and found.lib_dir.parts[-2:] == ("x86_64-linux", "lib")


@needs_real
def test_wrapper_nvcc_on_path_resolves_to_the_real_toolkit(tmp_path: Path) -> None:
    """A /usr/local/bin/nvcc-style wrapper script: torch would take its parent as CUDA_HOME."""
    wrapper_dir = tmp_path / "wrapper-bin"
    wrapper_dir.mkdir()
    wrapper = wrapper_dir / "nvcc"
    wrapper.write_text(f'#!/bin/sh\nexec {REAL.nvcc} "$@"\n')
    wrapper.chmod(0o755)
    assert not (wrapper_dir.parent / "include" / "cuda_runtime.h").exists()  # torch's guess is wrong
    home = tk.nvcc_home(str(wrapper))
    assert home is not None and (home / "bin" / "nvcc").resolve() == REAL.nvcc.resolve()
    found = tk.find_cuda_toolkit({"PATH": str(wrapper_dir)}, sites=[], default_root=tmp_path / "absent").require()
    assert found.source.startswith("nvcc on PATH") and found.version and found.version.count(".") == 1


@needs_real
def test_real_nvcc_runs_from_a_pip_layout_built_of_real_files(tmp_path: Path) -> None:
    root = make_pip_layout(tmp_path / "site")
    found, why = tk.inspect_root(root, source="pip")
    assert why is None and found is not None and found.version == REAL.version


@needs_real
def test_linker_script_links_the_pip_runtime_without_an_unversioned_file(tmp_path: Path) -> None:
    """torch links with -lcudart; the pip layout has only libcudart.so.13. The generated
    linker script resolves it, and the library records the SONAME file as needed."""
    from xcompat.abi.elf import read_elf

    if shutil.which("c++") is None:
        pytest.skip("no C++ compiler")
    root = make_pip_layout(tmp_path / "site")
    toolkit, _ = tk.inspect_root(root, source="pip")
    assert toolkit is not None and not (toolkit.lib_dir / "libcudart.so").exists()
    src = tmp_path / "t.cpp"
    src.write_text('extern "C" int cudaGetDeviceCount(int*);\nextern "C" int probe(int* n) { return cudaGetDeviceCount(n); }\n')
    out = tmp_path / "libt.so"
    plain = subprocess.run(["c++", "-shared", "-fPIC", str(src), "-o", str(out), f"-L{toolkit.lib_dir}", "-lcudart"],
                           capture_output=True, text=True, check=False)
    assert plain.returncode != 0 and "cudart" in plain.stderr  # the failure users met
    flags = cudart_link_flags(toolkit, tmp_path / "build")
    proc = subprocess.run(["c++", "-shared", "-fPIC", str(src), "-o", str(out), *flags, "-lcudart"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert any(n.startswith("libcudart.so.") for n in read_elf(out).needed)


def test_compute_sanitizer_and_cuobjdump_are_found_in_the_pip_layout(tmp_path: Path) -> None:
    bin_dir = tmp_path / "site" / "nvidia" / "cu13" / "bin"
    for name in ("compute-sanitizer", "cuobjdump"):
        _link_or_write(bin_dir / name, None, "#!/bin/sh\n")
    env = {"PATH": str(tmp_path / "empty")}
    assert tk.find_compute_sanitizer(env, sites=[tmp_path / "site"]) == str(bin_dir / "compute-sanitizer")
    assert tk.find_cuobjdump(env, sites=[tmp_path / "site"]) == str(bin_dir / "cuobjdump")


def test_archs_come_from_the_matrix_then_the_variable_then_the_device() -> None:
    archs, source = resolve_device_archs(torch_cuda="13.0", torch_hip=None, env={"XCOMPAT_GPU_ARCHS": "sm_80 sm_90"},
                                         probe=lambda: ["sm_75"])
    assert (archs, source) == (("8.0", "9.0+PTX"), "matrix")
    archs, source = resolve_device_archs(torch_cuda="13.0", torch_hip=None, env={"TORCH_CUDA_ARCH_LIST": "8.6 9.0"},
                                         gpu_archs=None, probe=lambda: ["sm_75"])
    assert (archs, source) == (("8.6", "9.0"), "TORCH_CUDA_ARCH_LIST")
    archs, source = resolve_device_archs(torch_cuda="13.0", torch_hip=None, env={}, probe=lambda: ["sm_90", "sm_90"])
    assert (archs, source) == (("9.0+PTX",), "device")
    archs, source = resolve_device_archs(torch_cuda=None, torch_hip="6.4", env={}, gpu_archs=["gfx90a"])
    assert (archs, source) == (("gfx90a",), "matrix")
    archs, source = resolve_device_archs(torch_cuda=None, torch_hip="6.4", env={}, probe=lambda: ["gfx942"])
    assert (archs, source) == (("gfx942",), "device")


def test_no_arch_and_no_gpu_is_exit_5_not_an_index_error() -> None:
    with pytest.raises(UnavailableError) as info:
        resolve_device_archs(torch_cuda="13.0", torch_hip=None, env={}, probe=list)
    assert info.value.exit_code == 5 and "gpu-archs" in str(info.value)
