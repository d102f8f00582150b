"""What a device backend is to xcompat: a name, a torch device type and a cheap probe."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

BackendName = Literal["cpu", "cuda", "rocm", "mps"]
BACKEND_NAMES: tuple[BackendName, ...] = ("cpu", "cuda", "rocm", "mps")
DEFAULT_ORDER: tuple[BackendName, ...] = ("cuda", "rocm", "mps", "cpu")


@dataclass(frozen=True, kw_only=True)
class Availability:
    """The outcome of probing one backend.

    ``reason`` always says why, in one line, whether available or not; ``details`` holds
    what the probe learnt (driver version, device count, names) for the probe report.
    """

    backend: BackendName
    available: bool
    reason: str
    seconds: float = 0.0
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "available": self.available,
            "reason": self.reason,
            "probe_seconds": round(self.seconds, 6),
            "details": dict(self.details),
        }


class Backend(Protocol):
    """A device backend. ``probe`` must never initialise CUDA/HIP in the calling process
    (a later ``fork`` would then be unable to use the device)."""

    name: BackendName
    torch_device: str  # the torch device type the kernels run on ("cuda" for ROCm too)

    def probe(self, env: Mapping[str, str]) -> Availability: ...
