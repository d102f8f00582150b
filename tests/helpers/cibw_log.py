"""Read back what cibuildwheel did from its own log (``OUT/logs/cibuildwheel-*.log``).

Two parts of the log are used:

* the ``Build options:`` block cibuildwheel prints before building: the options it resolved,
  as ``key: value`` lines, nested by indentation (two spaces a level);
* the commands it ran in the container, echoed as ``    + sh -c '...'`` / ``+ python -m build ...``.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

MAX_LOG_CHARS = 20_000_000


@dataclass(frozen=True)
class CibwLog:
    options: dict[str, Any]
    commands: tuple[tuple[str, ...], ...]

    def option(self, *path: str) -> Any:
        node: Any = self.options
        for key in path:
            if not isinstance(node, dict) or key not in node:
                raise KeyError(f"cibuildwheel's log has no build option {'.'.join(path)}")
            node = node[key]
        return node

    def shell_commands(self) -> list[str]:
        """The ``sh -c CMD`` commands it ran (before_*, repair, test), in order."""
        return [argv[2] for argv in self.commands if len(argv) >= 3 and argv[:2] == ("sh", "-c")]

    def ran(self, *prefix: str) -> list[tuple[str, ...]]:
        return [argv for argv in self.commands if argv[: len(prefix)] == prefix]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def parse_build_options(lines: list[str]) -> dict[str, Any]:
    """The ``Build options:`` block as nested dicts; a key with an empty value and deeper
    lines below is a table, otherwise its value is the text after ``: `` (continuation
    lines without a key are joined with newlines)."""
    try:
        start = next(i for i, line in enumerate(lines) if line.rstrip() == "Build options:")
    except StopIteration:
        raise ValueError("no 'Build options:' block in the log") from None
    root: dict[str, Any] = {}
    stack: list[tuple[int, dict[str, Any]]] = [(0, root)]
    last: tuple[dict[str, Any], str] | None = None
    for line in lines[start + 1:]:
        if not line.strip():
            break
        depth = _indent(line)
        if depth == 0:
            break
        text = line.strip()
        key, sep, value = text.partition(":")
        is_key = bool(sep) and key and " " not in key and (value == "" or value.startswith(" "))
        while stack and depth <= stack[-1][0] and len(stack) > 1:
            stack.pop()
        if not is_key:
            if last is None:
                raise ValueError(f"build options: a value without a key: {text!r}")
            table, name = last
            previous = table[name]
            table[name] = text if previous in ("", {}) else f"{previous}\n{text}"
            continue
        table = stack[-1][1]
        table[key] = value.strip()
        last = (table, key)
        if value.strip() == "":
            child: dict[str, Any] = {}
            table[key] = child
            stack.append((depth, child))
            last = (table, key)
    return _collapse(root)


def _collapse(node: Any) -> Any:
    if isinstance(node, dict):
        if not node:
            return ""
        return {k: _collapse(v) for k, v in node.items()}
    return node


def parse_commands(lines: list[str]) -> tuple[tuple[str, ...], ...]:
    commands = []
    for line in lines:
        text = line.strip()
        if not text.startswith("+ "):
            continue
        try:
            commands.append(tuple(shlex.split(text[2:])))
        except ValueError:
            continue  # an echoed command cut by the log: not one of ours
    return tuple(commands)


def read_cibw_log(text: str) -> CibwLog:
    if len(text) > MAX_LOG_CHARS:
        raise ValueError(f"cibuildwheel log larger than {MAX_LOG_CHARS} characters")
    lines = text.splitlines()
    return CibwLog(options=parse_build_options(lines), commands=parse_commands(lines))
