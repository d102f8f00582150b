"""The stage-specific fields of each result kind, read by the names its schema gives.

One reader per kind (``schemas/test-result``, ``kernels``, ``abi-diff``, ``build``,
``coverage``). A field that is present with the wrong type is an ``InputError`` with its
JSON path; an absent optional field takes its empty value. Nothing here guesses among
alternative field names. Which readers check a kind when its result is loaded is the kind's
entry in ``xcompat.results.stages.STAGES``. The build kind's readers are ``xcompat.results.build``,
named here too so every kind is read through this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from xcompat.results.build import (
    BuildCell,
    BuildError,
    RecordedWheel,
    build_cells,
    build_errors,
    build_wheels,
    expand_build,
)
from xcompat.results.fields import field_int, field_list, field_num, field_obj, field_str, wrong_type
from xcompat.results.kernel_operators import OperatorsSection
from xcompat.results.kernel_operators import read_section as kernel_operators
from xcompat.results.stage_result import StageResult
from xcompat.results.status import BUMP_ORDER, Bump

__all__ = [
    "NEUTRAL_OUTCOMES", "PASSING_OUTCOMES", "TEST_OUTCOMES", "AbiFindingData", "AbiVersions", "BuildCell", "BuildError",
    "CoverageData", "CoverageFile", "KernelCase", "KernelResult", "OperatorsSection", "RecordedWheel", "TestCase", "abi_findings",
    "abi_required_bump", "abi_versions", "build_cells", "build_errors", "build_wheels", "coverage_data",
    "expand_build", "is_cell_coverage_artifact", "kernel_operators", "kernel_results", "probe_frameworks", "test_cases", "tests_not_run",
]

TEST_OUTCOMES = ("passed", "failed", "skipped", "xfailed", "xpassed", "error", "crashed", "timeout", "leaked")
PASSING_OUTCOMES = frozenset({"passed", "xfailed", "xpassed"})
NEUTRAL_OUTCOMES = frozenset({"skipped"})


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
    for i, raw in enumerate(field_list(result, result.data, "tests", "$")):
        path = f"$.tests[{i}]"
        item = field_obj(result, raw, path)
        nodeid = item.get("nodeid")
        if not isinstance(nodeid, str) or not nodeid:
            raise wrong_type(result, f"{path}.nodeid", "a non-empty string", nodeid)
        outcome = item.get("outcome")
        if outcome not in TEST_OUTCOMES:
            raise wrong_type(result, f"{path}.outcome", "one of " + ", ".join(TEST_OUTCOMES), outcome)
        crash = item.get("crash")
        traceback = text = ""
        if crash is not None:
            crash = field_obj(result, crash, f"{path}.crash")
            traceback = field_str(result, crash, "traceback", f"{path}.crash")
            text = ", ".join(f"{k}={v}" for k, v in crash.items()
                             if k != "traceback" and isinstance(v, (str, int)) and not isinstance(v, bool))
        out.append(TestCase(
            nodeid=nodeid, outcome=outcome, message=field_str(result, item, "message", path),
            duration_s=field_num(result, item, "duration_s", path), output_tail=field_str(result, item, "output_tail", path),
            longrepr=field_str(result, item, "longrepr", path), crash_traceback=traceback, crash_text=text,
        ))
    return out


def tests_not_run(result: StageResult) -> int:
    """Tests collected but never run because a file could not be collected (0 when not said)."""
    value = field_int(result, result.data, "not_run", "$")
    if value is not None and value < 0:
        raise wrong_type(result, "$.not_run", "an integer of 0 or more", value)
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
    for i, raw in enumerate(field_list(result, result.data, "kernels", "$")):
        path = f"$.kernels[{i}]"
        item = field_obj(result, raw, path)
        status = item.get("status")
        if status not in ("passed", "failed", "skipped"):
            raise wrong_type(result, f"{path}.status", "passed, failed or skipped", status)
        cases = []
        for j, craw in enumerate(field_list(result, item, "cases", path)):
            cpath = f"{path}.cases[{j}]"
            case = field_obj(result, craw, cpath)
            cases.append(KernelCase(
                id=field_str(result, case, "id", cpath, "?"), status=field_str(result, case, "status", cpath),
                mismatches=field_int(result, case, "mismatches", cpath), max_abs_err=field_num(result, case, "max_abs_err", cpath),
                max_rel_err=field_num(result, case, "max_rel_err", cpath), detail=field_str(result, case, "detail", cpath),
            ))
        out.append(KernelResult(name=field_str(result, item, "name", path, "?"), status=status, cases=tuple(cases)))
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
        raise wrong_type(result, "$.required_bump", "one of " + ", ".join(BUMP_ORDER), value)
    return value  # type: ignore[no-any-return]


def abi_findings(result: StageResult) -> list[AbiFindingData]:
    out = []
    for i, raw in enumerate(field_list(result, result.data, "findings", "$")):
        path = f"$.findings[{i}]"
        item = field_obj(result, raw, path)
        bump = item.get("required_bump", "none")
        if bump not in BUMP_ORDER:
            raise wrong_type(result, f"{path}.required_bump", "one of " + ", ".join(BUMP_ORDER), bump)
        out.append(AbiFindingData(
            kind=field_str(result, item, "kind", path, "finding"), library=field_str(result, item, "library", path),
            symbol=field_str(result, item, "symbol", path), demangled=field_str(result, item, "demangled", path),
            required_bump=bump, detail=field_str(result, item, "detail", path),
        ))
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
        raise wrong_type(result, path, "a list of [start, end] ranges", value)
    out = []
    for i, item in enumerate(value):
        if (not isinstance(item, list) or len(item) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in item)):
            raise wrong_type(result, f"{path}[{i}]", "[start, end]", item)
        out.append((item[0], item[1]))
    return tuple(out)


def _coverage_files(result: StageResult, doc: Mapping[str, Any], path: str) -> tuple[CoverageFile, ...]:
    out = []
    for i, raw in enumerate(field_list(result, doc, "files", path)):
        fpath = f"{path}.files[{i}]"
        item = field_obj(result, raw, fpath)
        name = item.get("path")
        if not isinstance(name, str) or not name:
            raise wrong_type(result, f"{fpath}.path", "a non-empty string", name)
        out.append(CoverageFile(
            path=name, percent=field_num(result, item, "percent", fpath), covered=field_int(result, item, "lines_covered", fpath),
            total=field_int(result, item, "lines_valid", fpath),
            uncovered=_ranges(result, item.get("uncovered_ranges"), f"{fpath}.uncovered_ranges"),
        ))
    return tuple(out)


def coverage_data(result: StageResult) -> CoverageData:
    doc = result.data
    totals = doc.get("totals")
    percent = field_num(result, field_obj(result, totals, "$.totals"), "percent", "$.totals") if totals is not None else None
    languages = []
    raw_langs = doc.get("languages")
    if raw_langs is not None:
        for name, value in sorted(field_obj(result, raw_langs, "$.languages").items()):
            p = field_num(result, field_obj(result, value, f"$.languages.{name}"), "percent", f"$.languages.{name}")
            if p is not None:
                languages.append((str(name), p))
    diff = doc.get("diff")
    thresholds = doc.get("thresholds")
    threshold = field_num(result, field_obj(result, thresholds, "$.thresholds"), "diff", "$.thresholds") \
        if thresholds is not None else None
    diff_percent = None
    diff_files: tuple[CoverageFile, ...] = ()
    if diff is not None:
        diff = field_obj(result, diff, "$.diff")
        diff_percent = field_num(result, diff, "percent", "$.diff")
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
        entry = field_obj(result, entry, f"$.{name}")
        version = field_str(result, entry, "version", f"$.{name}")
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
        raise wrong_type(result, "$.actual_bump", "one of " + ", ".join(BUMP_ORDER) + " or null", actual)
    versions: dict[str, str | None] = {}
    for side in ("old", "new"):
        raw = result.data.get(side)
        versions[side] = None
        if raw is not None:
            versions[side] = field_str(result, field_obj(result, raw, f"$.{side}"), "version", f"$.{side}") or None
    return AbiVersions(actual_bump=actual, old_version=versions["old"], new_version=versions["new"])


# -- coverage artifacts -------------------------------------------------------------------------


def is_cell_coverage_artifact(result: StageResult) -> bool:
    """A cell's own coverage artifact (``coverage collect``, schema coverage-cell: files keyed by
    path), read for its figures only by ``coverage merge``; the report reads a merged result's."""
    return result.kind == "coverage" and result.cell_id is not None and isinstance(result.data.get("files"), dict)
