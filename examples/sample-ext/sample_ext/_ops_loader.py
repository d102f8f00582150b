"""Load the custom-op library into torch's dispatcher once, on first use."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent


def _find(prefix: str) -> Path:
    for candidate in sorted(_HERE.glob(f"{prefix}*.so")) + sorted(_HERE.glob(f"{prefix}*.pyd")):
        return candidate
    raise ImportError(f"sample_ext: {prefix} library not found in {_HERE}; was the package built?")


def cuda_library() -> Path | None:
    found = sorted(_HERE.glob("libsample_ext_cuda*.so"))
    return found[0] if found else None


@functools.cache
def ops() -> Any:
    """``torch.ops.sample_ext`` with the library loaded."""
    import torch

    torch.ops.load_library(str(_find("_ops.")))
    return torch.ops.sample_ext
