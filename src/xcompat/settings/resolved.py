"""``Settings``: the resolved settings of a run, one frozen object every stage reads.

Its sections (``tests``, ``abi``, ``coverage``, ``gate``) are typed objects
(``xcompat.settings.sections``); ``value(key)`` answers by the matrix's dotted key names as JSON
data, and ``to_dict()`` / ``to_env()`` write every key of the settings table, in its order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from xcompat.settings.sections import (
    AbiPolicy,
    ContractsSettings,
    CoverageThresholds,
    GateSettings,
    TestSettings,
)
from xcompat.settings.table import setting_row, setting_rows, typed_value

SETTINGS_VERSION = 1
Origin = Literal["defaults", "matrix", "plan"]
ORIGINS: tuple[Origin, ...] = ("defaults", "matrix", "plan")


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Resolved settings. Build with ``resolve_settings`` or ``settings_from_plan``."""

    tests: TestSettings
    abi: AbiPolicy
    coverage: CoverageThresholds
    gate: GateSettings
    contracts: ContractsSettings = field(default_factory=ContractsSettings)
    matrix_sha256: str | None = None
    origin: Origin = "defaults"
    overridden: tuple[str, ...] = ()  # keys set on the command line
    signed: bool | None = None  # None: not known here (the plan says the matrix was verified)

    def value(self, key: str) -> Any:
        """A setting by its matrix key, as JSON data (``tests.kernels: none`` reads ``"none"``)."""
        row = setting_row(key)
        return row.type.to_json(typed_value(self, row))

    @property
    def kernels_requested(self) -> bool:
        return self.tests.kernels == "all" or bool(self.tests.kernels)

    def abi_policy_document(self) -> dict[str, Any]:
        """The ``abi:`` section in the shape ``xcompat abi diff --policy`` reads."""
        doc: dict[str, Any] = {"bumps": dict(self.abi.bumps), "baseline": self.abi.baseline}
        if self.abi.gating is not None:
            doc["gate"] = list(self.abi.gating)
        if self.abi.extension_exports is not None:
            doc["extension_exports"] = list(self.abi.extension_exports)
        return doc

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": SETTINGS_VERSION,
            "kind": "settings",
            "origin": self.origin,
            "matrix_sha256": self.matrix_sha256,
            "signed": self.signed,
            "overridden": list(self.overridden),
            "settings": {row.name: row.type.to_json(typed_value(self, row)) for row in setting_rows()},
        }

    def env_vars(self) -> list[tuple[str, str, str]]:
        """``(NAME, value, setting key)`` of each setting as a CI variable: ``XCOMPAT_TESTS_TIMEOUT``,
        ``120``, ``tests.timeout`` (lists and mappings JSON-encoded, so on one line)."""
        out = []
        for row in setting_rows():
            value = row.type.to_json(typed_value(self, row))
            text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
            out.append((row.env_name, text, row.name))
        out.append(("XCOMPAT_MATRIX_SHA256", self.matrix_sha256 or "", "matrix_sha256"))
        return out

    def to_env(self, *, source: str | Path | None = None) -> list[str]:
        """``NAME=value`` lines for ``$GITHUB_ENV`` or a GitLab dotenv report (``xcompat.envfile``).

        A value that spans lines (a ``gate.tag-pattern`` from a hand-made plan) is an
        ``InputError`` naming ``source`` and the key: written raw, its second line would be
        a variable of its own for every later step of the job."""
        from xcompat.envfile import assignment

        return [assignment(name, text, "dotenv", source=source, what=key).rstrip("\n")
                for name, text, key in self.env_vars()]
