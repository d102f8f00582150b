"""A problem of the report and the styled texts it is told in.

Texts are ``Rich`` tuples of (style, text) segments, style "" (prose), "code" or "b"
(bold), so each renderer escapes and marks them up its own way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

Rich = tuple[tuple[str, str], ...]
# One segment as the helpers take it: plain prose, or a (style, text) pair.
Part = str | tuple[str, str]
# Cells a problem line names before "and N more".
MAX_CELLS_NAMED = 3


def rich(*parts: Part) -> Rich:
    return tuple(p if isinstance(p, tuple) else ("", p) for p in parts if p)


def code(text: str) -> tuple[str, str]:
    return ("code", text)


def bold(text: str) -> tuple[str, str]:
    return ("b", text)


def plain(text: Rich) -> str:
    return "".join(f"`{t}`" if style == "code" else t for style, t in text)


@dataclass(frozen=True, kw_only=True)
class Problem:
    status: str  # the symbol's status: crashed, failed, missing, fallback, skipped, warning
    title: Rich
    fix: Rich = ()
    cells: tuple[str, ...] = ()
    gating: bool = True  # False: optional cells, warnings; shown dimmer, never red
    section: str = "failures"  # where the details are: failures, abi, coverage, cells


def cells_phrase(ids: Sequence[str]) -> tuple[tuple[str, str], ...]:
    ids = sorted(set(ids))
    if not ids:
        return ()
    if len(ids) == 1:
        return (("", " in "), code(ids[0]))
    named: list[tuple[str, str]] = [("", f" in {len(ids)} cells: ")]
    for i, cid in enumerate(ids[:MAX_CELLS_NAMED]):
        named += [("", ", ") if i else ("", ""), code(cid)]
    if len(ids) > MAX_CELLS_NAMED:
        named.append(("", f" and {len(ids) - MAX_CELLS_NAMED} more"))
    return tuple(p for p in named if p[1])


def first_line(text: str, limit: int = 200) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"
