"""The build result's fields (``schemas/build``): the wheels it recorded, its cells and errors,
and one result per cell for a build that covered several."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xcompat.errors import InputError
from xcompat.results.fields import field_list, field_obj, field_str, wrong_type
from xcompat.results.stage_result import StageResult
from xcompat.results.status import STAGE_STATUSES


@dataclass(frozen=True, kw_only=True)
class RecordedWheel:
    """A wheel a build recorded: what a release may publish, byte for byte."""

    file: str  # base name
    sha256: str
    cell_id: str | None


@dataclass(frozen=True, kw_only=True)
class BuildCell:
    id: str
    status: str
    reason: str
    wheels: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class BuildError:
    cell_id: str | None
    message: str
    log_tail: str


def build_wheels(result: StageResult) -> tuple[RecordedWheel, ...]:
    from pathlib import PurePath

    found = []
    for i, raw in enumerate(field_list(result, result.data, "wheels", "$")):
        path = f"$.wheels[{i}]"
        item = raw if isinstance(raw, dict) else None
        if item is None or not isinstance(item.get("file"), str) or not isinstance(item.get("sha256"), str):
            raise InputError(f"{path}: a wheel needs string 'file' and 'sha256'", file=result.source)
        cid = item.get("cell_id")
        found.append(RecordedWheel(file=PurePath(item["file"]).name, sha256=item["sha256"].lower(),
                                   cell_id=cid if isinstance(cid, str) else None))
    return tuple(found)


def build_cells(result: StageResult) -> list[BuildCell]:
    out = []
    for i, raw in enumerate(field_list(result, result.data, "cells", "$")):
        path = f"$.cells[{i}]"
        item = field_obj(result, raw, path)
        cid, status = item.get("id"), item.get("status")
        if (cid is not None and (not isinstance(cid, str) or not cid)) or status not in STAGE_STATUSES:
            raise InputError(f"{path}: needs a string (or null) 'id' and a known 'status'", file=result.source)
        if cid is None:  # a build for no matrix cell (xcompat build without a plan): the document's own
            continue
        wheels = item.get("wheels") or []
        if not isinstance(wheels, list) or not all(isinstance(w, str) for w in wheels):
            raise wrong_type(result, f"{path}.wheels", "a list of file names", wheels)
        out.append(BuildCell(id=cid, status=status, reason=field_str(result, item, "reason", path), wheels=tuple(wheels)))
    return out


def build_errors(result: StageResult) -> list[BuildError]:
    out = []
    for i, raw in enumerate(field_list(result, result.data, "errors", "$")):
        path = f"$.errors[{i}]"
        item = field_obj(result, raw, path)
        cid = item.get("cell_id")
        if cid is not None and not isinstance(cid, str):
            raise wrong_type(result, f"{path}.cell_id", "a string or null", cid)
        tail = item.get("log_tail")
        if isinstance(tail, list) and all(isinstance(t, str) for t in tail):
            tail = "\n".join(tail)
        elif tail is not None and not isinstance(tail, str):
            raise wrong_type(result, f"{path}.log_tail", "a string or a list of lines", tail)
        out.append(BuildError(cell_id=cid, message=field_str(result, item, "message", path), log_tail=tail or ""))
    return out


def expand_build(result: StageResult) -> list[StageResult]:
    """A build result covering several cells (``cells[]``): one result per cell, with its own status.

    The document's own ``cell_id`` (when set) keeps the whole result; entries for other
    cells become results of their own. Errors with no cell stay with a cell-less result.
    """
    if result.kind != "build":
        return [result]
    entries = build_cells(result)
    if not entries:
        return [result]
    errors = build_errors(result)
    wheels = build_wheels(result)
    out = [result] if result.cell_id is not None else []
    for entry in entries:
        if entry.id == result.cell_id:
            continue
        mine = [e for e in errors if e.cell_id == entry.id]
        own = [w for w in wheels if w.file in {n.rsplit("/", 1)[-1] for n in entry.wheels}]
        data: dict[str, Any] = {"version": 1, "kind": "build", "cell_id": entry.id, "status": entry.status,
                                "wheels": [{"file": w.file, "sha256": w.sha256, "cell_id": entry.id} for w in own]}
        if mine:
            data["log_tail"] = "\n".join(e.log_tail or e.message for e in mine)
        summary = entry.reason or (mine[0].message if mine else f"build {entry.status}")
        out.append(StageResult(kind="build", cell_id=entry.id, status=entry.status,
                               summary=" ".join(summary.split()), source=result.source, data=data))
    stray = [e for e in errors if e.cell_id is None]
    if result.cell_id is None and stray:
        out.append(StageResult(kind="build", cell_id=None, status="failed",
                               summary=stray[0].message or result.summary, source=result.source,
                               data={"log_tail": "\n".join(e.log_tail for e in stray)}))
    return out
