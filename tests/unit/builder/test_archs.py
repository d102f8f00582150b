from __future__ import annotations

import pytest

from xcompat.builder.archs import rocm_arch_list, torch_cuda_arch, torch_cuda_arch_list
from xcompat.errors import InputError


@pytest.mark.parametrize(
    ("arch", "expected"),
    [("sm_80", "8.0"), ("sm_90a", "9.0a"), ("sm_100", "10.0"), ("compute_86", "8.6"), ("8.6", "8.6"),
     ("9.0+PTX", "9.0+PTX"), ("sm_120f", "12.0f")],
)
def test_torch_cuda_arch(arch: str, expected: str) -> None:
    assert torch_cuda_arch(arch) == expected


@pytest.mark.parametrize("bad", ["", "sm_", "gfx90a", "sm_8x", "ampere", "8"])
def test_torch_cuda_arch_rejects(bad: str) -> None:
    with pytest.raises(InputError, match="not a CUDA arch"):
        torch_cuda_arch(bad)


def test_arch_list_adds_ptx_to_the_newest_and_dedups() -> None:
    assert torch_cuda_arch_list(["sm_90", "sm_80", "sm_80"]) == "8.0;9.0+PTX"
    # Arch-specific targets (9.0a) have no forward-compatible PTX; the newest plain one gets it.
    assert torch_cuda_arch_list(["sm_80", "sm_90a"]) == "8.0+PTX;9.0a"
    assert torch_cuda_arch_list(["8.6+PTX", "sm_90"]) == "8.6+PTX;9.0"
    assert torch_cuda_arch_list([]) == ""


def test_rocm_arch_list() -> None:
    assert rocm_arch_list(["gfx90a", "gfx942", "gfx90a"]) == "gfx90a;gfx942"
    assert rocm_arch_list(["gfx90a:xnack+"]) == "gfx90a:xnack+"
    with pytest.raises(InputError, match="not a ROCm arch"):
        rocm_arch_list(["sm_80"])
