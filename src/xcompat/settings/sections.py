"""The typed sections of the settings (``tests``, ``abi``, ``coverage``, ``gate``), as a matrix
and the resolved settings (``xcompat.settings.Settings``) hold them.

Each field is one key of the settings table (``xcompat/settings/table.json``), which holds its
default, type and meaning; the table's readers fill these objects
(``xcompat.settings.table.build_sections``). A key with no field of its own here is held in
its section's ``extra``, by the field name it would have, and read with ``Settings.value(key)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from xcompat.bump import Bump

Isolation = Literal["none", "file", "test"]
Baseline = Literal["last-release-tag", "base-branch"]


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, kw_only=True)
class TestSettings:
    """``tests:``: what a test cell runs."""

    __test__ = False  # not a pytest test class

    kernels: Literal["all"] | tuple[str, ...]  # "none" in the file becomes ()
    pytest_paths: tuple[str, ...]
    pytest_args: tuple[str, ...]
    isolation: Isolation
    timeout: float  # seconds per test
    # the project's own torch operators: which findings turn the kernels stage red
    operators: Literal["gate", "report"] = "gate"
    extra: Mapping[str, Any] = field(default_factory=_empty, repr=False)


@dataclass(frozen=True, kw_only=True)
class AbiPolicy:
    """``abi:``: baseline, which finding kinds gate, per-kind bump overrides."""

    baseline: Baseline
    gating: tuple[str, ...] | None  # None: the ABI rules' defaults (kinds that need a major bump)
    bumps: Mapping[str, Bump]  # finding kind -> required bump override
    # extension modules' interface besides PyInit_* (globs); None: the package-prefix convention
    extension_exports: tuple[str, ...] | None
    # True: a run whose baseline cannot be found or built is red (the ABI was not compared)
    baseline_required: bool
    # per arch, the ISA level its wheels promise (aarch64 -> armv8.0-a); applied by `xcompat run`
    isa_floors: Mapping[str, str] = field(default_factory=_empty)
    extra: Mapping[str, Any] = field(default_factory=_empty, repr=False)


@dataclass(frozen=True, kw_only=True)
class CoverageThresholds:
    """``coverage:``: percentages (0-100) or None when not gated."""

    overall: float | None = None
    diff: float | None = None
    extra: Mapping[str, Any] = field(default_factory=_empty, repr=False)


@dataclass(frozen=True, kw_only=True)
class GateSettings:
    """``gate:``: which tags the release gate applies to and which lanes must pass."""

    tag_pattern: str
    required_backends: tuple[str, ...]
    extra: Mapping[str, Any] = field(default_factory=_empty, repr=False)


ContractMode = Literal["report", "gate"]


@dataclass(frozen=True, kw_only=True)
class ContractsSettings:
    """``contracts:``: how the stubs, runtime-libraries and python-floor stages are judged
    (``report``: findings shown, never red; ``gate``: new findings make the cell red)."""

    stubs: ContractMode = "report"
    runtime_libraries: ContractMode = "report"
    python_floor: ContractMode = "report"
    extra: Mapping[str, Any] = field(default_factory=_empty, repr=False)


# The section objects by the first part of a key's name.
SECTIONS: Mapping[str, type] = MappingProxyType(
    {"tests": TestSettings, "abi": AbiPolicy, "coverage": CoverageThresholds, "gate": GateSettings,
     "contracts": ContractsSettings}
)
