"""sample-ext 1.1: the interface of 1.0 with deliberate changes.

Changes from 1.0:
    scale(values, factor, *, offset=0.0)   factor is now required; keyword-only offset added
    checksum64(data) -> int                new (FNV-1a 64, C)
    scaled_add(a, b, alpha=1.0, *, clamp=False)  op schema gained a keyword-only clamp flag
    C API: sample_legacy_sum removed; sample_checksum64 and sample_random_seed added
    abi3 floor raised to CPython 3.11; glibc floor raised to 2.36; CUDA sm_80 dropped
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sample_ext import _core, _core_abi3

if TYPE_CHECKING:
    import torch

__version__ = "1.1.0"
__all__ = ["ABI_VERSION", "checksum", "checksum64", "cuda_kernel_built", "scale", "scale_abi3", "scaled_add"]

ABI_VERSION: int = _core.ABI_VERSION


def scale(values: Sequence[float], factor: float, *, offset: float = 0.0) -> list[float]:
    """Multiply every value by ``factor`` and add ``offset``."""
    return [v + offset for v in _core.scale(values, float(factor))]


def scale_abi3(values: Sequence[float], factor: float, *, offset: float = 0.0) -> list[float]:
    """``scale`` through the abi3 build of the same C code."""
    return [v + offset for v in _core_abi3.scale(values, float(factor))]


def checksum(data: bytes | bytearray | memoryview) -> int:
    """Adler-32 checksum of a bytes-like object."""
    return _core.checksum(data)


def checksum64(data: bytes | bytearray | memoryview) -> int:
    """FNV-1a 64-bit hash of a bytes-like object."""
    return _core.checksum64(data)


def scaled_add(a: torch.Tensor, b: torch.Tensor, alpha: float = 1.0, *, clamp: bool = False) -> torch.Tensor:
    """``a + alpha * b`` (clamped to [-1, 1] when ``clamp``) through ``sample_ext::scaled_add``."""
    from sample_ext._ops_loader import ops

    return ops().scaled_add(a, b, float(alpha), clamp=clamp)


def cuda_kernel_built() -> bool:
    from sample_ext._ops_loader import cuda_library

    return cuda_library() is not None
