"""Device conformance kernels: JIT build with a cache, boundary cases, float64 references.

Public API::

    from xcompat.kernels import run_kernels
    doc = run_kernels(backend="auto", required=["cuda"])  # the "kernels" result envelope

Heavy imports (torch, numpy) happen inside the functions.
"""

from __future__ import annotations

from typing import Any

__all__ = ["run_kernels"]


def run_kernels(
    *,
    backend: str = "auto",
    order: Any = None,
    required: Any = None,
    kernels: Any = None,
    **kwargs: Any,
) -> dict[str, Any]:
    from xcompat.kernels.runner import run_kernels as _run

    return _run(backend=backend, order=order, required=required, kernels=kernels, **kwargs)
