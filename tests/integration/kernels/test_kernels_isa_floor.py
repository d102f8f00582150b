"""The runner's own kernel library against the x86-64-v2 floor: its AVX2 path is compiled for
more than the floor, but reached only after asking the CPU, so the static scan lists it as
*dispatched*, never *unguarded* (the verdict that turns an abi stage red)."""

from __future__ import annotations

import platform
from typing import Any

import pytest

from xcompat.isa.scan import scan_object

pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                                reason="the kernels' AVX2 path is built on x86_64 only")


def test_the_kernels_avx2_path_is_dispatched_not_unguarded(kernels_lib: Any) -> None:
    scan = scan_object(kernels_lib.library, "x86-64-v2")
    assert scan.arch == "x86_64" and scan.floor == "x86-64-v2"
    above = {f.function: f for f in scan.functions}
    # the library does hold code above the floor (else the verdict below would prove nothing) ...
    assert any(f.level in ("x86-64-v3", "x86-64-v4") for f in above.values()), sorted(above)
    avx2 = [name for name in above if "4avx2" in name]  # xk::avx2::..., mangled
    assert avx2 and all(above[name].level != "x86-64-v2" for name in avx2), sorted(above)
    # ... and asks the CPU before running it
    assert scan.probes_cpu
    assert scan.verdict == "dispatched", scan.to_dict()
