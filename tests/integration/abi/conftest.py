"""Session fixtures: the native ABI fixtures are compiled once per run (and cached on disk)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.helpers import abi as h
from tests.helpers.wheels import fetch_wheel


def _need(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed; cannot build the native fixture")


@pytest.fixture(scope="session")
def demo_libs() -> dict[str, Path]:
    _need("g++")
    return {"v1": h.build_demo_library("v1"), "v2": h.build_demo_library("v2")}


@pytest.fixture(scope="session")
def demo_exts() -> dict[str, Path]:
    _need("g++")
    return {"v1": h.build_extension("v1"), "v2": h.build_extension("v2")}


@pytest.fixture(scope="session")
def cuda_libs() -> dict[str, Path]:
    _need("nvcc")
    return {"v1": h.build_cuda_library(("80", "90")), "v2": h.build_cuda_library(("90",))}


@pytest.fixture(scope="session")
def torch_2_14_wheel() -> Path:
    """The released torch 2.14.1 wheel (CPython 3.11, manylinux x86_64), downloaded once."""
    return fetch_wheel("torch", "2.14.1")


@pytest.fixture(scope="session")
def torch_lib_dir() -> Path:
    torch = pytest.importorskip("torch")
    return Path(torch.__file__).parent / "lib"


@pytest.fixture(scope="session")
def demo_wheels(tmp_path_factory, demo_libs, demo_exts, cuda_libs) -> dict[str, Path]:
    """demo 1.0.0 -> 1.1.0: C library, extension module, CUDA library, Python API and torch ops change."""
    out = tmp_path_factory.mktemp("wheels")
    wheels = {}
    for v, version, py, ops, rp, tag in (
        ("v1", "1.0.0", h.PY_V1, h.OPS_V1, ">=3.9", "cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64"),
        ("v2", "1.1.0", h.PY_V2, h.OPS_V2, ">=3.11", "cp311-cp311-manylinux_2_28_x86_64"),
    ):
        files = {
            "demo/__init__.py": py + "\nfrom . import ops  # registers the torch operators\n",
            "demo/ops.py": ops,
            "demo/_demo.cpython-311-x86_64-linux-gnu.so": demo_exts[v],
            "demo.libs/libdemo-" + ("1a2b3c4d" if v == "v1" else "5e6f7a8b") + ".so": demo_libs["v1"],
            "demo/lib/libdemo.so": demo_libs[v],
            "demo/lib/libaddone.so": cuda_libs[v],
        }
        wheels[v] = h.make_wheel(out / v, name="demo", version=version, tag=tag, files=files,
                                 requires_python=rp, requires_dist=("torch>=2.1",) if v == "v1" else ("torch>=2.4",))
    return wheels


@pytest.fixture(autouse=True)
def _abi_cache_in_test_cache(monkeypatch):
    """torch wheels unpacked by 'abi links' go to the test cache, not the user's cache."""
    monkeypatch.setenv("XCOMPAT_CACHE", str(h.CACHE / "xcompat-cache"))
