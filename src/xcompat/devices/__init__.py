"""Device backends (cpu, cuda, rocm, mps): cheap availability probes and the fallback chain.

Nothing here initialises CUDA or HIP in the calling process, so a test runner can probe
and then fork workers that still use the GPU.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from xcompat.devices.base import BACKEND_NAMES, DEFAULT_ORDER, Availability, Backend, BackendName
from xcompat.devices.fallback import FallbackChain, FallbackStep, Resolution, parse_order

__all__ = [
    "BACKEND_NAMES",
    "DEFAULT_ORDER",
    "Availability",
    "Backend",
    "BackendName",
    "FallbackChain",
    "FallbackStep",
    "Resolution",
    "available_backends",
    "get_backend",
    "parse_order",
    "probe_backend",
]


def get_backend(name: str) -> Backend:
    from xcompat.devices.backends import REGISTRY

    if name not in REGISTRY:
        from xcompat.errors import UsageError

        raise UsageError(f"unknown backend {name!r}", hint=f"choose from {', '.join(BACKEND_NAMES)}")
    return REGISTRY[name]


def probe_backend(name: str, env: Mapping[str, str] | None = None) -> Availability:
    return get_backend(name).probe(os.environ if env is None else env)


def available_backends(env: Mapping[str, str] | None = None) -> list[str]:
    """Backends usable here, in the default preference order (cuda, rocm, mps, cpu).

    Cheap: no ``import torch`` except on macOS for MPS, no CUDA initialisation.
    """
    env = os.environ if env is None else env
    return [name for name in DEFAULT_ORDER if probe_backend(name, env).available]
