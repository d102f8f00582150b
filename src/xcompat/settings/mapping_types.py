"""Value types of the settings table that map a closed set of names to a value each, beside
those of ``value_types.py``; :func:`make_type` knows both.

``isa floors`` (``abi.isa-floors``): architecture -> the ISA level its wheels promise. Which
levels an architecture has is checked where the floor is applied (``xcompat abi isa``, an
emulated lane), against the tables there, each naming the levels it knows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

from xcompat.settings import value_types
from xcompat.settings.value_types import ValueType


@dataclass(frozen=True)
class IsaFloors(ValueType):
    """A mapping of architecture (one of ``values``) to an ISA level; typed: a read-only mapping."""

    name: ClassVar[str] = "isa floors"
    params: ClassVar[frozenset[str]] = frozenset({"values"})
    LEVEL: ClassVar[str] = "^[a-z0-9][a-z0-9.+_-]*$"

    values: tuple[str, ...] = ()

    def _check(self, value: Any) -> bool:
        return isinstance(value, dict) and all(
            k in self.values and isinstance(v, str) and re.match(self.LEVEL, v) is not None for k, v in value.items())

    @property
    def what(self) -> str:
        return f"a mapping of architecture ({', '.join(self.values)}) to an ISA level"

    def _typed(self, value: Any) -> Any:
        return MappingProxyType(dict(value))

    def to_json(self, value: Any) -> Any:
        return dict(value)

    def schema(self) -> dict[str, Any]:
        return {"type": "object", "propertyNames": {"enum": list(self.values)},
                "additionalProperties": {"type": "string", "pattern": self.LEVEL}}

    def docs(self) -> str:
        return "`{arch: level}`"


TYPES: Mapping[str, type[ValueType]] = MappingProxyType({**value_types.TYPES, IsaFloors.name: IsaFloors})


def make_type(name: str, params: Mapping[str, Any]) -> ValueType:
    """The type ``name`` (of either module) with a table row's parameters."""
    return value_types.make_type(name, params, TYPES)
