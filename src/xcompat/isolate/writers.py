"""Writers for a ``RunResult``: the versioned JSON document and JUnit XML.

JUnit test names carry the cell id: GitLab keeps one result per (classname, name), so a
matrix that runs the same test in twenty cells would otherwise show one of them.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from xcompat.isolate.outcomes import RunResult, TestRecord

SCHEMA = "test-result"

# XML 1.0 forbids most control characters; test output is full of them (colour codes).
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def result_document(result: RunResult) -> dict[str, Any]:
    document = {
        "version": 1,
        "kind": "test",
        "cell_id": result.cell_id,
        "status": result.status,
        "summary": result.summary(),
        "isolation": result.isolation,
        "start_method": result.start_method,
        "timeout_s": result.timeout_s,
        "duration_s": round(result.duration_s, 3),
        "leak_checks": list(result.leak_checks),
        "deep": result.deep,
        "devices": list(result.devices),
        "warmup": result.warmup,
        "counts": result.counts(),
        "not_run": result.not_run,
        "tests": [record.to_dict() for record in result.records],
        "findings": list(result.findings),
    }
    if result.mapped_libraries is not None:
        document["mapped_libraries"] = result.mapped_libraries
    return document


def write_json_result(path: str | Path, result: RunResult) -> Path:
    from xcompat.jsonio import write_json

    return write_json(path, result_document(result), schema=SCHEMA)


def _clean(text: str) -> str:
    return _XML_ILLEGAL.sub("?", text)


def _split_nodeid(nodeid: str) -> tuple[str, str]:
    """``tests/test_a.py::TestX::test_y[1]`` -> (``tests.test_a.TestX``, ``test_y[1]``)."""
    parts = nodeid.split("::")
    module = parts[0]
    module = module.removesuffix(".py")
    module = module.replace("/", ".").replace("\\", ".")
    classname = ".".join([module, *parts[1:-1]]) if len(parts) > 1 else module
    return classname, parts[-1] if len(parts) > 1 else parts[0]


def junit_testcase(record: TestRecord, cell_id: str | None) -> ET.Element:
    classname, name = _split_nodeid(record.nodeid)
    if cell_id:
        name = f"{name} [{cell_id}]"
    case = ET.Element(
        "testcase", classname=_clean(classname), name=_clean(name), time=f"{record.duration_s:.3f}"
    )
    props = ET.SubElement(case, "properties")
    ET.SubElement(props, "property", name="outcome", value=record.outcome)
    if record.device:
        ET.SubElement(props, "property", name="device", value=record.device)
    if cell_id:
        ET.SubElement(props, "property", name="cell_id", value=cell_id)
    message = _clean(record.message[:500])
    body = _clean(record.longrepr)
    if record.outcome == "failed":
        ET.SubElement(case, "failure", message=message, type="failed").text = body
    elif record.outcome == "leaked":
        ET.SubElement(case, "failure", message=message, type="leaked").text = body or message
    elif record.outcome in ("error", "crashed", "timeout"):
        ET.SubElement(case, "error", message=message, type=record.outcome).text = body
    elif record.outcome in ("skipped", "xfailed"):
        ET.SubElement(case, "skipped", message=message, type=record.outcome)
    if record.output_tail:
        ET.SubElement(case, "system-out").text = _clean(record.output_tail)
    return case


def junit_document(result: RunResult) -> ET.ElementTree:
    counts = result.counts()
    suite_name = f"xcompat test [{result.cell_id}]" if result.cell_id else "xcompat test"
    suites = ET.Element("testsuites")
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=suite_name,
        tests=str(len(result.records)),
        failures=str(counts["failed"] + counts["leaked"]),
        errors=str(counts["error"] + counts["crashed"] + counts["timeout"]),
        skipped=str(counts["skipped"] + counts["xfailed"]),
        time=f"{result.duration_s:.3f}",
    )
    for record in result.records:
        suite.append(junit_testcase(record, result.cell_id))
    return ET.ElementTree(suites)


def write_junit(path: str | Path, result: RunResult) -> Path:
    from xcompat.jsonio import atomic_write_text

    tree = junit_document(result)
    ET.indent(tree)
    root: Any = tree.getroot()
    text = '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
    return atomic_write_text(path, text)
