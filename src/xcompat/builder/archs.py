"""GPU architecture names in the forms the build tools read.

The matrix names archs as the devices report them (``sm_80``, ``sm_90a``, ``gfx90a``);
``TORCH_CUDA_ARCH_LIST`` wants ``8.0;9.0a`` and ``PYTORCH_ROCM_ARCH`` wants ``gfx90a;gfx942``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from xcompat.errors import InputError

_SM = re.compile(r"^(?:sm_|compute_)(\d+)(\d)([af]?)(\+PTX)?$")
_GFX = re.compile(r"^gfx[0-9a-f]{3,4}(?::[a-z+-]+)*$")


def torch_cuda_arch(arch: str) -> str:
    """``sm_80`` -> ``8.0``; ``sm_90a`` -> ``9.0a``; ``8.6`` and ``9.0+PTX`` pass through."""
    text = arch.strip()
    if re.fullmatch(r"\d+\.\d+[af]?(\+PTX)?", text):
        return text
    match = _SM.match(text)
    if match is None:
        raise InputError(f"not a CUDA arch: {arch!r}", hint="write it as sm_80, sm_90a or 8.6")
    major, minor, suffix, ptx = match.groups()
    return f"{major}.{minor}{suffix}{ptx or ''}"


def _arch_number(value: str) -> tuple[int, int]:
    major, minor = re.match(r"(\d+)\.(\d+)", value).groups()  # type: ignore[union-attr]
    return int(major), int(minor)


def torch_cuda_arch_list(archs: Iterable[str]) -> str:
    """``TORCH_CUDA_ARCH_LIST`` for a cell's CUDA archs, in ascending order. Unless the list
    already names a PTX target, the newest arch without an ``a``/``f`` suffix also gets PTX,
    so that GPUs newer than the list can JIT the kernels."""
    unique = sorted(dict.fromkeys(torch_cuda_arch(a) for a in archs), key=lambda v: (_arch_number(v), v))
    if unique and not any(v.endswith("+PTX") for v in unique):
        plain = [i for i, v in enumerate(unique) if v[-1].isdigit()]
        if plain:
            unique[plain[-1]] += "+PTX"
    return ";".join(unique)


def rocm_arch_list(archs: Iterable[str]) -> str:
    values = []
    for arch in archs:
        text = arch.strip()
        if not _GFX.match(text):
            raise InputError(f"not a ROCm arch: {arch!r}", hint="write it as gfx90a or gfx942")
        values.append(text)
    return ";".join(dict.fromkeys(values))
