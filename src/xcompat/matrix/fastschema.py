"""A small yes/no JSON Schema checker for the keywords ``schemas/matrix.schema.json`` uses.

Why hand-written: importing ``jsonschema`` (with ``referencing``, ``attrs`` and the bundled
metaschemas) costs more than parsing, checking and expanding a matrix, and every CI job
runs ``matrix verify`` and ``matrix plan``. This checker only answers "valid or not";
when it says "not" (or meets a keyword it does not know) the caller runs ``jsonschema``
for the full, best-match explanation. It must never accept what ``jsonschema`` rejects:
``tests/unit/matrix/test_fastschema.py`` checks that on every example and on generated
documents.
"""

from __future__ import annotations

import datetime as _dt
import re
from functools import cache
from typing import Any

SUPPORTED = frozenset(
    {
        "$schema",
        "$id",
        "$defs",
        "title",
        "description",
        "default",
        "type",
        "enum",
        "const",
        "pattern",
        "format",
        "minLength",
        "properties",
        "additionalProperties",
        "required",
        "minProperties",
        "propertyNames",
        "items",
        "minItems",
        "uniqueItems",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "oneOf",
        "allOf",
        "$ref",
    }
)


class Unsupported(Exception):
    """The schema uses a keyword this checker does not implement."""


@cache
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _is_type(value: Any, name: str) -> bool:
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if isinstance(value, bool):
        return False
    if name == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, (int, float))
    raise Unsupported(f"type {name}")


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but True != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


class FastChecker:
    def __init__(self, schema: dict[str, Any]):
        self.root = schema

    def _resolve(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            raise Unsupported(f"$ref {ref}")
        node: Any = self.root
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def valid(self, value: Any, schema: Any = None) -> bool:
        schema = self.root if schema is None else schema
        if schema is True:
            return True
        if schema is False:
            return False
        unknown = set(schema) - SUPPORTED
        if unknown:
            raise Unsupported(", ".join(sorted(unknown)))
        if not self._valid_any(value, schema):
            return False
        if isinstance(value, str):
            return _valid_string(value, schema)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return _valid_number(value, schema)
        if isinstance(value, list):
            return self._valid_list(value, schema)
        if isinstance(value, dict):
            return self._valid_object(value, schema)
        return True

    def _valid_any(self, value: Any, schema: Any) -> bool:
        """The keywords that apply to a value of any type."""
        if "$ref" in schema and not self.valid(value, self._resolve(schema["$ref"])):
            return False
        if "type" in schema:
            types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            if not any(_is_type(value, t) for t in types):
                return False
        if "enum" in schema and not any(_equal(value, e) for e in schema["enum"]):
            return False
        if "const" in schema and not _equal(value, schema["const"]):
            return False
        if "allOf" in schema and not all(self.valid(value, s) for s in schema["allOf"]):
            return False
        return not ("oneOf" in schema and sum(1 for s in schema["oneOf"] if self.valid(value, s)) != 1)

    def _valid_list(self, value: list[Any], schema: Any) -> bool:
        if "minItems" in schema and len(value) < schema["minItems"]:
            return False
        if schema.get("uniqueItems"):
            for i, a in enumerate(value):
                if any(_equal(a, b) for b in value[i + 1 :]):
                    return False
        return not ("items" in schema and not all(self.valid(v, schema["items"]) for v in value))

    def _valid_object(self, value: dict[str, Any], schema: Any) -> bool:
        if "minProperties" in schema and len(value) < schema["minProperties"]:
            return False
        if any(k not in value for k in schema.get("required", ())):
            return False
        props = schema.get("properties", {})
        for k, v in value.items():
            if k in props:
                if not self.valid(v, props[k]):
                    return False
            elif "additionalProperties" in schema and not self.valid(v, schema["additionalProperties"]):
                return False
        return not ("propertyNames" in schema and not all(self.valid(k, schema["propertyNames"]) for k in value))


def _valid_string(value: str, schema: Any) -> bool:
    if "pattern" in schema and not _regex(schema["pattern"]).search(value):
        return False
    if "minLength" in schema and len(value) < schema["minLength"]:
        return False
    if schema.get("format") == "date":
        try:
            _dt.date.fromisoformat(value)
        except ValueError:
            return False
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            return False
    return True


def _valid_number(value: float, schema: Any) -> bool:
    if "minimum" in schema and value < schema["minimum"]:
        return False
    if "maximum" in schema and value > schema["maximum"]:
        return False
    return not ("exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"])
