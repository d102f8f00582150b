"""Find and read stage results in files and folders (a run's output, downloaded artifacts).

Folders are searched recursively; hidden folders and tool state (``.git``,
``node_modules``, ``__pycache__``) are not entered. In a folder, a JSON file that is not
a stage result (a run's own ``report.json``, ``verify.json``, ``run.json``, a coverage.py
``coverage.json``) is skipped and listed, so the report can say so; a ``plan.json`` is
taken as the plan and a run's ``settings.json`` as its resolved settings. A file named
explicitly must be a result (or the plan): one that does not parse, or whose fields do not
check (``parse_envelope``), is an input error naming the file, the line and column or the
JSON path, and what to do.

In a folder (a run's output, downloaded artifacts, a report bundle) one bad result must not
silence the others: a result file that does not read, parse or check is *refused*. It is
replaced by a failed result saying ``result refused: FILE: why``, for the cell it names (when
that much of it is readable) or the cell whose folder it lies in (``judge``), so the refusal
is red where the result would have counted, and everything else is still reported. A
truncated result never reads as "no result".
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xcompat.errors import InputError
from xcompat.limits import LIMITS, MiB
from xcompat.model import cell_id_problem
from xcompat.results.envelope import (
    KIND_PATTERN,
    NOT_RESULTS,
    RESULT_HINT,
    RESULT_VERSION,
    StageResult,
    looks_like_result,
    parse_envelope,
)

# A stage result is small; a bigger JSON file in a results folder is not one and is not read.
MAX_RESULT_BYTES = LIMITS.json_bytes
_SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv"})


@dataclass(frozen=True, kw_only=True)
class LoadedResults:
    results: tuple[StageResult, ...]  # as written, one per file
    skipped_files: tuple[str, ...]  # JSON files in the folders that are not stage results
    plan: dict[str, Any] | None = None
    plan_source: str | None = None
    settings: dict[str, Any] | None = None  # a run's settings.json
    settings_source: str | None = None


def is_plan(document: Any) -> bool:
    return (isinstance(document, dict) and isinstance(document.get("cells"), list)
            and document.get("kind") in (None, "plan") and "status" not in document)


def is_own_output(document: Any) -> bool:
    """A document xcompat writes that is not a stage result: a run's summary (run.json), a
    report, a badge, ``matrix verify``'s record. A results folder holds them; they are passed
    over without a note, which is kept for JSON files xcompat did not write."""
    if not isinstance(document, dict):
        return False
    kind = document.get("kind")
    return (
        (isinstance(kind, str) and kind in NOT_RESULTS)
        or {"verified", "sha256"} <= document.keys()  # schemas/verify.schema.json
        or ({"project", "matrix", "stages"} <= document.keys() and isinstance(document["stages"], list))  # run
        or "schemaVersion" in document  # badge (the shields.io endpoint format)
    )


def is_settings(document: Any) -> bool:
    return isinstance(document, dict) and document.get("kind") == "settings"


def check_plan(document: Any, source: str) -> dict[str, Any]:
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise InputError('a plan must be an object with a "cells" list', file=source,
                         hint="write it with: xcompat matrix plan MATRIX --format json")
    seen: set[str] = set()
    for index, cell in enumerate(document["cells"]):
        if not isinstance(cell, dict) or not isinstance(cell.get("id"), str) or not cell["id"]:
            raise InputError(f'$.cells[{index}]: each cell needs a string "id"', file=source)
        problem = cell_id_problem(cell["id"])
        if problem:
            raise InputError(f"$.cells[{index}].id: {problem}", file=source,
                             hint="use the plan that `xcompat matrix plan` wrote")
        if cell["id"] in seen:
            raise InputError(f"$.cells[{index}]: cell id {cell['id']!r} appears twice", file=source)
        seen.add(cell["id"])
        for key in ("python", "platform", "arch", "backend"):
            if key in cell and not isinstance(cell[key], str):
                raise InputError(f"$.cells[{index}].{key}: expected a string", file=source)
        if "required" in cell and not isinstance(cell["required"], bool):
            raise InputError(f"$.cells[{index}].required: must be true or false, got {cell['required']!r}",
                             file=source)
    elsewhere = document.get("not_run_here", [])
    if not isinstance(elsewhere, list):
        raise InputError('$.not_run_here: expected a list of {"id", "required", "why"}', file=source)
    for index, cell in enumerate(elsewhere):
        where = f"$.not_run_here[{index}]"
        if not isinstance(cell, dict) or not isinstance(cell.get("id"), str):
            raise InputError(f'{where}: each cell needs a string "id"', file=source)
        problem = cell_id_problem(cell["id"])
        if problem:
            raise InputError(f"{where}.id: {problem}", file=source)
        if cell["id"] in seen:
            raise InputError(f"{where}: cell {cell['id']!r} is also a cell of the plan", file=source)
        if not isinstance(cell.get("required"), bool) or not isinstance(cell.get("why"), str):
            raise InputError(f'{where}: needs "required" (true or false) and "why" (a string)', file=source)
    return document


def load_plan(path: str | Path) -> dict[str, Any]:
    from xcompat.jsonio import read_json

    return check_plan(read_json(path), str(path))


def json_files(folder: Path) -> Iterator[Path]:
    for top, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
        for name in sorted(files):
            if name.endswith(".json") and not name.startswith("."):
                yield Path(top, name)


def _read(path: Path) -> Any:
    from xcompat.jsonio import read_json

    return read_json(path)


def _explicit(err: InputError) -> InputError:
    """A file named on the command line: its error, with what to do about it."""
    if err.hint:
        return err
    return InputError(err.message, file=err.file, line=err.line, column=err.column, hint=RESULT_HINT)


# A refusal is shown in a table cell and a log line: its reason is kept short.
_REFUSAL_CHARS = 300


def refused_result(source: str, err: InputError, document: Any = None) -> StageResult:
    """The failed result that stands in for a refused file: its kind and cell when the document
    says them in a form that checks, else ``result`` and no cell (``judge`` then gives it to the
    cell whose folder it lies in)."""
    raw = document if isinstance(document, dict) else {}
    kind = raw.get("kind")
    if not isinstance(kind, str) or not KIND_PATTERN.fullmatch(kind) or kind in NOT_RESULTS:
        kind = "result"
    cell = raw.get("cell_id")
    if not isinstance(cell, str) or cell_id_problem(cell):
        cell = None
    why = " ".join(err.message.split())
    if len(why) > _REFUSAL_CHARS:
        why = why[: _REFUSAL_CHARS - 3] + "..."
    refusal = f"{err.location() or source}: {why}"
    summary = f"result refused: {refusal}"
    # data is a well-formed failed result itself: a report bundle written from these results
    # and read again (the workflow_run stage) still has the refusal, red, for the same cell.
    data = {"version": RESULT_VERSION, "kind": kind, "cell_id": cell, "status": "failed", "summary": summary}
    return StageResult(kind=kind, cell_id=cell, status="failed", summary=summary, source=source, data=data,
                       refused=refusal)


def load_results(paths: Iterable[str | Path], *, plan_path: str | Path | None = None,
                 relative_to: Path | None = None) -> LoadedResults:
    """Every stage result under ``paths``; a plan and a run's settings found among them are kept.

    ``relative_to``: files found under that folder are named relative to it (a run names its
    results inside its output folder, whose staging name is gone once the run is in place)."""
    loader = _Loader(relative_to)
    if plan_path is not None:
        loader.plan = load_plan(plan_path)
        loader.plan_source = str(plan_path)
        loader.seen.add(Path(plan_path).resolve())
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for file in json_files(path):
                loader.found_file(path, file)
        elif path.is_file():
            loader.named_file(path)
        else:
            raise InputError("no such file or folder", file=path, hint="pass result files or the folder holding them")
    return LoadedResults(results=tuple(loader.results), skipped_files=tuple(loader.skipped), plan=loader.plan,
                         plan_source=loader.plan_source, settings=loader.settings,
                         settings_source=loader.settings_source)


class _Loader:
    """The documents read so far: a file found in a folder is refused or skipped with the
    reason, one named on the command line is an error when it does not read."""

    def __init__(self, relative_to: Path | None) -> None:
        self.relative_to = relative_to
        self.results: list[StageResult] = []
        self.skipped: list[str] = []
        self.plan: dict[str, Any] | None = None
        self.plan_source: str | None = None
        self.settings: dict[str, Any] | None = None
        self.settings_source: str | None = None
        self.seen: set[Path] = set()
        self.files_read = 0
        self.bytes_read = 0

    def name(self, file: Path) -> str:
        if self.relative_to is not None:
            try:
                return str(file.relative_to(self.relative_to))
            except ValueError:
                pass
        return str(file)

    def _first_time(self, file: Path) -> bool:
        resolved = file.resolve()
        if resolved in self.seen:
            return False
        self.seen.add(resolved)
        return True

    def found_file(self, folder: Path, file: Path) -> None:
        """A ``.json`` file under ``folder``: a result, the plan, the settings, or skipped."""
        if not self._first_time(file):
            return
        name = self.name(file)
        try:
            size = file.stat().st_size
        except OSError as exc:  # a dangling or looping symlink in a downloaded bundle
            self.results.append(refused_result(name, InputError(f"cannot read ({exc.strerror})", file=file)))
            return
        if size > MAX_RESULT_BYTES:
            self.skipped.append(name)
            return
        self.files_read += 1
        self.bytes_read += size
        if self.files_read > LIMITS.result_files or self.bytes_read > LIMITS.result_total_bytes:
            raise InputError(
                f"more than {LIMITS.result_files} result files or {LIMITS.result_total_bytes // MiB} MiB "
                "of results under this folder",
                file=folder, hint="pass the folder of one run's results (limits: docs/trust-boundary.md)")
        try:
            document = _read(file)
        except InputError as err:  # unreadable, not JSON, truncated, too deep
            self.results.append(refused_result(name, err))
            return
        if is_plan(document):
            if self.plan is None:
                self.plan, self.plan_source = check_plan(document, name), name
            else:
                self.skipped.append(name)
        elif is_settings(document):
            if self.settings is None:
                self.settings, self.settings_source = document, name
        elif looks_like_result(document):
            try:
                self.results.append(parse_envelope(document, name))
            except InputError as err:
                self.results.append(refused_result(name, err, document))
        elif not is_own_output(document):
            self.skipped.append(name)

    def named_file(self, path: Path) -> None:
        """A file named on the command line: the plan, the settings, or a result that must read."""
        if not self._first_time(path):
            return
        try:
            document = _read(path)
        except InputError as err:
            raise _explicit(err) from None
        if is_plan(document) and self.plan is None:
            self.plan, self.plan_source = check_plan(document, str(path)), str(path)
        elif is_settings(document) and self.settings is None:
            self.settings, self.settings_source = document, str(path)
        else:
            self.results.append(parse_envelope(document, str(path)))  # its errors say what to do
