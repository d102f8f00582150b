"""The settings in each format they travel in, read and written row by row of the settings table.

- the matrix file: ``tests: {pytest-args: [...]}`` (``sections_from_matrix``; the file is
  schema-checked before, so this only converts);
- the plan: ``settings.tests.pytest_args`` (``plan_settings`` writes it; ``settings_from_plan``
  reads it back, an absent key as its default, since a plan is also written by hand);
- ``settings.json``: ``{"tests.pytest-args": [...]}`` (``Settings.to_dict`` writes it;
  ``settings_from_document`` reads it back, every key required but the ``optional`` ones).

A bad value is an ``InputError`` of one line naming the file and the JSON path:
``plan.json: $.settings.tests.pytest_args: expected a list of strings, got '--deselect x'``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xcompat.errors import InputError
from xcompat.settings.resolved import ORIGINS, SETTINGS_VERSION, Settings
from xcompat.settings.table import build_sections, section_names, setting_keys, setting_rows, typed_value


def _expect(cond: bool, path: str, what: str, value: Any, source: str) -> None:
    if not cond:
        raise InputError(f"{path}: expected {what}, got {value!r}", file=source,
                         hint="write the plan with: xcompat matrix plan MATRIX --format json")


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def sections_from_matrix(document: Mapping[str, Any], derived: Mapping[str, Any]) -> dict[str, Any]:
    """The section objects of a schema-valid matrix document; ``derived``: the defaults that
    come from elsewhere in the matrix (``gate.required-backends``), by key name."""
    values = {}
    for row in setting_rows():
        part = document.get(row.section, {})
        raw = part[row.leaf] if row.leaf in part else derived.get(row.name, row.default)
        values[row.name] = row.type.typed(raw)
    return build_sections(values)


def plan_settings(holder: Any) -> dict[str, Any]:
    """``settings`` of a plan: ``{"tests": {"pytest_args": [...]}, ...}`` from a ``Matrix``
    or a ``Settings``."""
    out: dict[str, dict[str, Any]] = {section: {} for section in section_names()}
    for row in setting_rows():
        out[row.section][row.plan_name] = row.type.to_plan(typed_value(holder, row))
    return out


def settings_from_plan(document: Any, *, source: str = "<plan>") -> Settings:
    """The settings a plan carries (``xcompat matrix plan --format json``), checked field by field."""
    _expect(isinstance(document, dict), "$", "a plan object", type(document).__name__, source)
    raw = document.get("settings")
    _expect(isinstance(raw, dict), "$.settings", f"an object ({', '.join(section_names())})", raw, source)
    parts = {}
    for section in section_names():
        part = raw.get(section, {})
        _expect(isinstance(part, dict), f"$.settings.{section}", "an object", part, source)
        parts[section] = part
    values = {}
    for row in setting_rows():
        part = parts[row.section]
        value = part.get(row.plan_name, row.default)
        if row.plan_name in part:
            _expect(row.type.check(value), f"$.settings.{row.section}.{row.plan_name}", row.type.what, value,
                    source)
        values[row.name] = row.type.typed(value)
    sha = document.get("matrix_sha256")
    _expect(sha is None or isinstance(sha, str), "$.matrix_sha256", "a hex string", sha, source)
    return Settings(**build_sections(values), matrix_sha256=sha or None, origin="plan")


def settings_from_document(document: Any, *, source: str = "<settings>") -> Settings:
    """Read back ``Settings.to_dict()`` (a run's ``settings.json``), key by key."""
    _expect(isinstance(document, dict) and document.get("kind") == "settings", "$.kind", "a settings document",
            document if not isinstance(document, dict) else document.get("kind"), source)
    _expect(document.get("version") == SETTINGS_VERSION, "$.version", f"{SETTINGS_VERSION}",
            document.get("version"), source)
    values = document.get("settings")
    _expect(isinstance(values, dict), "$.settings", "an object", values, source)
    unknown = sorted(set(values) - set(setting_keys()))
    _expect(not unknown, "$.settings", "known keys only", unknown, source)
    # keys added after version 1 was written read their default when absent
    values = {**{row.name: row.default for row in setting_rows() if row.optional}, **values}
    missing = sorted(set(setting_keys()) - set(values))
    _expect(not missing, "$.settings", "every settings key", f"missing {', '.join(missing)}", source)
    for row in setting_rows():
        _expect(row.type.check(values[row.name]), f"$.settings.{row.name}", row.type.what, values[row.name], source)
    origin = document.get("origin")
    signed = document.get("signed")
    overridden = document.get("overridden") or []
    sha = document.get("matrix_sha256")
    _expect(origin in ORIGINS, "$.origin", "defaults, matrix or plan", origin, source)
    _expect(signed is None or isinstance(signed, bool), "$.signed", "true, false or null", signed, source)
    _expect(_strings(overridden), "$.overridden", "a list of keys", overridden, source)
    _expect(sha is None or isinstance(sha, str), "$.matrix_sha256", "a hex string or null", sha, source)
    typed = {row.name: row.type.typed(values[row.name]) for row in setting_rows()}
    return Settings(**build_sections(typed), matrix_sha256=sha or None, origin=origin, signed=signed,
                    overridden=tuple(overridden))
