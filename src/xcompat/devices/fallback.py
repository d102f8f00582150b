"""The fallback chain: which backend the kernels (or tests) really run on, and why.

``FallbackChain(order).resolve(requested)`` walks the order, probing each backend, and
records every step: taken or skipped, the reason, and how long the probe took. The
result says whether the lane ended on a fallback, so a CUDA lane that ran on CPU can
never pass as a CUDA pass:

* ``requested="auto"``: the first available backend in the order is taken. If a
  ``required`` backend was not the one taken, the outcome is ``fallback``.
* ``requested=<name>``: that backend or nothing. Unavailable means
  :class:`~xcompat.errors.UnavailableError` (exit 5) with the probe's reason.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from xcompat.devices.backends import REGISTRY
from xcompat.devices.base import BACKEND_NAMES, DEFAULT_ORDER, Availability, Backend, BackendName
from xcompat.errors import UnavailableError, UsageError


@dataclass(frozen=True, kw_only=True)
class FallbackStep:
    backend: BackendName
    taken: bool
    available: bool
    reason: str
    probe_seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "taken": self.taken,
            "available": self.available,
            "reason": self.reason,
            "probe_seconds": round(self.probe_seconds, 6),
        }


@dataclass(frozen=True, kw_only=True)
class Resolution:
    requested: str
    used: BackendName
    steps: tuple[FallbackStep, ...]
    required: tuple[BackendName, ...] = ()
    probes: Mapping[str, Availability] = field(default_factory=dict)

    @property
    def missing_required(self) -> tuple[BackendName, ...]:
        """Required backends the run did not use (each one a lane that fell back)."""
        return tuple(b for b in self.required if b != self.used)

    @property
    def is_fallback(self) -> bool:
        """True when a required backend was not used. An ``auto`` run whose first choice was
        absent is recorded in the steps but is only a fallback if that choice was required."""
        return bool(self.missing_required)

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend_requested": self.requested,
            "backend_used": self.used,
            "required": list(self.required),
            "missing_required": list(self.missing_required),
            "steps": [s.to_dict() for s in self.steps],
        }


def parse_order(text: str | Sequence[str] | None) -> tuple[BackendName, ...]:
    if text is None:
        return DEFAULT_ORDER
    items = [t.strip() for t in (text.split(",") if isinstance(text, str) else text) if t.strip()]
    if not items:
        raise UsageError("the backend order is empty", hint=f"use a comma-separated list of {', '.join(BACKEND_NAMES)}")
    seen: list[BackendName] = []
    for item in items:
        if item not in BACKEND_NAMES:
            raise UsageError(f"unknown backend {item!r} in the order", hint=f"choose from {', '.join(BACKEND_NAMES)}")
        if item in seen:
            raise UsageError(f"backend {item!r} appears twice in the order")
        seen.append(item)
    return tuple(seen)


class FallbackChain:
    def __init__(
        self,
        order: Iterable[BackendName] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        registry: Mapping[str, Backend] | None = None,
    ) -> None:
        self.order = parse_order(list(order) if order is not None else None)
        self.env = os.environ if env is None else env
        self.registry = REGISTRY if registry is None else registry

    def probe(self, backend: BackendName) -> Availability:
        return self.registry[backend].probe(self.env)

    def resolve(self, requested: str = "auto", *, required: Iterable[str] = ()) -> Resolution:
        required_t: tuple[BackendName, ...] = ()
        for r in dict.fromkeys(required):
            if r not in BACKEND_NAMES:
                raise UsageError(f"unknown required backend {r!r}", hint=f"choose from {', '.join(BACKEND_NAMES)}")
            required_t = (*required_t, r)
        probes: dict[str, Availability] = {}
        steps: list[FallbackStep] = []
        if requested != "auto":
            if requested not in BACKEND_NAMES:
                raise UsageError(f"unknown backend {requested!r}", hint=f"choose from auto, {', '.join(BACKEND_NAMES)}")
            result = self.probe(requested)
            probes[requested] = result
            steps.append(
                FallbackStep(
                    backend=result.backend,
                    taken=result.available,
                    available=result.available,
                    reason=result.reason,
                    probe_seconds=result.seconds,
                )
            )
            if not result.available:
                raise UnavailableError(
                    f"backend {requested!r} was requested but is not available: {result.reason}",
                    hint="use --backend auto to fall back, or run on a machine with this device",
                )
            return Resolution(
                requested=requested, used=result.backend, steps=tuple(steps), required=required_t, probes=probes
            )
        used: BackendName | None = None
        for name in self.order:
            if used is not None:
                steps.append(
                    FallbackStep(backend=name, taken=False, available=False, reason=f"not probed: {used} was taken",
                                 probe_seconds=0.0)
                )
                continue
            result = self.probe(name)
            probes[name] = result
            if result.available:
                used = name
            steps.append(
                FallbackStep(
                    backend=name,
                    taken=result.available,
                    available=result.available,
                    reason=result.reason,
                    probe_seconds=result.seconds,
                )
            )
        if used is None:
            raise UnavailableError(
                f"no backend in the order {', '.join(self.order)} is available",
                hint="add cpu to the order",
            )
        return Resolution(requested="auto", used=used, steps=tuple(steps), required=required_t, probes=probes)
