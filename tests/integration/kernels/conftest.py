"""One JIT build of the kernel library per test session (cached across sessions)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from tests.helpers.kernels import kernel_cache


@pytest.fixture(scope="session")
def kernels_lib() -> Any:
    # the library reads XCOMPAT_KERNELS_ISA once, at first use; these tests pick paths themselves
    os.environ.pop("XCOMPAT_KERNELS_ISA", None)
    from xcompat.kernels.build import load_kernels

    # the same cache folder the CLI subprocesses get through XCOMPAT_CACHE (subprocess_env)
    loaded = load_kernels(cache_dir=kernel_cache() / "kernels")
    print(f"\nkernel library: {'cached' if loaded.cached else 'built'} in {loaded.seconds:.2f} s ({loaded.library})")
    return loaded


@pytest.fixture(scope="session")
def ops(kernels_lib: Any) -> Any:
    from xcompat.kernels.build import kernel_ops

    return kernel_ops()


@pytest.fixture
def auto_isa(ops: Any) -> Any:
    yield ops
    ops.set_isa("auto")
    ops.set_poison(0)
