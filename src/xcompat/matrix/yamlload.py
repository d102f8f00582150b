"""Strict, safe YAML loading that remembers where every value came from.

PyYAML (like most YAML libraries) silently keeps the *last* of two equal keys in a
mapping, so ``serial: 7`` followed later by ``serial: 3`` reads as 3 and a reviewer who
saw the first line is misled. A signed file must read the same to a reviewer as to the
tool, so this loader refuses:

* duplicate keys in any mapping,
* anchors/aliases and merge keys (``<<``): they make one line mean several places, and
  aliases are the vector of "billion laughs" expansion,
* non-string keys (``3.10:`` or ``on:`` turn into a float and a boolean in YAML 1.1),
* more than one document, non-UTF-8 bytes, and any non-standard tag.

Only PyYAML's *safe* constructors are used (the C parser when libyaml is available). The
result keeps a map from each value's path (a tuple of keys and list indexes) to its
1-based line and column, so schema errors can point at the YAML line.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from xcompat.errors import InputError

Path = tuple[Any, ...]


@dataclass(frozen=True)
class Mark:
    line: int  # 1-based
    column: int  # 1-based


@dataclass(frozen=True)
class LoadedYaml:
    """A parsed YAML document plus the position of every value and key in it."""

    data: Any
    marks: dict[Path, Mark] = field(default_factory=dict)
    key_marks: dict[Path, Mark] = field(default_factory=dict)
    source: str | None = None

    def mark_for(self, path: Path, *, key: bool = False) -> Mark | None:
        """The position of the value at ``path`` (or of its key), else of the nearest parent."""
        table = self.key_marks if key else self.marks
        if path in table:
            return table[path]
        p = tuple(path)
        while p:
            p = p[:-1]
            if p in self.marks:
                return self.marks[p]
        return self.marks.get((), None)


_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
# Plain data only: no sets, ordered maps, binary or language-specific objects.
_SCALAR_TAGS = frozenset(
    "tag:yaml.org,2002:" + t for t in ("str", "int", "float", "bool", "null", "timestamp")
)


def _loader_class() -> Any:
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _mark(node: Any) -> Mark:
    return Mark(node.start_mark.line + 1, node.start_mark.column + 1)


def load_yaml(content: str | bytes, *, source: str | None = None) -> LoadedYaml:
    """Parse one YAML document strictly; raise ``InputError`` with file, line and column."""
    import yaml

    if isinstance(content, bytes):
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"not UTF-8 text (byte {exc.start}: {exc.reason})",
                file=source,
                hint="save the file as UTF-8",
            ) from None
    else:
        text = content
    text = text.removeprefix("\ufeff")
    loader = _loader_class()(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            problem = exc.problem or exc.context or "invalid YAML"
            if (
                "expected a single document" in str(exc.context or "")
                or "expected a single document" in problem
            ):
                problem = "more than one YAML document (---) in the file; a matrix is a single document"
            raise InputError(
                f"YAML syntax error: {problem}",
                file=source,
                line=mark.line + 1 if mark else None,
                column=mark.column + 1 if mark else None,
            ) from None
        except yaml.reader.ReaderError as exc:  # control characters: no mark, a character position
            pos = int(getattr(exc, "position", 0) or 0)
            line = text.count("\n", 0, pos) + 1
            column = pos - (text.rfind("\n", 0, pos) + 1) + 1
            char = getattr(exc, "character", "")
            shown = f"#x{char:04x}" if isinstance(char, int) else repr(char)
            raise InputError(
                f"YAML error: control character {shown} is not allowed",
                file=source,
                line=line,
                column=column,
            ) from None
        except yaml.YAMLError as exc:
            raise InputError("YAML error: " + " ".join(str(exc).split()), file=source) from None
        marks: dict[Path, Mark] = {}
        key_marks: dict[Path, Mark] = {}
        if root is None:
            return LoadedYaml(None, marks, key_marks, source)
        data = _Builder(loader, source, marks, key_marks).build(root, ())
        return LoadedYaml(data, marks, key_marks, source)
    finally:
        loader.dispose()


class _Builder:
    """Turn a composed node tree into plain Python data, checking it as it goes.

    Hand-written instead of ``yaml.safe_load`` because the constructor has no hook that
    sees duplicate keys and no record of positions; walking the node tree gives both in
    one pass at the same speed.
    """

    def __init__(self, loader: Any, source: str | None, marks: dict[Path, Mark], key_marks: dict[Path, Mark]):
        self.loader = loader
        self.source = source
        self.marks = marks
        self.key_marks = key_marks
        self.seen: set[int] = set()

    def fail(self, message: str, node: Any, hint: str | None = None) -> InputError:
        m = _mark(node)
        return InputError(message, file=self.source, line=m.line, column=m.column, hint=hint)

    def build(self, node: Any, path: Path) -> Any:
        import yaml

        if id(node) in self.seen:
            raise self.fail(
                "YAML anchors and aliases are not allowed in a matrix file",
                node,
                hint="write the value out in full so reviewers see what is signed",
            )
        self.seen.add(id(node))
        self.marks[path] = _mark(node)
        allowed = (
            _MAP_TAG
            if isinstance(node, yaml.MappingNode)
            else _SEQ_TAG
            if isinstance(node, yaml.SequenceNode)
            else None
        )
        if (allowed is not None and node.tag != allowed) or (
            allowed is None and node.tag not in _SCALAR_TAGS
        ):
            raise self.fail(
                f"YAML tag {node.tag!r} is not allowed in a matrix file",
                node,
                hint="only plain strings, numbers, booleans, dates, lists and mappings",
            )
        if isinstance(node, yaml.MappingNode):
            result: dict[str, Any] = {}
            first: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if key_node.tag == _MERGE_TAG:
                    raise self.fail("YAML merge keys (<<) are not allowed in a matrix file", key_node)
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != _STR_TAG:
                    shown = getattr(key_node, "value", "?")
                    raise self.fail(
                        f"mapping key {shown!r} is not a string",
                        key_node,
                        hint=f"quote it: '{shown}'" if isinstance(shown, str) else None,
                    )
                key = key_node.value
                if key in first:
                    prev = first[key]
                    raise self.fail(
                        f"duplicate key {key!r} (first defined at line {prev.start_mark.line + 1})",
                        key_node,
                        hint="YAML keeps only the last one; remove one of them",
                    )
                first[key] = key_node
                self.key_marks[path + (key,)] = _mark(key_node)
                result[key] = self.build(value_node, path + (key,))
            return result
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, path + (i,)) for i, item in enumerate(node.value)]
        try:
            value = self.loader.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError as exc:
            raise self.fail(f"YAML error: {exc.problem}", node) from None
        except ValueError as exc:  # e.g. a timestamp such as 2027-02-30 that is not a real date
            raise self.fail(f"{node.value!r} is not a valid value: {exc}", node) from None
        if isinstance(value, _dt.datetime):
            return value.isoformat()
        if isinstance(value, _dt.date):
            return value.isoformat()
        return value
