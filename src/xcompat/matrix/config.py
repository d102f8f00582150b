"""Typed, frozen view of a validated matrix file.

``load_matrix`` (in ``xcompat.matrix``) produces a ``Matrix`` (``xcompat.matrix.build``);
every stage reads its settings from it, never from the raw YAML. The built-in tables
(runner labels, backend support) live in ``xcompat.matrix.defaults``; the settings sections
(``tests``, ``abi``, ``coverage``, ``gate``) in ``xcompat.settings.sections``, their keys and
defaults in the settings table (``xcompat/settings/table.json``).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from xcompat.matrix import defaults as D
from xcompat.settings.sections import (
    AbiPolicy,
    Baseline,
    ContractsSettings,
    CoverageThresholds,
    GateSettings,
    Isolation,
    TestSettings,
)

__all__ = [
    "AbiPolicy",
    "BackendSpec",
    "Baseline",
    "CellRule",
    "CoverageThresholds",
    "GateSettings",
    "IncludeCell",
    "Isolation",
    "Matrix",
    "PlatformSpec",
    "TestSettings",
]


def _empty() -> Mapping[Any, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, kw_only=True)
class PlatformSpec:
    """One operating system of the matrix and its architectures."""

    name: str  # linux | macos | windows
    archs: tuple[str, ...]
    policy: str | None = None  # linux: manylinux_2_28 / musllinux_1_2
    deployment_target: str | None = None  # macos: MACOSX_DEPLOYMENT_TARGET
    runs_on: Mapping[str, tuple[str, ...]] = field(
        default_factory=_empty
    )  # arch -> runner labels (defaults filled in)

    def labels(self, arch: str) -> tuple[str, ...]:
        return self.runs_on.get(arch) or D.DEFAULT_RUNNERS.get((self.name, arch), ())

    @property
    def wheel_policy(self) -> str | None:
        """What the plan's cells carry as ``policy``: the Linux policy or the macOS deployment target."""
        return self.policy if self.name == "linux" else self.deployment_target


@dataclass(frozen=True, kw_only=True)
class BackendSpec:
    """One device lane: cpu, cuda, rocm or mps."""

    name: str
    required: bool = True
    runs_on: Mapping[str, tuple[str, ...]] = field(default_factory=_empty)  # "*" or "platform-arch" -> labels
    platforms: tuple[str, ...] | None = None  # restriction; None = every supported platform
    archs: tuple[str, ...] | None = None
    toolkits: tuple[str, ...] = ()  # CUDA / ROCm versions; empty for cpu and mps
    gpu_archs: tuple[str, ...] = ()

    @property
    def gpu(self) -> bool:
        return self.name in D.GPU_BACKENDS

    def supports(self, platform: str, arch: str) -> bool:
        support = D.BACKEND_SUPPORT[self.name]
        if platform not in support:
            return False
        archs = support[platform]
        if archs is not None and arch not in archs:
            return False
        if self.platforms is not None and platform not in self.platforms:
            return False
        return self.archs is None or arch in self.archs

    def labels(self, platform: str, arch: str, fallback: tuple[str, ...]) -> tuple[str, ...]:
        return self.runs_on.get(f"{platform}-{arch}") or self.runs_on.get("*") or fallback


@dataclass(frozen=True, kw_only=True)
class CellRule:
    """An ``exclude`` rule: matches a cell when every field it names matches (None = any)."""

    python: frozenset[str] | None = None
    platform: frozenset[str] | None = None
    arch: frozenset[str] | None = None
    backend: frozenset[str] | None = None
    toolkit: frozenset[str] | None = None
    frameworks: Mapping[str, frozenset[str]] = field(default_factory=_empty)

    def matches(self, cell: Any) -> bool:
        for name in ("python", "platform", "arch", "backend", "toolkit"):
            allowed = getattr(self, name)
            if allowed is not None and (getattr(cell, name) or "") not in allowed:
                return False
        versions = dict(cell.frameworks)
        return all(versions.get(fw) in allowed for fw, allowed in self.frameworks.items())


@dataclass(frozen=True, kw_only=True)
class IncludeCell:
    """An ``include`` entry: one extra cell, added after exclusion."""

    python: str
    platform: str
    arch: str
    backend: str
    toolkit: str | None = None
    frameworks: tuple[tuple[str, str], ...] = ()
    required: bool | None = None  # None: the backend's setting
    runs_on: tuple[str, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class Matrix:
    """A validated matrix file. Built only by ``xcompat.matrix.load_matrix``."""

    format: int
    repo: str
    serial: int
    expires: _dt.date | None
    pythons: tuple[str, ...]
    platforms: tuple[PlatformSpec, ...]
    backends: tuple[BackendSpec, ...]
    frameworks: Mapping[str, tuple[str, ...]]
    exclude: tuple[CellRule, ...] = ()
    include: tuple[IncludeCell, ...] = ()
    tests: TestSettings
    abi: AbiPolicy
    coverage: CoverageThresholds
    gate: GateSettings
    contracts: ContractsSettings = field(default_factory=ContractsSettings)
    sha256: str = ""  # of the exact bytes parsed
    source: str | None = None

    def backend(self, name: str) -> BackendSpec | None:
        return next((b for b in self.backends if b.name == name), None)

    def platform(self, name: str) -> PlatformSpec | None:
        return next((p for p in self.platforms if p.name == name), None)

    @property
    def backend_names(self) -> tuple[str, ...]:
        return tuple(b.name for b in self.backends)

    @property
    def required_backends(self) -> tuple[str, ...]:
        """Backends whose lanes are marked ``required: true``."""
        return tuple(b.name for b in self.backends if b.required)

    def expired(self, today: _dt.date) -> bool:
        return self.expires is not None and today > self.expires
