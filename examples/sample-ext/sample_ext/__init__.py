"""sample-ext: a small package with native code, used to exercise xcompat.

Public API:
    scale(values, factor)        -> list[float]   (C extension, full CPython API)
    scale_abi3(values, factor)   -> list[float]   (same C code, Limited API / abi3)
    checksum(data)               -> int           (Adler-32, C)
    scaled_add(a, b, alpha)      -> torch.Tensor  (PyTorch custom op sample_ext::scaled_add)
    cuda_kernel_built()          -> bool          (whether the CUDA launcher library is in the package)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sample_ext import _core, _core_abi3

if TYPE_CHECKING:
    import torch

__version__ = "1.0.0"
__all__ = ["ABI_VERSION", "checksum", "cuda_kernel_built", "scale", "scale_abi3", "scaled_add"]

ABI_VERSION: int = _core.ABI_VERSION


def scale(values: Sequence[float], factor: float = 2.0) -> list[float]:
    """Multiply every value by ``factor``."""
    return _core.scale(values, float(factor))


def scale_abi3(values: Sequence[float], factor: float = 2.0) -> list[float]:
    """``scale`` through the abi3 build of the same C code."""
    return _core_abi3.scale(values, float(factor))


def checksum(data: bytes | bytearray | memoryview) -> int:
    """Adler-32 checksum of a bytes-like object."""
    return _core.checksum(data)


def scaled_add(a: torch.Tensor, b: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    """``a + alpha * b`` for float32 tensors, through the custom op ``sample_ext::scaled_add``."""
    from sample_ext._ops_loader import ops

    return ops().scaled_add(a, b, float(alpha))


def cuda_kernel_built() -> bool:
    from sample_ext._ops_loader import cuda_library

    return cuda_library() is not None
