"""Find and load stage results (the common envelope) from files and folders.

A result is any JSON object with ``"version": 1`` and a string ``"kind"``. Folders are
searched recursively (downloaded CI artifacts nest one folder per cell). JSON files
in a folder that are not stage results (a coverage.py ``coverage.json``, a plan) are
skipped and listed in the report's notes; a file named explicitly must be a result.
Malformed JSON is an input error naming the file, line and column.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xcompat.errors import InputError
from xcompat.jsonio import read_json
from xcompat.report.model import StageResult

ENVELOPE_STATUSES = ("passed", "failed", "crashed", "skipped", "fallback")
# Folders never searched: they hold tools' state, not results.
_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv"}


@dataclass(frozen=True, kw_only=True)
class LoadedResults:
    results: tuple[StageResult, ...]
    skipped_files: tuple[str, ...]
    plan: dict[str, Any] | None = None
    plan_source: str | None = None


def is_plan(document: Any) -> bool:
    return isinstance(document, dict) and isinstance(document.get("cells"), list) and document.get("kind") in (None, "plan")


def parse_result(document: Any, source: str) -> StageResult:
    """Read the common envelope; unknown kinds and extra fields are kept, never rejected."""
    if not isinstance(document, dict):
        raise InputError("expected a JSON object (a stage result)", file=source)
    version = document.get("version")
    if version != 1:
        raise InputError(
            f"unsupported result version {version!r}",
            file=source,
            hint="this xcompat reads version 1 results; upgrade xcompat or regenerate the file",
        )
    kind = document.get("kind")
    if not isinstance(kind, str) or not kind:
        raise InputError('"kind" must be a non-empty string', file=source)
    cell_id = document.get("cell_id")
    if cell_id is not None and not isinstance(cell_id, str):
        raise InputError('"cell_id" must be a string or null', file=source)
    status = document.get("status")
    if not isinstance(status, str):
        raise InputError('"status" must be a string', file=source, hint="one of " + ", ".join(ENVELOPE_STATUSES))
    summary = document.get("summary", "")
    if not isinstance(summary, str):
        summary = str(summary)
    return StageResult(
        kind=kind,
        cell_id=cell_id,
        status=status,
        summary=" ".join(summary.split()),
        source=source,
        data=document,
    )


def _looks_like_result(document: Any) -> bool:
    return isinstance(document, dict) and document.get("version") == 1 and isinstance(document.get("kind"), str)


def _iter_json_files(folder: Path) -> Iterable[Path]:
    for path in sorted(folder.rglob("*.json")):
        if any(part in _SKIP_DIRS for part in path.relative_to(folder).parts[:-1]):
            continue
        if path.is_file():
            yield path


def load_results(paths: Iterable[str | Path], *, plan_path: str | Path | None = None) -> LoadedResults:
    """Load every result under ``paths``; a ``plan.json`` found among them is used as the plan."""
    results: list[StageResult] = []
    skipped: list[str] = []
    plan: dict[str, Any] | None = None
    plan_source: str | None = None
    if plan_path is not None:
        plan = load_plan(plan_path)
        plan_source = str(plan_path)
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for file in _iter_json_files(path):
                resolved = file.resolve()
                if resolved in seen or (plan_path is not None and resolved == Path(plan_path).resolve()):
                    continue
                seen.add(resolved)
                document = read_json(file)
                if is_plan(document):
                    if plan is None:
                        plan = _check_plan(document, str(file))
                        plan_source = str(file)
                elif _looks_like_result(document):
                    results.append(parse_result(document, str(file)))
                else:
                    skipped.append(str(file))
        elif path.is_file():
            resolved = path.resolve()
            if resolved in seen:
                continue
            seen.add(resolved)
            document = read_json(path)
            if is_plan(document) and plan is None:
                plan = _check_plan(document, str(path))
                plan_source = str(path)
            else:
                results.append(parse_result(document, str(path)))
        else:
            raise InputError("no such file or folder", file=path, hint="pass result files or the folder holding them")
    return LoadedResults(results=tuple(results), skipped_files=tuple(skipped), plan=plan, plan_source=plan_source)


def _check_plan(document: Any, source: str) -> dict[str, Any]:
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise InputError('a plan must be an object with a "cells" list', file=source)
    for index, cell in enumerate(document["cells"]):
        if not isinstance(cell, dict) or not isinstance(cell.get("id"), str):
            raise InputError(f'$.cells[{index}]: each cell needs a string "id"', file=source)
        for key in ("python", "platform", "arch", "backend"):
            if key in cell and not isinstance(cell[key], (str, int, float)):
                raise InputError(f"$.cells[{index}].{key}: expected a string", file=source)
    return document


def load_plan(path: str | Path) -> dict[str, Any]:
    return _check_plan(read_json(path), str(path))
