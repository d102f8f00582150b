"""Report artifacts for forges' own widgets: JUnit XML and GitLab Code Quality JSON.

* JUnit XML (GitLab ``artifacts:reports:junit``, any JUnit viewer): one ``<testsuite>``
  per cell. GitLab keeps only the first test with a duplicate name, so every test's
  ``classname`` starts with its cell id. A missing required cell is a failed test case,
  so the widget cannot show a lane that never ran as green.
* Code Quality JSON (GitLab ``artifacts:reports:codequality``): one issue per distinct
  ABI finding, following GitLab's documented format (``schemas/codequality.schema.json``).

Cobertura is not re-derived here: the coverage stage writes it from the real line data;
``xcompat report --gitlab`` copies the file a coverage result names.
"""

from __future__ import annotations

import hashlib
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from typing import Any, NamedTuple

from xcompat.neutralise import FIELD_CHARS, MESSAGE_CHARS, cap
from xcompat.report.case_text import case_location, case_tail
from xcompat.report.model import CellReport, Report
from xcompat.results import kinds as K
from xcompat.results.stage_result import StageResult

# ABI bump -> GitLab Code Quality severity (info, minor, major, critical, blocker).
CODEQUALITY_SEVERITY = {"major": "critical", "minor": "minor", "patch": "info", "none": "info"}
_FAIL_OUTCOMES_AS_ERROR = {"crashed", "error", "timeout", "hang", "leaked"}
# Characters XML 1.0 cannot carry; log tails of crashed native code contain them.
_XML_BAD = dict.fromkeys([c for c in range(0x20) if c not in (0x9, 0xA, 0xD)], "\ufffd")


def _clean(text: str, limit: int = MESSAGE_CHARS) -> str:
    """Text from a result as XML can carry it, capped like every field from a result."""
    return cap(text, limit).translate(_XML_BAD)


class _JUnitCase(NamedTuple):
    """One test case of a suite: a test, a kernel, or a stage that ran none."""

    name: str
    outcome: str
    message: str
    seconds: float
    file: str | None
    line: int | None
    tail: str


def _junit_cases(result: StageResult) -> list[_JUnitCase]:
    items: list[_JUnitCase] = []
    if result.kind == "test":
        for c in K.test_cases(result):
            file, line = case_location(c)
            items.append(_JUnitCase(c.nodeid, c.outcome, c.message or c.crash_text or c.outcome, c.duration_s or 0.0,
                                    file, line, case_tail(c)))
    else:
        for k in K.kernel_results(result):
            items.append(_JUnitCase(k.name, k.status, k.status, 0.0, None, None, ""))
    if not items and result.status in ("failed", "crashed", "fallback", "skipped"):
        items = [_JUnitCase(result.kind, result.status, result.summary or result.status, 0.0, None, None, "")]
    return items


def _missing_cell_case(suite: ET.Element, cell: CellReport, counts: dict[str, int]) -> None:
    """A cell without a result: a failed case when it is required, a skipped one when not."""
    case = ET.SubElement(suite, "testcase", classname=_clean(cell.id), name="cell ran", time="0")
    counts["tests"] += 1
    if cell.required:
        ET.SubElement(case, "failure", message="missing", type="missing").text = _clean(cell.reason)
        counts["failures"] += 1
    else:
        ET.SubElement(case, "skipped", message=_clean("optional cell missing: " + cell.reason))
        counts["skipped"] += 1


def _add_case(suite: ET.Element, cell_id: str, item: _JUnitCase, counts: dict[str, int]) -> None:
    module, _, short = item.name.rpartition("::")
    classname = f"{cell_id}.{module.replace('/', '.').removesuffix('.py')}" if module else cell_id
    attrs = {"classname": _clean(classname, FIELD_CHARS), "name": _clean(short or item.name, FIELD_CHARS),
             "time": f"{item.seconds:.3f}"}
    if item.file:
        attrs["file"] = _clean(item.file)
    if item.line:
        attrs["line"] = str(item.line)
    case = ET.SubElement(suite, "testcase", attrs)
    counts["tests"] += 1
    outcome, message = item.outcome, item.message
    if outcome in ("passed", "xfailed", "xpassed", "xfail"):
        pass
    elif outcome in ("skipped", "deselected"):
        ET.SubElement(case, "skipped", message=_clean(message, 1000))
        counts["skipped"] += 1
    elif outcome in _FAIL_OUTCOMES_AS_ERROR:
        ET.SubElement(case, "error", message=_clean(message, 1000), type=outcome).text = _clean(item.tail)
        counts["errors"] += 1
    else:
        ET.SubElement(case, "failure", message=_clean(message, 1000), type=outcome).text = _clean(item.tail)
        counts["failures"] += 1


def junit_xml(report: Report, results: Iterable[StageResult]) -> str:
    by_cell: dict[str, list[StageResult]] = {}
    for r in results:
        if r.kind in ("test", "kernels"):
            by_cell.setdefault(r.cell_id or "global", []).append(r)
    root = ET.Element("testsuites", name=_clean(report.title))
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total_time = 0.0
    cells = {c.id: c for c in report.cells}
    ids = list(cells) + [k for k in by_cell if k not in cells]
    for cell_id in ids:
        suite = ET.SubElement(root, "testsuite", name=_clean(cell_id))
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        suite_time = 0.0
        cell = cells.get(cell_id)
        if cell is not None and cell.status == "missing":
            _missing_cell_case(suite, cell, counts)
        for result in by_cell.get(cell_id, []):
            for item in _junit_cases(result):
                suite_time += item.seconds
                _add_case(suite, cell_id, item, counts)
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", f"{suite_time:.3f}")
        total_time += suite_time
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{total_time:.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def codequality(report: Report) -> list[dict[str, Any]]:
    """GitLab Code Quality issues for the report's ABI findings (deduplicated across cells)."""
    if report.abi is None:
        return []
    issues: dict[str, dict[str, Any]] = {}
    for f in report.abi.findings:
        key = f"{f.kind}\0{f.library}\0{f.symbol}"
        fingerprint = hashlib.sha256(key.encode("utf-8")).hexdigest()
        if fingerprint in issues:
            continue
        what = f.display_symbol or f.library or f.kind
        description = f"ABI {f.kind}: {what}" + (f" in {f.library}" if f.library and f.display_symbol else "")
        description += f" (requires a {f.required_bump} version bump)" if f.required_bump != "none" else ""
        if f.message:
            description += f": {f.message}"
        description = cap(description, MESSAGE_CHARS)
        issues[fingerprint] = {
            "type": "issue",
            "description": description,
            "check_name": f"xcompat-abi/{f.kind}",
            "fingerprint": fingerprint,
            "severity": CODEQUALITY_SEVERITY[f.required_bump],
            "categories": ["Compatibility"],
            "location": {
                "path": (f.file or f.library or "pyproject.toml").removeprefix("./").lstrip("/") or "pyproject.toml",
                "lines": {"begin": f.line or 1},
            },
        }
    return list(issues.values())
