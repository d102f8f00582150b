"""Prepare the warm parent that every test process is forked from.

Forking is cheap only when the parent already did the expensive, lazy work the tests will
repeat: ``import torch`` (~1.9 s) and the first ``torch.testing.assert_close`` (which
imports ~520 more modules, ~0.6 s). Two things must never happen in the parent:

* an OpenMP thread pool: after one multi-threaded op, a forked child hangs forever in its
  first parallel region (libgomp). The parent therefore runs single-threaded for its whole
  life and each child restores the thread count right after the fork;
* CUDA/HIP/MPS initialisation: those runtimes cannot survive a fork. The parent sets
  ``PYTORCH_NVML_BASED_CUDA_CHECK=1`` so availability checks go through NVML, and its
  warm-up only touches CPU tensors.
"""

from __future__ import annotations

import importlib
import os
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, kw_only=True)
class WarmState:
    torch_version: str | None = None
    threads: int | None = None  # torch's intra-op thread count to restore in each child
    seconds: float = 0.0
    preloaded: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "torch": self.torch_version,
            "threads": self.threads,
            "seconds": round(self.seconds, 3),
            "preloaded": list(self.preloaded),
        }


def warm_parent(*, preload: tuple[str, ...] = (), use_torch: bool = True) -> WarmState:
    """Import and exercise what tests will use, without threads or device runtimes."""
    start = time.perf_counter()
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    loaded: list[str] = []
    torch_version = None
    threads = None
    if use_torch:
        try:
            import torch
        except ImportError:
            torch = None  # type: ignore[assignment]
        if torch is not None:
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            torch_version = str(torch.__version__).split("+")[0]
            # Tiny CPU ops only: this pulls in torch.testing's lazy imports (sympy & co.)
            # and autograd's first-use setup, with one intra-op thread.
            a = torch.arange(16, dtype=torch.float32).reshape(4, 4)
            b = (a @ a.t()).sum(dim=0)
            torch.testing.assert_close(b, b.clone())
            torch.testing.assert_close(a.to(torch.float64), a.to(torch.float64))
            x = torch.ones(3, requires_grad=True)
            (x * 2).sum().backward()
            loaded.append("torch")
    for name in preload:
        importlib.import_module(name)
        loaded.append(name)
    return WarmState(
        torch_version=torch_version,
        threads=threads,
        seconds=time.perf_counter() - start,
        preloaded=tuple(loaded),
    )


def restore_threads_in_child(state: WarmState) -> None:
    """Give a forked child its normal thread count back (the pool starts fresh there)."""
    if state.threads and state.threads > 1:
        import sys

        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_num_threads(state.threads)
