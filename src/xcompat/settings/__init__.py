"""The resolved settings of a run: one frozen, typed object every stage reads.

Precedence, lowest to highest (docs/run.md, "Settings"):

1. the settings table, ``settings/table.json`` (the only place a default is written);
2. the signed matrix (``tests``, ``abi``, ``coverage``, ``gate``), or the plan made from it
   (``xcompat matrix plan`` copies them into ``settings`` with the matrix's ``matrix_sha256``);
3. command-line overrides (``xcompat run --timeout 60``), **outside CI only**. In CI
   (``CI=true``) an override is refused: the settings come from the verified matrix alone,
   so a pull request cannot add ``--deselect`` to ``tests.pytest-args``.

Command-line options default to "unset" (``None``), so an option the user did not give
never wins over the matrix. ``Settings.value(key)`` answers by the matrix's own dotted key
names (``tests.pytest-args``), ``to_env()`` gives ``XCOMPAT_TESTS_PYTEST_ARGS=["-x"]``
lines (lists and mappings JSON-encoded; a value that spans lines is refused) for CI jobs.

Each key is written once, in the settings table (``table.json``, read by ``table.py``; its
value types in ``value_types.py``); the object is ``resolved.py``, its formats (matrix,
plan, ``settings.json``) ``formats.py``, and what the table generates (the schema, the
docs/matrix.md key table) ``render.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Protocol

from xcompat.ci import is_ci
from xcompat.errors import UsageError
from xcompat.settings.formats import settings_from_document, settings_from_plan
from xcompat.settings.resolved import Settings
from xcompat.settings.sections import (
    AbiPolicy,
    ContractsSettings,
    CoverageThresholds,
    GateSettings,
    TestSettings,
)
from xcompat.settings.table import (
    build_sections,
    defaults,
    setting_keys,
    setting_row,
    setting_rows,
    typed_defaults,
    typed_value,
)


class SettingsSource(Protocol):
    """What the settings are resolved from: the sections of a loaded matrix
    (``xcompat.matrix.Matrix``), which builds on this package and so is not named here."""

    @property
    def tests(self) -> TestSettings: ...
    @property
    def abi(self) -> AbiPolicy: ...
    @property
    def coverage(self) -> CoverageThresholds: ...
    @property
    def gate(self) -> GateSettings: ...
    @property
    def contracts(self) -> ContractsSettings: ...
    @property
    def sha256(self) -> str: ...


def _from_matrix(matrix: SettingsSource) -> Settings:
    return Settings(tests=matrix.tests, abi=matrix.abi, coverage=matrix.coverage, gate=matrix.gate,
                    contracts=matrix.contracts,
                    matrix_sha256=matrix.sha256 or None, origin="matrix")


def apply_overrides(settings: Settings, overrides: Mapping[str, Any], env: Mapping[str, str]) -> Settings:
    """Command-line values over the matrix's; ``None`` means "not given". Refused in CI."""
    given = {k: v for k, v in overrides.items() if v is not None}
    rows = {key: setting_row(key) for key in given}  # an unknown key is refused with the nearest name
    if not given:
        return settings
    if is_ci(env):
        names = ", ".join(sorted(given))
        raise UsageError(
            f"in CI the settings come only from the verified matrix; refusing the command-line override of {names}",
            hint="change the matrix (tests: ...), sign it, and let the plan carry it",
        )
    values = {row.name: typed_value(settings, row) for row in setting_rows()}
    for key, value in given.items():
        if not rows[key].override:
            raise UsageError(f"{key} cannot be set on the command line", hint="set it in the matrix and sign it")
        values[key] = rows[key].type.from_command_line(value, f"--{key}")
    return replace(settings, **build_sections(values), overridden=tuple(sorted(given)))


def resolve_settings(
    matrix: SettingsSource, overrides: Mapping[str, Any] | None = None, *, env: Mapping[str, str] | None = None,
    signed: bool | None = None,
) -> Settings:
    """Defaults, then the matrix, then command-line overrides (refused in CI)."""
    settings = replace(_from_matrix(matrix), signed=signed)
    return apply_overrides(settings, overrides or {}, env or {})


def defaults_settings(*, required_backends: tuple[str, ...] = ()) -> Settings:
    """The defaults table alone (what a plan without ``settings`` means), with these required backends."""
    values = typed_defaults()
    values["gate.required-backends"] = tuple(required_backends)
    return Settings(**build_sections(values), origin="defaults")


@dataclass(frozen=True, kw_only=True)
class ProjectFacts:
    """What the verdict needs to know about the project under test."""

    name: str | None = None
    uses_torch: bool | None = None  # None: not known (a CI report without the project)
    torch_evidence: str = ""
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "uses_torch": self.uses_torch, "torch_evidence": self.torch_evidence}

    @classmethod
    def from_dict(cls, data: Any) -> ProjectFacts:
        if not isinstance(data, dict):
            return cls()
        name, uses = data.get("name"), data.get("uses_torch")
        return cls(name=name if isinstance(name, str) else None,
                   uses_torch=uses if isinstance(uses, bool) else None,
                   torch_evidence=str(data.get("torch_evidence") or ""))


__all__ = [
    "ProjectFacts",
    "Settings",
    "apply_overrides",
    "defaults",
    "defaults_settings",
    "is_ci",
    "resolve_settings",
    "setting_keys",
    "settings_from_document",
    "settings_from_plan",
]
