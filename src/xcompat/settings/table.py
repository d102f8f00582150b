"""The settings table (``table.json``): every key of the ``tests``, ``abi``, ``coverage`` and
``gate`` sections once, with its type, default and meaning.

Everything else is derived from a row: the plan spelling (``settings.tests.pytest_args``), the
CI variable (``XCOMPAT_TESTS_PYTEST_ARGS``), the field of the section object (where the table
names no other), the defaults, ``schemas/settings.schema.json``, the settings parts of the
plan and matrix schemas and the key table of docs/matrix.md (``xcompat.settings.render``),
and what each reader accepts
(``xcompat.settings.formats``). Adding a key is one row, plus the code that applies it.

The table is read once and checked as it is read: a row the code cannot honour (an unknown
type, a default its type refuses, an override of a type the command line cannot give) is an
error naming the row, never a key that half works.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from xcompat.errors import UsageError
from xcompat.settings.mapping_types import make_type
from xcompat.settings.sections import SECTIONS
from xcompat.settings.value_types import ListOf, ValueType

TABLE_PATH = Path(__file__).with_name("table.json")
_NAME = re.compile(r"^(?P<section>[a-z]+)\.(?P<rest>[a-z][a-z0-9]*(-[a-z0-9]+)*)$")
_ROW_FIELDS = frozenset({"name", "type", "default", "doc", "unset", "attr", "override", "optional", "test_argv"})


class TableError(ValueError):
    """A row of the settings table the code cannot honour (a fault of the shipped table)."""


@dataclass(frozen=True, kw_only=True)
class SettingKey:
    """One row of the settings table."""

    name: str  # the matrix's dotted spelling: tests.pytest-args
    type: ValueType
    default: Any  # JSON data; None: unset
    doc: str  # the meaning, one line
    unset: str = ""  # what an unset (null) default means, in words
    attr: str  # the field of the section object
    override: bool = False  # a local run may set it on the command line
    optional: bool = False  # a settings.json written before the key existed may lack it
    test_argv: str | None = None  # "paths", an option of `xcompat test`, or "--"

    @property
    def section(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def leaf(self) -> str:
        """The key inside its section, as the matrix spells it: ``pytest-args``."""
        return self.name.split(".", 1)[1]

    @property
    def plan_name(self) -> str:
        """The key inside ``settings.<section>`` of a plan: ``pytest_args``."""
        return self.leaf.replace("-", "_")

    @property
    def env_name(self) -> str:
        """The CI variable ``matrix settings --format env`` prints: ``XCOMPAT_TESTS_PYTEST_ARGS``."""
        return "XCOMPAT_" + self.name.upper().replace(".", "_").replace("-", "_")


def parse_row(raw: Any) -> SettingKey:
    """One row of ``table.json``; ``TableError`` says what is wrong with it."""
    if not isinstance(raw, dict):
        raise TableError("a row is an object")
    params = {k: v for k, v in raw.items() if k not in _ROW_FIELDS}
    missing = sorted({"name", "type", "default", "doc"} - set(raw))
    if missing:
        raise TableError(f"missing {', '.join(missing)}")
    name = raw["name"]
    match = _NAME.match(name) if isinstance(name, str) else None
    if match is None or match["section"] not in SECTIONS:
        raise TableError(f"name {name!r}: expected <{'|'.join(SECTIONS)}>.<lower-case-words>")
    try:
        value_type = make_type(raw["type"], params)
    except ValueError as exc:
        raise TableError(f"{name}: {exc}") from None
    row = SettingKey(
        name=name, type=value_type, default=raw["default"], doc=raw["doc"], unset=raw.get("unset", ""),
        attr=raw.get("attr") or match["rest"].replace("-", "_"), override=raw.get("override", False),
        optional=raw.get("optional", False), test_argv=raw.get("test_argv"),
    )
    _check_row(row)
    return row


def _check_row(row: SettingKey) -> None:
    def fail(what: str) -> None:
        raise TableError(f"{row.name}: {what}")

    if not isinstance(row.doc, str) or not row.doc or "\n" in row.doc:
        fail("doc: expected one line")
    if row.default is None and not row.unset:
        fail("a null default needs unset: what an unset key means")
    if row.default is not None and not row.type.check(row.default):
        fail(f"default {row.default!r}: expected {row.type.what}")
    if not isinstance(row.override, bool) or not isinstance(row.optional, bool):
        fail("override and optional are true or false")
    if row.override and not row.type.command_line:
        fail(f"a {row.type.name} cannot be given on the command line")
    if not row.attr.isidentifier() or row.attr == "extra":
        fail(f"attr {row.attr!r}: expected a field name")
    if row.test_argv is not None:
        listed = row.test_argv in ("paths", "--")
        if listed != isinstance(row.type, ListOf) or not (listed or row.test_argv.startswith("--")):
            fail("test_argv: paths or -- for a list, an option (--name) for one value")


@cache
def load_table(path: Path = TABLE_PATH) -> tuple[SettingKey, ...]:
    """The rows of the settings table, in its order (the order of every output)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    rows = []
    for index, item in enumerate(raw["keys"]):
        try:
            rows.append(parse_row(item))
        except ValueError as exc:
            raise TableError(f"{path}: keys[{index}]: {exc}") from None
    names = [r.name for r in rows]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise TableError(f"{path}: listed twice: {', '.join(twice)}")
    return tuple(rows)


def setting_rows() -> tuple[SettingKey, ...]:
    return load_table()


def setting_keys() -> tuple[str, ...]:
    """The keys' names, in the table's order."""
    return tuple(row.name for row in setting_rows())


def section_names() -> tuple[str, ...]:
    """The sections the table's keys belong to, in its order: tests, abi, coverage, gate."""
    return tuple(dict.fromkeys(row.section for row in setting_rows()))


def defaults() -> Mapping[str, Any]:
    """The defaults, as JSON data, by key name (None: unset)."""
    return MappingProxyType({row.name: row.default for row in setting_rows()})


def setting_row(name: str) -> SettingKey:
    """The row of ``name``; ``UsageError`` with the nearest name for any other."""
    for row in setting_rows():
        if row.name == name:
            return row
    raise UsageError(f"unknown setting {name!r}", hint=did_you_mean(name))


def did_you_mean(name: str) -> str:
    import difflib

    near = difflib.get_close_matches(name, setting_keys(), n=1)
    return f"did you mean {near[0]!r}?" if near else "settings: " + ", ".join(setting_keys())


# -- the section objects ----------------------------------------------------------------


def _fields(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls)) - {"extra"}


def build_sections(values: Mapping[str, Any]) -> dict[str, Any]:
    """The section objects (``tests``, ``abi``, ``coverage``, ``gate``) holding ``values``: the
    typed value of every key, by name. A key without a field of its own goes to ``extra``."""
    typed: dict[str, dict[str, Any]] = {section: {} for section in SECTIONS}
    extra: dict[str, dict[str, Any]] = {section: {} for section in SECTIONS}
    for row in setting_rows():
        place = typed if row.attr in _fields(SECTIONS[row.section]) else extra
        place[row.section][row.attr] = values[row.name]
    return {section: cls(**typed[section], extra=MappingProxyType(extra[section]))
            for section, cls in SECTIONS.items()}


def typed_value(holder: Any, row: SettingKey) -> Any:
    """The typed value of ``row`` in ``holder``: anything with the section objects as attributes
    (a ``Matrix``, a ``Settings``)."""
    section = getattr(holder, row.section)
    if row.attr in section.extra:
        return section.extra[row.attr]
    return getattr(section, row.attr)


def typed_defaults() -> dict[str, Any]:
    """The typed value of every key's default, by name."""
    return {row.name: row.type.typed(row.default) for row in setting_rows()}
