"""Join stage results to the plan's cells and decide the verdict.

Rules (documented in docs/report.md):

* a planned cell with no result is **missing**;
* a cell's status is its worst stage: crashed > failed > fallback > skipped > passed
  (a skipped coverage or probe stage does not make a cell skipped);
* any required cell that is not ``passed`` fails the report: missing, fallback-only and
  skipped-with-reason lanes are never green;
* a result not tied to a cell (``cell_id`` null: ABI diff, merged coverage, gate) fails the
  report when its status is failed, crashed or fallback.

Stage-specific fields are read defensively: a field of an unexpected type is ignored,
an unknown kind is shown generically, nothing here raises on a well-formed envelope.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from xcompat.report.channels import load_limits
from xcompat.report.load import parse_result
from xcompat.report.model import (
    BUMP_ORDER,
    AbiFinding,
    AbiSection,
    CellReport,
    CoverageSection,
    Failure,
    FileCoverage,
    Report,
    StageResult,
    StageStatus,
)

# Severity of a stage status when combining a cell's stages; higher wins.
STATUS_RANK = {"passed": 0, "skipped": 1, "fallback": 2, "failed": 3, "crashed": 4}
# Stages whose "skipped" says nothing about whether the cell was exercised.
INFORMATIONAL_KINDS = frozenset({"coverage", "probe"})
PASSING_TEST_OUTCOMES = frozenset({"passed", "skipped", "xfailed", "xpassed", "deselected", "xfail"})
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    return float(value) if isinstance(value, (int, float)) else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def log_tail(text: str, *, lines: int | None = None, chars: int | None = None) -> str:
    """Last lines of a log, without terminal colour codes, bounded in lines and characters."""
    limits = load_limits()
    lines = lines or limits.log_tail_lines
    chars = chars or limits.log_tail_chars
    clean = _ANSI.sub("", text).replace("\r\n", "\n").rstrip()
    kept = clean.split("\n")[-lines:]
    out = "\n".join(kept)
    if len(out) > chars:
        out = out[-chars:]
        out = out[out.find("\n") + 1 :] if "\n" in out else out
    return out


def _tail_of(doc: Mapping[str, Any]) -> str:
    crash = doc.get("crash")
    if isinstance(crash, dict) and isinstance(crash.get("traceback"), str) and crash["traceback"].strip():
        output = next((doc[k] for k in ("output_tail", "log_tail") if isinstance(doc.get(k), str) and doc[k].strip()), "")
        return log_tail((output.rstrip() + "\n" if output else "") + crash["traceback"])
    for key in ("log_tail", "output_tail", "tail", "stderr_tail", "longrepr", "log", "output", "stderr"):
        value = doc.get(key)
        if isinstance(value, str) and value.strip():
            return log_tail(value)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return log_tail("\n".join(value))
    return ""


_CELL_ID = re.compile(r"^py(?P<python>[0-9][0-9.]*t?)-(?P<platform>[^-]+)-(?P<arch>[^-]+)-(?P<backend>[a-z]+)(?P<toolkit>[0-9][^-]*)?(?P<rest>(-.+)?)$")


def cell_from_id(cell_id: str) -> dict[str, Any]:
    """Best-effort cell description from an id made by ``xcompat.model.cell_id``."""
    match = _CELL_ID.match(cell_id)
    if not match:
        return {"id": cell_id, "python": "?", "platform": "?", "arch": "?", "backend": cell_id}
    frameworks = {}
    for part in filter(None, match.group("rest").split("-")):
        m = re.match(r"^([A-Za-z_]+)([0-9].*)$", part)
        if m:
            frameworks[m.group(1)] = m.group(2)
    return {
        "id": cell_id,
        "python": match.group("python"),
        "platform": match.group("platform"),
        "arch": match.group("arch"),
        "backend": match.group("backend"),
        "toolkit": match.group("toolkit"),
        "frameworks": frameworks,
    }


def _cell_fields(spec: Mapping[str, Any]) -> dict[str, Any]:
    frameworks = spec.get("frameworks")
    if isinstance(frameworks, dict):
        fw = tuple(sorted((str(k), str(v)) for k, v in frameworks.items()))
    elif isinstance(frameworks, list):
        fw = tuple(sorted((str(p[0]), str(p[1])) for p in frameworks if isinstance(p, list) and len(p) == 2))
    else:
        fw = ()
    toolkit = spec.get("toolkit")
    return {
        "id": str(spec["id"]),
        "python": str(spec.get("python", "?")),
        "platform": str(spec.get("platform", "?")),
        "arch": str(spec.get("arch", "?")),
        "backend": str(spec.get("backend", "?")),
        "toolkit": str(toolkit) if toolkit not in (None, "") else None,
        "frameworks": fw,
        "required": bool(spec.get("required", True)),
    }


def _test_items(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    for key in ("tests", "results", "cases"):
        items = doc.get(key)
        if isinstance(items, list):
            return [i for i in items if isinstance(i, dict)]
    return []


def _location(item: Mapping[str, Any]) -> tuple[str | None, int | None]:
    file = item.get("file") or item.get("path")
    line = _int(item.get("line"))
    location = item.get("location")
    if isinstance(location, dict):
        file = file or location.get("path") or location.get("file")
        line = line or _int(location.get("line"))
    elif isinstance(location, list) and location and isinstance(location[0], str):
        file = file or location[0]
        if len(location) > 1 and _int(location[1]) is not None:
            line = line or (location[1] + 1)  # pytest locations are 0-based
    if not isinstance(file, str) or not file:
        nodeid = item.get("nodeid")
        if isinstance(nodeid, str) and "::" in nodeid:
            file = nodeid.split("::", 1)[0]
        else:
            file = None
    return file, line


def _crash_text(crash: Any) -> str:
    if isinstance(crash, str):
        return crash
    if isinstance(crash, dict):
        parts = [f"{k}={v}" for k, v in crash.items() if isinstance(v, (str, int, float)) and k not in ("backtrace", "traceback")]
        return ", ".join(parts)
    return ""


def _test_failures(result: StageResult, required: bool) -> tuple[list[Failure], tuple[int, int, int]]:
    failures: list[Failure] = []
    passed = failed = skipped = 0
    for item in _test_items(result.data):
        outcome = _text(item.get("outcome")) or _text(item.get("status")) or "unknown"
        if outcome == "passed":
            passed += 1
        elif outcome in PASSING_TEST_OUTCOMES:
            skipped += 1 if outcome in ("skipped", "deselected") else 0
            passed += 1 if outcome in ("xfailed", "xpassed", "xfail") else 0
        else:
            failed += 1
            file, line = _location(item)
            crash = _crash_text(item.get("crash"))
            message = _text(item.get("message")) or crash or outcome
            failures.append(
                Failure(
                    cell_id=result.cell_id,
                    kind=result.kind,
                    name=_text(item.get("nodeid")) or _text(item.get("name")) or "?",
                    outcome=outcome,
                    message=" ".join(message.split())[:500],
                    duration=_float(item.get("duration_s")) if _float(item.get("duration_s")) is not None else _float(item.get("duration")),
                    file=file,
                    line=line,
                    log_tail=_tail_of(item),
                    required=required,
                )
            )
    return failures, (passed, failed, skipped)


def _kernel_failures(result: StageResult, required: bool) -> list[Failure]:
    out = []
    for item in _list(result.data.get("kernels")):
        if not isinstance(item, dict):
            continue
        status = _text(item.get("status")) or _text(item.get("outcome"))
        if status in ("failed", "crashed", "error", "mismatch", "timeout"):
            # Conformance cases that failed: id, error sizes and the stage's own detail.
            lines = []
            for case in _list(item.get("cases")):
                if isinstance(case, dict) and case.get("status") == "failed":
                    errs = [f"{k}={case[k]:.3g}" for k in ("max_abs_err", "max_rel_err") if _float(case.get(k)) is not None]
                    mism = f"{case['mismatches']} mismatches" if _int(case.get("mismatches")) else ""
                    lines.append(" ".join(filter(None, [_text(case.get("id")) or "?", mism, *errs, _text(case.get("detail"))])))
            message = _text(item.get("message")) or _text(item.get("error"))
            if not message and lines:
                message = f"{len(lines)} case(s) failed"
            out.append(
                Failure(
                    cell_id=result.cell_id,
                    kind=result.kind,
                    name=_text(item.get("name")) or _text(item.get("kernel")) or "?",
                    outcome=status,
                    message=" ".join(message.split())[:500],
                    log_tail=_tail_of(item) or log_tail("\n".join(lines)),
                    required=required,
                )
            )
    return out


def _lines(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "\n".join(v for v in _list(value) if isinstance(v, str))


def _expand_multi_cell(result: StageResult) -> list[StageResult]:
    """A build result may cover several cells (``cells[]`` with their own status): one result per cell."""
    entries = [e for e in _list(result.data.get("cells")) if isinstance(e, dict) and isinstance(e.get("id"), str)]
    if result.kind != "build" or result.cell_id is not None or not entries:
        return [result]
    errors = [e for e in _list(result.data.get("errors")) if isinstance(e, dict)]
    out = []
    for entry in entries:
        status = _text(entry.get("status")) or result.status
        mine = [e for e in errors if e.get("cell_id") == entry["id"]]
        data: dict[str, Any] = {"version": 1, "kind": "build", "cell_id": entry["id"], "status": status}
        if mine:
            data["log_tail"] = "\n".join(_lines(e.get("log_tail")) or _text(e.get("message")) for e in mine)
        summary = _text(entry.get("reason")) or (_text(mine[0].get("message")) if mine else f"build {status}")
        out.append(StageResult(kind="build", cell_id=entry["id"], status=status, summary=" ".join(summary.split()), source=result.source, data=data))
    stray = [e for e in errors if not isinstance(e.get("cell_id"), str)]
    if stray:
        data = {"log_tail": "\n".join(_lines(e.get("log_tail")) for e in stray)}
        out.append(StageResult(kind="build", cell_id=None, status="failed", summary=_text(stray[0].get("message")) or result.summary, source=result.source, data=data))
    return out


def _abi_findings(result: StageResult) -> list[AbiFinding]:
    out = []
    for item in _list(result.data.get("findings")):
        if not isinstance(item, dict):
            continue
        bump = item.get("required_bump")
        file, line = _location(item)
        out.append(
            AbiFinding(
                cell_id=result.cell_id,
                kind=_text(item.get("kind")) or "finding",
                library=_text(item.get("library")),
                symbol=_text(item.get("symbol")),
                demangled=_text(item.get("demangled")),
                required_bump=bump if isinstance(bump, str) and bump in BUMP_ORDER else "none",  # type: ignore[arg-type]
                message=" ".join((_text(item.get("message")) or _text(item.get("detail"))).split())[:500],
                file=file if file and not file.startswith("/") else None,
                line=line,
            )
        )
    return out


def _percent(value: Any) -> float | None:
    if isinstance(value, dict):
        for key in ("percent", "percent_covered", "line_percent", "lines_percent"):
            p = _float(value.get(key))
            if p is not None:
                return p
        rate = _float(value.get("line_rate"))
        return rate * 100 if rate is not None else None
    return _float(value)


def _ranges(value: Any) -> tuple[tuple[int, int], ...]:
    out = []
    for item in _list(value):
        if isinstance(item, list) and len(item) == 2 and all(_int(v) is not None for v in item):
            out.append((item[0], item[1]))
        elif _int(item) is not None:
            out.append((item, item))
        elif isinstance(item, dict) and _int(item.get("start")) is not None:
            end = _int(item.get("end"))
            out.append((item["start"], end if end is not None else item["start"]))
    return tuple(out)


def _first_int(item: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = _int(item.get(key))
        if value is not None:
            return value
    return None


def _file_coverage(items: Any) -> tuple[FileCoverage, ...]:
    out = []
    if isinstance(items, dict):
        items = [dict(v, path=k) if isinstance(v, dict) else {"path": k, "percent": v} for k, v in items.items()]
    for item in _list(items):
        if not isinstance(item, dict) or not isinstance(item.get("path") or item.get("file"), str):
            continue
        out.append(
            FileCoverage(
                path=item.get("path") or item["file"],
                percent=_percent(item),
                covered=_first_int(item, "lines_covered", "covered", "covered_lines"),
                total=_first_int(item, "lines_valid", "total", "num_statements"),
                uncovered=_ranges(item.get("uncovered") or item.get("uncovered_ranges") or item.get("missing_lines")),
            )
        )
    return tuple(out)


def _coverage(result: StageResult) -> CoverageSection:
    doc = result.data
    languages = doc.get("languages") or doc.get("per_language") or {}
    langs: list[tuple[str, float]] = []
    if isinstance(languages, dict):
        for name, value in sorted(languages.items()):
            p = _percent(value)
            if p is not None:
                langs.append((str(name), p))
    diff = _dict(doc.get("diff"))
    thresholds = _dict(doc.get("thresholds"))
    overall = doc.get("totals") if isinstance(doc.get("totals"), dict) else doc.get("overall", doc.get("percent"))
    return CoverageSection(
        status=result.status,
        summary=result.summary,
        percent=_percent(overall),
        languages=tuple(langs),
        files=_file_coverage(doc.get("files")),
        diff_percent=_percent(diff) if diff else None,
        diff_threshold=_float(diff.get("threshold")) if _float(diff.get("threshold")) is not None else _float(thresholds.get("diff")),
        diff_files=_file_coverage(diff.get("files")) if diff else (),
    )


def _as_results(results: Iterable[StageResult | Mapping[str, Any]]) -> list[StageResult]:
    out = []
    for index, item in enumerate(results):
        result = item if isinstance(item, StageResult) else parse_result(dict(item), f"<result {index}>")
        out.extend(_expand_multi_cell(result))
    return out


def build_report(
    results: Iterable[StageResult | Mapping[str, Any]],
    plan: Mapping[str, Any] | None = None,
    *,
    title: str = "xcompat report",
    artifact_url: str | None = None,
    notes: Iterable[str] = (),
) -> Report:
    """Aggregate stage results (and the plan, when given) into one ``Report``."""
    all_results = _as_results(results)
    notes_list = list(notes)
    warnings: list[str] = []
    problems: list[str] = []

    specs: dict[str, dict[str, Any]] = {}
    for spec in _list(_dict(plan).get("cells")) if plan else []:
        if isinstance(spec, dict) and isinstance(spec.get("id"), str):
            specs[spec["id"]] = {**_cell_fields(spec), "planned": True}

    by_cell: dict[str, list[StageResult]] = {}
    global_results: list[StageResult] = []
    for result in all_results:
        if result.cell_id is None:
            global_results.append(result)
        else:
            by_cell.setdefault(result.cell_id, []).append(result)
    for cell_id, cell_results in by_cell.items():
        if cell_id not in specs:
            embedded = next((r.data["cell"] for r in cell_results if isinstance(r.data.get("cell"), dict)), None)
            spec = dict(embedded) if embedded and isinstance(embedded.get("id"), str) else cell_from_id(cell_id)
            spec["id"] = cell_id
            fields = _cell_fields(spec)
            if plan is not None:
                # Results for a cell the plan does not list cannot make a lane green or red.
                fields["required"] = False
                warnings.append(f"results for {cell_id}, which the plan does not list")
            specs[cell_id] = {**fields, "planned": plan is None}

    cells: list[CellReport] = []
    failures: list[Failure] = []
    abi_findings: list[AbiFinding] = []
    abi_results: list[StageResult] = []
    coverage_results: list[StageResult] = []
    other: list[StageResult] = []

    for cell_id, spec in specs.items():
        cell_results = by_cell.get(cell_id, [])
        required = spec["required"]
        passed = failed = skipped = 0
        stages: list[StageStatus] = []
        worst = -1
        worst_status = "missing"
        reason = ""
        for result in cell_results:
            stages.append(StageStatus(kind=result.kind, status=result.status, summary=result.summary))
            status = result.status if result.status in STATUS_RANK else "failed"
            if result.status not in STATUS_RANK:
                warnings.append(f"{result.source}: unknown status {result.status!r}, counted as failed")
            if status == "skipped" and result.kind in INFORMATIONAL_KINDS:
                status = "passed"
            rank = STATUS_RANK[status]
            if rank > worst:
                worst, worst_status = rank, status
                reason = "" if status == "passed" else f"{result.kind}: {result.summary}".rstrip(": ")
            if result.kind == "test":
                found, (p, f, s) = _test_failures(result, required)
                passed, failed, skipped = passed + p, failed + f, skipped + s
                failures.extend(found)
            elif result.kind == "kernels":
                failures.extend(_kernel_failures(result, required))
            elif result.kind == "abi":
                abi_findings.extend(_abi_findings(result))
                abi_results.append(result)
            elif result.kind == "coverage":
                coverage_results.append(result)
            elif result.kind not in ("build", "probe"):
                other.append(result)
            if status in ("failed", "crashed", "fallback") and not any(
                f.cell_id == cell_id and f.kind == result.kind for f in failures
            ):
                failures.append(
                    Failure(
                        cell_id=cell_id,
                        kind=result.kind,
                        name=result.kind,
                        outcome=status,
                        message=result.summary,
                        log_tail=_tail_of(result.data),
                        required=required,
                    )
                )
        if not cell_results:
            reason = "no result: the job did not run or its artifact was not uploaded"
        cell = CellReport(
            **{k: v for k, v in spec.items() if k not in ("required", "planned")},
            required=required,
            planned=spec["planned"],
            status=worst_status,  # type: ignore[arg-type]
            reason=reason,
            stages=tuple(stages),
            tests_passed=passed,
            tests_failed=failed,
            tests_skipped=skipped,
        )
        cells.append(cell)
        if cell.status == "missing" and required:
            failures.append(
                Failure(cell_id=cell_id, kind="cell", name="no result", outcome="missing", message=reason, required=True)
            )
        if cell.status != "passed":
            text = f"{cell_id}: {cell.status}" + (f" ({reason})" if reason else "")
            (problems if required else warnings).append(text if required else f"optional cell {text}")

    for result in global_results:
        if result.kind == "abi":
            abi_findings.extend(_abi_findings(result))
            abi_results.append(result)
        elif result.kind == "coverage":
            coverage_results.append(result)
        else:
            other.append(result)
        if result.status in ("failed", "crashed", "fallback") or result.status not in STATUS_RANK:
            problems.append(f"{result.kind}: {result.status}" + (f" ({result.summary})" if result.summary else ""))
            failures.append(
                Failure(
                    cell_id=None,
                    kind=result.kind,
                    name=result.kind,
                    outcome=result.status,
                    message=result.summary,
                    log_tail=_tail_of(result.data),
                )
            )

    abi = None
    if abi_results:
        bump = max((f.required_bump for f in abi_findings), key=BUMP_ORDER.__getitem__, default="none")
        for r in abi_results:
            declared = r.data.get("required_bump")
            if isinstance(declared, str) and declared in BUMP_ORDER and BUMP_ORDER[declared] > BUMP_ORDER[bump]:
                bump = declared
        worst_abi = max(abi_results, key=lambda r: STATUS_RANK.get(r.status, 3))
        abi_findings.sort(key=lambda f: (-BUMP_ORDER[f.required_bump], f.library, f.display_symbol))
        abi = AbiSection(
            required_bump=bump,  # type: ignore[arg-type]
            findings=tuple(abi_findings),
            status=worst_abi.status,
            summary="; ".join(r.summary for r in abi_results if r.summary),
        )

    coverage = None
    if coverage_results:
        # The merged (cell-less) coverage result wins over per-cell ones.
        chosen = next((r for r in coverage_results if r.cell_id is None), coverage_results[-1])
        coverage = _coverage(chosen)
        if (
            coverage.diff_threshold is not None
            and coverage.diff_percent is not None
            and coverage.diff_percent < coverage.diff_threshold
            and chosen.status == "passed"
        ):
            warnings.append(
                f"diff coverage {coverage.diff_percent:.1f}% is below the threshold {coverage.diff_threshold:.1f}%"
            )

    # Failures first: required before optional, crashes before failures, then by cell and name.
    order = {"crashed": 0, "missing": 1, "failed": 2, "fallback": 3}
    failures.sort(key=lambda f: (not f.required, order.get(f.outcome, 2), f.cell_id or "", f.name))
    cells.sort(key=lambda c: (c.python, c.platform, c.arch, c.backend, c.toolkit or "", c.frameworks, c.id))

    if problems:
        conclusion = "failure"
    elif not all_results and not cells:
        conclusion = "neutral"
        notes_list.append("no results were found")
    elif cells and all(c.status == "skipped" for c in cells):
        conclusion = "neutral"
    else:
        conclusion = "success"
    counts: dict[str, int] = {}
    for c in cells:
        counts[c.status] = counts.get(c.status, 0) + 1
    parts = [f"{n} {status}" for status, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    headline = {
        "failure": "failed",
        "success": "passed",
        "neutral": "nothing conclusive ran",
    }[conclusion] + (f": {len(cells)} cell{'' if len(cells) == 1 else 's'}, " + ", ".join(parts) if cells else "")
    if abi is not None:
        headline += f"; ABI: {abi.required_bump} bump" if abi.required_bump != "none" else "; ABI: no change"
    if coverage is not None and coverage.percent is not None:
        headline += f"; coverage {coverage.percent:.1f}%"
    return Report(
        title=title,
        conclusion=conclusion,  # type: ignore[arg-type]
        headline=headline,
        cells=tuple(cells),
        failures=tuple(failures),
        problems=tuple(problems),
        warnings=tuple(warnings),
        abi=abi,
        coverage=coverage,
        other=tuple(other),
        notes=tuple(notes_list),
        artifact_url=artifact_url,
    )
