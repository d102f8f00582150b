"""Fail when a module of src/ is longer than 400 lines or a function longer than 80.

Small modules with one job each, and functions that fit on a screen, are what keeps xcompat
readable; a longer one is allowed only where pyproject.toml says why, in
``[tool.xcompat-lint.size-exceptions]``: ``"src/xcompat/pkg/mod.py" = "reason"`` for a
module, ``"src/xcompat/pkg/mod.py:function" = "reason"`` for a function (methods by their
own name, nested functions too). An exception that no longer matches anything over the
limit is reported as well, so the list does not outlive what it excuses.

Usage: python tools/check_sizes.py [--root DIR]   (exit 0 clean, 1 findings, 2 bad config)
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10 has the backport only
    import tomli as tomllib

MODULE_LINES = 400
FUNCTION_LINES = 80


def module_lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def long_functions(tree: ast.AST) -> Iterator[tuple[str, int]]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > FUNCTION_LINES:
                yield node.name, length


def findings(root: Path) -> tuple[list[str], set[str]]:
    """The sizes over the limits under ``root``/src as (key, message) lines, and the keys seen."""
    problems: list[str] = []
    seen: set[str] = set()
    for path in sorted((root / "src").rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = module_lines(text)
        if lines > MODULE_LINES:
            seen.add(relative)
            problems.append(f"{relative}\tmodule of {lines} lines (limit {MODULE_LINES})")
        for name, length in long_functions(ast.parse(text, filename=relative)):
            key = f"{relative}:{name}"
            seen.add(key)
            problems.append(f"{key}\tfunction of {length} lines (limit {FUNCTION_LINES})")
    return problems, seen


def exceptions(root: Path) -> dict[str, str]:
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    table = data.get("tool", {}).get("xcompat-lint", {}).get("size-exceptions", {})
    if not isinstance(table, dict) or not all(isinstance(v, str) and v.strip() for v in table.values()):
        raise ValueError("[tool.xcompat-lint.size-exceptions] maps each path or path:function to its reason")
    return table


def check(root: Path) -> list[str]:
    """Every finding not excused, and every excuse that matches nothing; empty when clean."""
    allowed = exceptions(root)
    problems, seen = findings(root)
    report = [line.replace("\t", ": ") for line in problems if line.split("\t")[0] not in allowed]
    report += [f"{key}: listed in size-exceptions but within the limits (remove it)"
               for key in sorted(set(allowed) - seen)]
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the repository (holds src/ and pyproject.toml)")
    args = parser.parse_args(argv)
    try:
        report = check(args.root)
    except (OSError, ValueError, SyntaxError) as exc:
        print(f"check_sizes: {exc}", file=sys.stderr)
        return 2
    for line in report:
        print(line)
    if report:
        print(f"check_sizes: {len(report)} problem(s); split by responsibility, or list the reason in "
              "pyproject.toml [tool.xcompat-lint.size-exceptions]", file=sys.stderr)
    return 1 if report else 0


if __name__ == "__main__":
    sys.exit(main())
