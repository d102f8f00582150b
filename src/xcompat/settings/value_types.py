"""The value types of the settings table (``type`` in ``table.json``).

A setting has two forms: JSON data (the matrix file, the plan, ``settings.json``, the CI
variables) and the typed value the section objects hold (a tuple for a list, a float for
seconds, a read-only mapping for bumps). A type says, for the JSON form, what it accepts
(``check``) and in what words (``what``: messages read "expected <what>, got ..."); how it
becomes the typed value and back; its JSON Schema (``schema``: the plan and ``settings.json``;
``matrix_schema``: the matrix file, which the schema alone checks); its words in docs/matrix.md; and, for
the keys a local run may override, how a command-line value is checked (``from_command_line``).

Parameters come from the table row: ``of`` (what a list holds, in words), ``values`` (the
closed set of an enum, of a list's items, of a bump) and ``null`` (the key may be unset).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, ClassVar

from xcompat.errors import UsageError

# Parts of the matrix schema the generated sections name (schemas/matrix.schema.json).
KERNEL_NAME = "^[a-z][a-z0-9_]*$"
FINDING_KIND = "#/$defs/findingKind"
ONE_LINE = "^(?![\\s\\S]*[\\n\\r\\u0000])"

# What a list holds (``of``), as the matrix file's schema checks it: the item, and whether the
# list is a set of names (each once) rather than arguments in order.
LIST_ITEMS: Mapping[str, tuple[Mapping[str, Any], bool]] = MappingProxyType({
    "strings": (MappingProxyType({"type": "string"}), False),
    "paths": (MappingProxyType({"type": "string", "minLength": 1}), False),
    "glob patterns": (MappingProxyType({"type": "string", "minLength": 1}), True),
    "finding kinds": (MappingProxyType({"$ref": FINDING_KIND}), True),
    "backends": (MappingProxyType({"type": "string"}), True),
})


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _either(values: tuple[str, ...]) -> str:
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " or " + values[-1]


@dataclass(frozen=True)
class ValueType:
    """The behaviour every type shares; a subclass overrides what differs."""

    name: ClassVar[str]
    params: ClassVar[frozenset[str]] = frozenset()  # the row fields this type reads
    command_line: ClassVar[bool] = False  # a local run may override a key of this type

    null: bool = False

    def check(self, value: Any) -> bool:
        """Whether JSON ``value`` (from a plan or a settings document) is one of this type."""
        return (self.null and value is None) or self._check(value)

    def _check(self, value: Any) -> bool:
        raise NotImplementedError

    @property
    def what(self) -> str:
        raise NotImplementedError

    def typed(self, value: Any) -> Any:
        """The typed value of JSON ``value`` (already checked, or a default)."""
        return None if value is None else self._typed(value)

    def _typed(self, value: Any) -> Any:
        return value

    def to_json(self, value: Any) -> Any:
        """The JSON form of a typed value (``settings.json``, ``Settings.value``, the CI variables)."""
        return value

    def to_plan(self, value: Any) -> Any:
        """The JSON form in a plan's ``settings``; the same as ``to_json`` unless a type says otherwise."""
        return self.to_json(value)

    def schema(self) -> dict[str, Any]:
        raise NotImplementedError

    def matrix_schema(self) -> dict[str, Any]:
        """The JSON Schema of the matrix file's form: never null (an unset key is left out).
        A type whose matrix form is stricter than what a plan may hold says so."""
        return replace(self, null=False).schema()

    def docs(self) -> str:
        """The type column of docs/matrix.md."""
        raise NotImplementedError

    def from_command_line(self, value: Any, where: str) -> Any:
        """The typed value of a command-line override (only for a type with ``command_line``)."""
        raise NotImplementedError

    def argv(self, value: Any) -> str:
        """The typed value as one argument of ``xcompat test``."""
        return str(value)


@dataclass(frozen=True)
class Kernels(ValueType):
    """``all``, ``none`` or kernel names; typed: ``"all"`` or a tuple (``none`` is empty)."""

    name: ClassVar[str] = "kernels"
    command_line: ClassVar[bool] = True

    def _check(self, value: Any) -> bool:
        return value in ("all", "none") or _strings(value)

    @property
    def what(self) -> str:
        return "all, none or kernel names"

    def _typed(self, value: Any) -> Any:
        return "all" if value == "all" else () if value == "none" else tuple(value)

    def to_json(self, value: Any) -> Any:
        return value if value == "all" else ("none" if not value else list(value))

    def to_plan(self, value: Any) -> Any:
        # A plan has always written no kernels as an empty list; its readers take both.
        return value if value == "all" else list(value)

    def schema(self) -> dict[str, Any]:
        return {"oneOf": [{"enum": ["all", "none"]}, {"type": "array", "items": {"type": "string"}}]}

    def matrix_schema(self) -> dict[str, Any]:
        names = {"type": "string", "pattern": KERNEL_NAME}
        return {"oneOf": [{"enum": ["all", "none"]}, {"type": "array", "uniqueItems": True, "items": names}]}

    def docs(self) -> str:
        return "`all`, `none` or kernel names"

    def from_command_line(self, value: Any, where: str) -> Any:
        if value in ("all", "none"):
            return self._typed(value)
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{where}: expected all, none or a list of kernel names")
        return tuple(value)


@dataclass(frozen=True)
class ListOf(ValueType):
    """A list of strings (``of`` says what they are; ``values``, when given, the ones allowed);
    typed: a tuple. Unset and not ``null``: empty (a list that has no default of its own)."""

    name: ClassVar[str] = "list"
    params: ClassVar[frozenset[str]] = frozenset({"of", "values", "null"})
    command_line: ClassVar[bool] = True

    of: str = "strings"
    values: tuple[str, ...] | None = None

    def _check(self, value: Any) -> bool:
        return _strings(value) and (self.values is None or all(v in self.values for v in value))

    @property
    def what(self) -> str:
        return f"null or {self.of}" if self.null else f"a list of {self.of}"

    def typed(self, value: Any) -> Any:
        if value is None:
            return None if self.null else ()
        return tuple(value)

    def to_json(self, value: Any) -> Any:
        return None if value is None else list(value)

    def schema(self) -> dict[str, Any]:
        items: dict[str, Any] = {"enum": list(self.values)} if self.values else {"type": "string"}
        return {"type": ["array", "null"] if self.null else "array", "items": items}

    def matrix_schema(self) -> dict[str, Any]:
        items, unique = LIST_ITEMS[self.of]
        if self.values:
            items = {"enum": list(self.values)}
        return {"type": "array", **({"uniqueItems": True} if unique else {}), "items": dict(items)}

    def docs(self) -> str:
        return f"list of {self.of}"

    def from_command_line(self, value: Any, where: str) -> Any:
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{where}: expected a list of strings")
        return tuple(value)


@dataclass(frozen=True)
class OneOf(ValueType):
    """One string of ``values``."""

    name: ClassVar[str] = "enum"
    params: ClassVar[frozenset[str]] = frozenset({"values"})
    command_line: ClassVar[bool] = True

    values: tuple[str, ...] = ()

    def _check(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.values

    @property
    def what(self) -> str:
        return _either(self.values)

    def schema(self) -> dict[str, Any]:
        return {"enum": list(self.values)}

    def docs(self) -> str:
        return ", ".join(f"`{v}`" for v in self.values)

    def from_command_line(self, value: Any, where: str) -> Any:
        if not isinstance(value, str) or value not in self.values:
            raise UsageError(f"{where}: expected one of {', '.join(self.values)}, got {value!r}")
        return value


@dataclass(frozen=True)
class Flag(ValueType):
    name: ClassVar[str] = "bool"

    def _check(self, value: Any) -> bool:
        return isinstance(value, bool)

    @property
    def what(self) -> str:
        return "true or false"

    def _typed(self, value: Any) -> Any:
        return bool(value)

    def schema(self) -> dict[str, Any]:
        return {"type": "boolean"}

    def docs(self) -> str:
        return "`true`, `false`"


@dataclass(frozen=True)
class Seconds(ValueType):
    """A number of seconds, 0 or more; typed: a float."""

    name: ClassVar[str] = "seconds"
    command_line: ClassVar[bool] = True

    def _check(self, value: Any) -> bool:
        return _number(value) and value >= 0

    @property
    def what(self) -> str:
        return "seconds"

    def _typed(self, value: Any) -> Any:
        return float(value)

    def schema(self) -> dict[str, Any]:
        return {"type": "number", "minimum": 0}

    def matrix_schema(self) -> dict[str, Any]:
        return {"type": "number", "exclusiveMinimum": 0}

    def docs(self) -> str:
        return "seconds"

    def from_command_line(self, value: Any, where: str) -> Any:
        if not _number(value) or value < 0:
            raise UsageError(f"{where}: expected seconds (0 or more), got {value!r}")
        return float(value)

    def argv(self, value: Any) -> str:
        return f"{value:g}"


@dataclass(frozen=True)
class Percent(ValueType):
    """A percentage, 0 to 100; typed: a float."""

    name: ClassVar[str] = "percent"
    params: ClassVar[frozenset[str]] = frozenset({"null"})

    def _check(self, value: Any) -> bool:
        return _number(value) and 0 <= value <= 100

    @property
    def what(self) -> str:
        return "a percentage or null" if self.null else "a percentage"

    def _typed(self, value: Any) -> Any:
        return float(value)

    def schema(self) -> dict[str, Any]:
        return {"type": ["number", "null"] if self.null else "number", "minimum": 0, "maximum": 100}

    def docs(self) -> str:
        return "percent 0–100"


@dataclass(frozen=True)
class OneLineGlob(ValueType):
    """A shell-style pattern on one line: such a value is also a CI variable, and a line break
    would start another variable for every later step of the job."""

    name: ClassVar[str] = "glob"

    def _check(self, value: Any) -> bool:
        return isinstance(value, str) and not any(c in value for c in "\n\r\0")

    @property
    def what(self) -> str:
        return "a one-line glob"

    def schema(self) -> dict[str, Any]:
        return {"type": "string", "pattern": ONE_LINE}

    def matrix_schema(self) -> dict[str, Any]:
        return {"type": "string", "minLength": 1, "pattern": ONE_LINE}

    def docs(self) -> str:
        return "glob, on one line"


@dataclass(frozen=True)
class Bumps(ValueType):
    """A mapping of finding kind to one of ``values``; typed: a read-only mapping."""

    name: ClassVar[str] = "bumps"
    params: ClassVar[frozenset[str]] = frozenset({"values"})

    values: tuple[str, ...] = ()

    def _check(self, value: Any) -> bool:
        return isinstance(value, dict) and all(isinstance(k, str) and b in self.values for k, b in value.items())

    @property
    def what(self) -> str:
        return "a mapping of finding kind to bump"

    def _typed(self, value: Any) -> Any:
        return MappingProxyType(dict(value))

    def to_json(self, value: Any) -> Any:
        return dict(value)

    def schema(self) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": {"enum": list(self.values)}}

    def matrix_schema(self) -> dict[str, Any]:
        return {"type": "object", "propertyNames": {"$ref": FINDING_KIND},
                "additionalProperties": {"enum": list(self.values)}}

    def docs(self) -> str:
        return "`{kind: " + "|".join(self.values) + "}`"


TYPES: Mapping[str, type[ValueType]] = MappingProxyType(
    {cls.name: cls for cls in (Kernels, ListOf, OneOf, Flag, Seconds, Percent, OneLineGlob, Bumps)}
)


def make_type(name: str, params: Mapping[str, Any], types: Mapping[str, type[ValueType]] = TYPES) -> ValueType:
    """The type ``name`` (of ``types``) with a table row's parameters; ``ValueError`` names what is wrong."""
    cls = types.get(name)
    if cls is None:
        raise ValueError(f"unknown type {name!r} (types: {', '.join(types)})")
    unknown = sorted(set(params) - cls.params)
    if unknown:
        raise ValueError(f"type {name} takes no {', '.join(unknown)}")
    kwargs = dict(params)
    if "values" in kwargs:
        values = kwargs["values"]
        if not _strings(values) or not values:
            raise ValueError("values: expected a non-empty list of strings")
        kwargs["values"] = tuple(values)
    elif "values" in cls.params and name != "list":
        raise ValueError(f"type {name} needs values")
    if "null" in kwargs and not isinstance(kwargs["null"], bool):
        raise ValueError("null: expected true or false")
    if "of" in kwargs and kwargs["of"] not in LIST_ITEMS:
        raise ValueError(f"of: expected what the list holds, one of: {', '.join(LIST_ITEMS)}")
    return cls(**kwargs)
