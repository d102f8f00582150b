"""The JSON Schemas the settings table generates: ``settings.json`` whole, the ``settings`` of
a plan (``$defs.settings`` of ``schemas/plan.schema.json``) and the four settings sections of
the matrix file (``tests``, ``abi``, ``coverage``, ``gate`` in ``schemas/matrix.schema.json``).

Every key's entry is its type's schema: the plan and ``settings.json`` hold what their readers
accept (``ValueType.schema``), the matrix file what its schema check accepts
(``ValueType.matrix_schema``: never null, names unique). The matrix file and ``settings.json``,
which people read and write, also carry the row's meaning (and the matrix its default).
"""

from __future__ import annotations

from typing import Any

from xcompat.settings.resolved import ORIGINS, SETTINGS_VERSION
from xcompat.settings.table import SettingKey, section_names, setting_rows

GENERATED = "Generated from src/xcompat/settings/table.json: python -m xcompat.settings.render --write"


def settings_schema() -> dict[str, Any]:
    """The JSON Schema of ``settings.json`` and ``xcompat matrix settings --format json``."""
    rows = setting_rows()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://xcompat.dev/schemas/settings.schema.json",
        "title": "xcompat resolved settings (settings.json, xcompat matrix settings --format json)",
        "$comment": GENERATED,
        "type": "object",
        "required": ["version", "kind", "origin", "matrix_sha256", "signed", "overridden", "settings"],
        "properties": {
            "version": {"const": SETTINGS_VERSION},
            "kind": {"const": "settings"},
            "origin": {"enum": list(ORIGINS)},
            "matrix_sha256": {"type": ["string", "null"], "pattern": "^[0-9a-f]{64}$"},
            "signed": {"type": ["boolean", "null"]},
            "overridden": {"type": "array", "items": {"type": "string"}},
            "settings": {
                "type": "object",
                "additionalProperties": False,
                "required": [row.name for row in rows if not row.optional],
                "properties": {row.name: {"description": row.doc, **row.type.schema()} for row in rows},
            },
            "project": {
                "type": ["object", "null"],
                "properties": {
                    "name": {"type": ["string", "null"]},
                    "uses_torch": {"type": ["boolean", "null"]},
                    "torch_evidence": {"type": "string"},
                },
            },
            "cell": {"type": "object"},
            "stages": {"type": "object"},
        },
    }


def _section_rows(section: str) -> list[SettingKey]:
    return [row for row in setting_rows() if row.section == section]


def plan_settings_schema() -> dict[str, Any]:
    """A plan's ``settings``: each section with its keys in the plan spelling (``pytest_args``)."""
    def section(rows: list[SettingKey]) -> dict[str, Any]:
        return {
            "type": "object",
            "additionalProperties": False,
            "required": [row.plan_name for row in rows if not row.optional],
            "properties": {row.plan_name: row.type.schema() for row in rows},
        }

    names = section_names()
    return {
        "type": "object",
        "additionalProperties": False,
        # a section of optional keys alone (added after plans were written) may be absent
        "required": [name for name in names if not all(row.optional for row in _section_rows(name))],
        "properties": {name: section(_section_rows(name)) for name in names},
    }


def _matrix_key(row: SettingKey) -> dict[str, Any]:
    if row.default is None:
        return {"description": f"{row.doc}; unset: {row.unset}", **row.type.matrix_schema()}
    return {"description": row.doc, **row.type.matrix_schema(), "default": row.default}


def matrix_section_schemas() -> dict[str, dict[str, Any]]:
    """The matrix file's settings sections, by name: each key optional (unset: its default)."""
    return {
        name: {
            "type": "object",
            "additionalProperties": False,
            "properties": {row.leaf: _matrix_key(row) for row in _section_rows(name)},
        }
        for name in section_names()
    }
