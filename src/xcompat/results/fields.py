"""Reading a stage result's fields by name, with the JSON path of any field of the wrong type.

A field that is present with the wrong type is an ``InputError`` naming its path and the
result's file; an absent optional field takes its empty value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xcompat.errors import InputError
from xcompat.results.stage_result import StageResult


def wrong_type(result: StageResult, path: str, expected: str, value: Any) -> InputError:
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return InputError(f"{path}: expected {expected}, got {shown}", file=result.source)


def field_list(result: StageResult, doc: Mapping[str, Any], key: str, path: str) -> list[Any]:
    value = doc.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise wrong_type(result, f"{path}.{key}", "a list", value)
    return value


def field_obj(result: StageResult, value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise wrong_type(result, path, "an object", value)
    return value


def field_str(result: StageResult, doc: Mapping[str, Any], key: str, path: str, default: str = "") -> str:
    value = doc.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise wrong_type(result, f"{path}.{key}", "a string", value)
    return value


def field_num(result: StageResult, doc: Mapping[str, Any], key: str, path: str) -> float | None:
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise wrong_type(result, f"{path}.{key}", "a number", value)
    return float(value)


def field_int(result: StageResult, doc: Mapping[str, Any], key: str, path: str) -> int | None:
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise wrong_type(result, f"{path}.{key}", "an integer", value)
    return value
