"""The stage-specific fields of each result kind, read by the names its schema gives.

One reader per kind (``schemas/test-result``, ``kernels``, ``abi-diff``, ``build``,
``coverage``). A field that is present with the wrong type is an ``InputError`` with its
JSON path; an absent optional field takes its empty value. Nothing here guesses among
alternative field names. Which readers check a kind when its result is loaded is the kind's
entry in ``xcompat.results.stages.STAGES``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from xcompat.errors import InputError
from xcompat.results.stage_result import StageResult
from xcompat.results.status import BUMP_ORDER, STAGE_STATUSES, Bump

TEST_OUTCOMES = ("passed", "failed", "skipped", "xfailed", "xpassed", "error", "crashed", "timeout", "leaked")
PASSING_OUTCOMES = frozenset({"passed", "xfailed", "xpassed"})
NEUTRAL_OUTCOMES = frozenset({"skipped"})


def _fail(result: StageResult, path: str, expected: str, value: Any) -> InputError:
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return InputError(f"{path}: expected {expected}, got {shown}", file=result.source)


def _list(result: StageResult, doc: Mapping[str, Any], key: str, path: str) -> list[Any]:
    value = doc.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail(result, f"{path}.{key}", "a list", value)
    return value


def _obj(result: StageResult, value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(result, path, "an object", value)
    return value


def _str(result: StageResult, doc: Mapping[str, Any], key: str, path: str, default: str = "") -> str:
    value = doc.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise _fail(result, f"{path}.{key}", "a string", value)
    return value


def _num(result: StageResult, doc: Mapping[str, Any], key: str, path: str) -> float | None:
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(result, f"{path}.{key}", "a number", value)
    return float(value)


def _int(result: StageResult, doc: Mapping[str, Any], key: str, path: str) -> int | None:
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(result, f"{path}.{key}", "an integer", value)
    return value


# -- test -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class TestCase:
    __test__ = False

    nodeid: str
    outcome: str
    message: str
    duration_s: float | None
    output_tail: str
    longrepr: str
    crash_traceback: str
    crash_text: str


def test_cases(result: StageResult) -> list[TestCase]:
    out = []
    for i, raw in enumerate(_list(result, result.data, "tests", "$")):
        path = f"$.tests[{i}]"
        item = _obj(result, raw, path)
        nodeid = item.get("nodeid")
        if not isinstance(nodeid, str) or not nodeid:
            raise _fail(result, f"{path}.nodeid", "a non-empty string", nodeid)
        outcome = item.get("outcome")
        if outcome not in TEST_OUTCOMES:
            raise _fail(result, f"{path}.outcome", "one of " + ", ".join(TEST_OUTCOMES), outcome)
        crash = item.get("crash")
        traceback = text = ""
        if crash is not None:
            crash = _obj(result, crash, f"{path}.crash")
            traceback = _str(result, crash, "traceback", f"{path}.crash")
            text = ", ".join(f"{k}={v}" for k, v in crash.items()
                             if k != "traceback" and isinstance(v, (str, int)) and not isinstance(v, bool))
        out.append(TestCase(
            nodeid=nodeid, outcome=outcome, message=_str(result, item, "message", path),
            duration_s=_num(result, item, "duration_s", path), output_tail=_str(result, item, "output_tail", path),
            longrepr=_str(result, item, "longrepr", path), crash_traceback=traceback, crash_text=text,
        ))
    return out


def tests_not_run(result: StageResult) -> int:
    """Tests collected but never run because a file could not be collected (0 when not said)."""
    value = _int(result, result.data, "not_run", "$")
    if value is not None and value < 0:
        raise _fail(result, "$.not_run", "an integer of 0 or more", value)
    return value or 0


# -- kernels ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class KernelCase:
    id: str
    status: str
    mismatches: int | None
    max_abs_err: float | None
    max_rel_err: float | None
    detail: str


@dataclass(frozen=True, kw_only=True)
class KernelResult:
    name: str
    status: str
    cases: tuple[KernelCase, ...]


def kernel_results(result: StageResult) -> list[KernelResult]:
    out = []
    for i, raw in enumerate(_list(result, result.data, "kernels", "$")):
        path = f"$.kernels[{i}]"
        item = _obj(result, raw, path)
        status = item.get("status")
        if status not in ("passed", "failed", "skipped"):
            raise _fail(result, f"{path}.status", "passed, failed or skipped", status)
        cases = []
        for j, craw in enumerate(_list(result, item, "cases", path)):
            cpath = f"{path}.cases[{j}]"
            case = _obj(result, craw, cpath)
            cases.append(KernelCase(
                id=_str(result, case, "id", cpath, "?"), status=_str(result, case, "status", cpath),
                mismatches=_int(result, case, "mismatches", cpath), max_abs_err=_num(result, case, "max_abs_err", cpath),
                max_rel_err=_num(result, case, "max_rel_err", cpath), detail=_str(result, case, "detail", cpath),
            ))
        out.append(KernelResult(name=_str(result, item, "name", path, "?"), status=status, cases=tuple(cases)))
    return out


# -- abi ----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class AbiFindingData:
    kind: str
    library: str
    symbol: str
    demangled: str
    required_bump: Bump
    detail: str


def abi_required_bump(result: StageResult) -> Bump | None:
    value = result.data.get("required_bump")
    if value is None:
        return None
    if value not in BUMP_ORDER:
        raise _fail(result, "$.required_bump", "one of " + ", ".join(BUMP_ORDER), value)
    return value  # type: ignore[no-any-return]


def abi_findings(result: StageResult) -> list[AbiFindingData]:
    out = []
    for i, raw in enumerate(_list(result, result.data, "findings", "$")):
        path = f"$.findings[{i}]"
        item = _obj(result, raw, path)
        bump = item.get("required_bump", "none")
        if bump not in BUMP_ORDER:
            raise _fail(result, f"{path}.required_bump", "one of " + ", ".join(BUMP_ORDER), bump)
        out.append(AbiFindingData(
            kind=_str(result, item, "kind", path, "finding"), library=_str(result, item, "library", path),
            symbol=_str(result, item, "symbol", path), demangled=_str(result, item, "demangled", path),
            required_bump=bump, detail=_str(result, item, "detail", path),
        ))
    return out


# -- build ----------------------------------------------------------------------------------


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
    for i, raw in enumerate(_list(result, result.data, "wheels", "$")):
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
    for i, raw in enumerate(_list(result, result.data, "cells", "$")):
        path = f"$.cells[{i}]"
        item = _obj(result, raw, path)
        cid, status = item.get("id"), item.get("status")
        if (cid is not None and (not isinstance(cid, str) or not cid)) or status not in STAGE_STATUSES:
            raise InputError(f"{path}: needs a string (or null) 'id' and a known 'status'", file=result.source)
        if cid is None:  # a build for no matrix cell (xcompat build without a plan): the document's own
            continue
        wheels = item.get("wheels") or []
        if not isinstance(wheels, list) or not all(isinstance(w, str) for w in wheels):
            raise _fail(result, f"{path}.wheels", "a list of file names", wheels)
        out.append(BuildCell(id=cid, status=status, reason=_str(result, item, "reason", path), wheels=tuple(wheels)))
    return out


def build_errors(result: StageResult) -> list[BuildError]:
    out = []
    for i, raw in enumerate(_list(result, result.data, "errors", "$")):
        path = f"$.errors[{i}]"
        item = _obj(result, raw, path)
        cid = item.get("cell_id")
        if cid is not None and not isinstance(cid, str):
            raise _fail(result, f"{path}.cell_id", "a string or null", cid)
        tail = item.get("log_tail")
        if isinstance(tail, list) and all(isinstance(t, str) for t in tail):
            tail = "\n".join(tail)
        elif tail is not None and not isinstance(tail, str):
            raise _fail(result, f"{path}.log_tail", "a string or a list of lines", tail)
        out.append(BuildError(cell_id=cid, message=_str(result, item, "message", path), log_tail=tail or ""))
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


# -- coverage ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CoverageFile:
    path: str
    percent: float | None
    covered: int | None
    total: int | None
    uncovered: tuple[tuple[int, int], ...]


@dataclass(frozen=True, kw_only=True)
class CoverageData:
    percent: float | None
    languages: tuple[tuple[str, float], ...]
    files: tuple[CoverageFile, ...]
    diff_percent: float | None
    diff_threshold: float | None
    diff_files: tuple[CoverageFile, ...]


def _ranges(result: StageResult, value: Any, path: str) -> tuple[tuple[int, int], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _fail(result, path, "a list of [start, end] ranges", value)
    out = []
    for i, item in enumerate(value):
        if (not isinstance(item, list) or len(item) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in item)):
            raise _fail(result, f"{path}[{i}]", "[start, end]", item)
        out.append((item[0], item[1]))
    return tuple(out)


def _coverage_files(result: StageResult, doc: Mapping[str, Any], path: str) -> tuple[CoverageFile, ...]:
    out = []
    for i, raw in enumerate(_list(result, doc, "files", path)):
        fpath = f"{path}.files[{i}]"
        item = _obj(result, raw, fpath)
        name = item.get("path")
        if not isinstance(name, str) or not name:
            raise _fail(result, f"{fpath}.path", "a non-empty string", name)
        out.append(CoverageFile(
            path=name, percent=_num(result, item, "percent", fpath), covered=_int(result, item, "lines_covered", fpath),
            total=_int(result, item, "lines_valid", fpath),
            uncovered=_ranges(result, item.get("uncovered_ranges"), f"{fpath}.uncovered_ranges"),
        ))
    return tuple(out)


def coverage_data(result: StageResult) -> CoverageData:
    doc = result.data
    totals = doc.get("totals")
    percent = _num(result, _obj(result, totals, "$.totals"), "percent", "$.totals") if totals is not None else None
    languages = []
    raw_langs = doc.get("languages")
    if raw_langs is not None:
        for name, value in sorted(_obj(result, raw_langs, "$.languages").items()):
            p = _num(result, _obj(result, value, f"$.languages.{name}"), "percent", f"$.languages.{name}")
            if p is not None:
                languages.append((str(name), p))
    diff = doc.get("diff")
    thresholds = doc.get("thresholds")
    threshold = _num(result, _obj(result, thresholds, "$.thresholds"), "diff", "$.thresholds") \
        if thresholds is not None else None
    diff_percent = None
    diff_files: tuple[CoverageFile, ...] = ()
    if diff is not None:
        diff = _obj(result, diff, "$.diff")
        diff_percent = _num(result, diff, "percent", "$.diff")
        diff_files = _coverage_files(result, diff, "$.diff")
    return CoverageData(percent=percent, languages=tuple(languages), files=_coverage_files(result, doc, "$"),
                        diff_percent=diff_percent, diff_threshold=threshold, diff_files=diff_files)


# -- probe and abi facts the report shows ---------------------------------------------------------


def probe_frameworks(result: StageResult) -> tuple[tuple[str, str], ...]:
    """The framework versions a probe found installed (``torch.version``, ``numpy.version``)."""
    found = []
    for name in ("numpy", "torch"):
        entry = result.data.get(name)
        if entry is None:
            continue
        entry = _obj(result, entry, f"$.{name}")
        version = _str(result, entry, "version", f"$.{name}")
        if version:
            found.append((name, version))
    return tuple(found)


@dataclass(frozen=True, kw_only=True)
class AbiVersions:
    actual_bump: Bump | None
    old_version: str | None
    new_version: str | None


def abi_versions(result: StageResult) -> AbiVersions:
    """``actual_bump`` and the ``old``/``new`` package versions of an ABI diff."""
    actual = result.data.get("actual_bump")
    if actual is not None and actual not in BUMP_ORDER:
        raise _fail(result, "$.actual_bump", "one of " + ", ".join(BUMP_ORDER) + " or null", actual)
    versions: dict[str, str | None] = {}
    for side in ("old", "new"):
        raw = result.data.get(side)
        versions[side] = None
        if raw is not None:
            versions[side] = _str(result, _obj(result, raw, f"$.{side}"), "version", f"$.{side}") or None
    return AbiVersions(actual_bump=actual, old_version=versions["old"], new_version=versions["new"])


# -- coverage artifacts -------------------------------------------------------------------------


def is_cell_coverage_artifact(result: StageResult) -> bool:
    """A cell's own coverage artifact (``coverage collect``, schema coverage-cell: files keyed by
    path), read for its figures only by ``coverage merge``; the report reads a merged result's."""
    return result.kind == "coverage" and result.cell_id is not None and isinstance(result.data.get("files"), dict)
