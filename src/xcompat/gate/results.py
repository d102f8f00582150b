"""Read what the gate judges: the plan's cells and the per-cell stage results.

Every per-cell result carries the common envelope (``version``, ``kind``, ``cell_id``,
``status``, ``summary``), so the gate needs to know nothing else about a stage.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xcompat.errors import InputError

STAGE_KINDS = frozenset({"build", "kernels", "test", "probe", "abi", "coverage"})
STATUSES = frozenset({"passed", "failed", "crashed", "skipped", "fallback"})

# Result files are small; anything bigger in a results folder is not an envelope (a wheel
# listing, a raw coverage dump) and is not read in full.
_MAX_RESULT_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class PlannedCell:
    id: str
    required: bool
    backend: str | None = None
    runs_on: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What the gate needs from a plan: its cells and the matrix's release settings."""

    cells: tuple[PlannedCell, ...]
    matrix_sha256: str | None = None
    tag_pattern: str | None = None
    required_backends: tuple[str, ...] = ()

    def required(self, cell: PlannedCell) -> bool:
        """A cell gates the release when the matrix marks it required or its backend is a required one."""
        return cell.required or (cell.backend is not None and cell.backend in self.required_backends)


@dataclass(frozen=True, kw_only=True)
class RecordedWheel:
    """A wheel a build result recorded: what the release may publish, byte for byte."""

    file: str  # base name
    sha256: str
    cell_id: str | None


@dataclass(frozen=True, kw_only=True)
class StageResult:
    kind: str
    cell_id: str | None
    status: str
    summary: str
    path: Path
    wheels: tuple[RecordedWheel, ...] = ()


def _cells_list(document: Any) -> list[Any] | None:
    if not isinstance(document, dict):
        return None
    for key in ("cells", "include"):
        value = document.get(key)
        if isinstance(value, list):
            return value
    matrix = document.get("matrix")
    if isinstance(matrix, dict):
        return _cells_list(matrix)
    github = document.get("github")
    if isinstance(github, dict):
        return _cells_list(github)
    return None


def load_plan(path: Path) -> Plan:
    """The cells of a plan written by ``xcompat matrix plan --format json`` (or a GitHub ``strategy.matrix``)."""
    from xcompat.jsonio import read_json

    document = read_json(path)
    cells = _cells_list(document)
    if cells is None:
        raise InputError("not a plan: expected a 'cells' (or GitHub 'include') list",
                         file=path, hint="write it with: xcompat matrix plan MATRIX --format json")
    planned: list[PlannedCell] = []
    seen: set[str] = set()
    for index, cell in enumerate(cells):
        where = f"$.cells[{index}]"
        if not isinstance(cell, dict):
            raise InputError(f"{where}: a cell must be an object", file=path)
        cid = cell.get("id", cell.get("cell_id", cell.get("cell")))
        if not isinstance(cid, str) or not cid:
            raise InputError(f"{where}: a cell needs a non-empty string 'id'", file=path)
        if cid in seen:
            raise InputError(f"{where}: cell id {cid!r} appears twice", file=path)
        seen.add(cid)
        required = cell.get("required", True)
        if not isinstance(required, bool):
            raise InputError(f"{where}.required: must be true or false, got {required!r}", file=path)
        labels = cell.get("runs_on", cell.get("runs-on", ()))
        runs_on = (labels,) if isinstance(labels, str) else tuple(labels) if isinstance(labels, list) else ()
        backend = cell.get("backend")
        planned.append(
            PlannedCell(id=cid, required=required, backend=backend if isinstance(backend, str) else None,
                        runs_on=tuple(str(label) for label in runs_on))
        )
    raw_settings = document.get("settings")
    settings: dict[str, Any] = raw_settings if isinstance(raw_settings, dict) else {}
    raw_gate = settings.get("gate")
    gate: dict[str, Any] = raw_gate if isinstance(raw_gate, dict) else {}
    pattern = gate.get("tag_pattern")
    backends = gate.get("required_backends", [])
    if pattern is not None and not isinstance(pattern, str):
        raise InputError(f"$.settings.gate.tag_pattern: expected a string, got {pattern!r}", file=path)
    if not isinstance(backends, list) or not all(isinstance(b, str) for b in backends):
        raise InputError(f"$.settings.gate.required_backends: expected a list of names, got {backends!r}", file=path)
    sha = document.get("matrix_sha256")
    return Plan(
        cells=tuple(planned),
        matrix_sha256=sha if isinstance(sha, str) and sha else None,
        tag_pattern=pattern,
        required_backends=tuple(backends),
    )


def _json_files(folder: Path) -> Iterator[Path]:
    # os.walk with pruning instead of Path.rglob: hidden folders are skipped without being
    # descended into, and it is about 3x faster on a few thousand artifact files.
    import os

    for top, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".json") and not name.startswith("."):
                yield Path(top, name)


def _recorded_wheels(path: Path, document: dict[str, Any]) -> tuple[RecordedWheel, ...]:
    wheels = document.get("wheels", [])
    if not isinstance(wheels, list):
        raise InputError("$.wheels: expected a list", file=path)
    found = []
    for index, wheel in enumerate(wheels):
        if not isinstance(wheel, dict) or not isinstance(wheel.get("file"), str) \
                or not isinstance(wheel.get("sha256"), str):
            raise InputError(f"$.wheels[{index}]: a wheel needs string 'file' and 'sha256'", file=path)
        cid = wheel.get("cell_id")
        found.append(RecordedWheel(file=Path(wheel["file"]).name, sha256=wheel["sha256"].lower(),
                                   cell_id=cid if isinstance(cid, str) else None))
    return tuple(found)


def parse_result(path: Path, document: Any) -> list[StageResult]:
    """The per-cell envelopes of one result document; empty when it is not a per-cell stage result.

    A build result may cover several cells (``cells: [{id, status, wheels}]``): it counts
    once for each of them, with that cell's own status.
    """
    if not isinstance(document, dict) or document.get("kind") not in STAGE_KINDS:
        return []
    if "cell_id" not in document or "status" not in document:
        return []
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise InputError(f"$.version: expected an integer, got {version!r}", file=path)
    if version != 1:
        raise InputError(f"$.version: this xcompat reads result version 1, got {version}", file=path,
                         hint="use the same xcompat version for every stage")
    status = document["status"]
    if status not in STATUSES:
        raise InputError(f"$.status: {status!r} is not one of {', '.join(sorted(STATUSES))}", file=path)
    cid = document["cell_id"]
    if cid is not None and not isinstance(cid, str):
        raise InputError(f"$.cell_id: expected a string or null, got {cid!r}", file=path)
    summary = document.get("summary", "")
    summary = summary if isinstance(summary, str) else ""
    kind = document["kind"]
    wheels = _recorded_wheels(path, document) if kind == "build" else ()
    results = [StageResult(kind=kind, cell_id=cid, status=status, summary=summary, path=path, wheels=wheels)]
    cells = document.get("cells") if kind == "build" else None
    if isinstance(cells, list):
        for index, entry in enumerate(cells):
            if not isinstance(entry, dict):
                raise InputError(f"$.cells[{index}]: expected an object", file=path)
            entry_id, entry_status = entry.get("id"), entry.get("status")
            if entry_id is None or entry_id == cid:
                continue
            if not isinstance(entry_id, str) or entry_status not in STATUSES:
                raise InputError(f"$.cells[{index}]: needs a string 'id' and a known 'status'", file=path)
            names = {Path(str(w)).name for w in entry.get("wheels", []) if isinstance(w, str)}
            own = tuple(w for w in wheels if w.file in names) if names else ()
            reason = entry.get("reason")
            results.append(StageResult(kind=kind, cell_id=entry_id, status=entry_status,
                                       summary=reason if isinstance(reason, str) else summary, path=path,
                                       wheels=own))
    return results


def load_results(folders: Iterable[Path]) -> tuple[StageResult, ...]:
    """Every per-cell stage result under ``folders`` (searched recursively, e.g. downloaded artifacts).

    A JSON file that does not parse is an error, not something to skip: a truncated result
    must never read as "no result" and certainly not as a pass.
    """
    found: list[StageResult] = []
    for folder in folders:
        if not folder.is_dir():
            raise InputError("results folder not found", file=folder,
                             hint="download the stage artifacts there first")
        for path in _json_files(folder):
            if path.stat().st_size > _MAX_RESULT_BYTES:
                continue
            try:
                document = json.loads(path.read_text(encoding="utf-8"))
            except UnicodeDecodeError:
                raise InputError("not UTF-8 text", file=path) from None
            except json.JSONDecodeError as exc:
                raise InputError(f"invalid JSON: {exc.msg}", file=path, line=exc.lineno, column=exc.colno,
                                 hint="a truncated result usually means its job was cancelled") from None
            found.extend(parse_result(path, document))
    return tuple(found)
