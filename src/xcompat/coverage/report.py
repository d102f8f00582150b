"""Assemble the merged coverage report: JSON document, Cobertura XML and Markdown."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xcompat.coverage.cobertura import GITLAB_COBERTURA_LIMITS, render_cobertura
from xcompat.coverage.markdown import DEFAULT_MAX_FILE_ROWS, render_markdown
from xcompat.coverage.merge import MergeResult, diff_coverage, file_record, language_totals, merge_cells
from xcompat.coverage.model import percent
from xcompat.coverage.thresholds import Thresholds, evaluate

REPORT_VERSION = 1
COBERTURA_NAME = "coverage.xml"
JSON_NAME = "coverage.json"
MARKDOWN_NAME = "coverage.md"


@dataclass(frozen=True, kw_only=True)
class MergeOptions:
    cell_files: tuple[Path, ...]
    repo: Path
    base_ref: str | None = None
    thresholds: Thresholds = field(default_factory=Thresholds)
    cobertura_source: str | None = None
    cobertura_max_bytes: int = GITLAB_COBERTURA_LIMITS["max_bytes"]
    strict: bool = False
    max_file_rows: int = DEFAULT_MAX_FILE_ROWS


@dataclass(frozen=True)
class MergedReport:
    document: dict[str, Any]
    cobertura: str
    markdown: str
    result: MergeResult


def merge_coverage(options: MergeOptions, *, changed: dict[str, tuple[int, ...]] | None = None) -> MergedReport:
    """Merge the cell files and render every output (``changed``: lines from the diff, if any)."""
    result = merge_cells(options.cell_files)
    files = [file_record(result.files[p]) for p in sorted(result.files)]
    valid, covered = result.valid, result.covered
    overall = percent(covered, valid)
    diff_doc = _diff_document(result, changed, options.base_ref) if changed is not None else None
    diff_pct = diff_doc["percent"] if diff_doc is not None else None
    checks = evaluate(options.thresholds, overall, diff_pct, diff_known=changed is not None)
    failed = [c for c in checks if not c.passed]
    status = "failed" if failed or (options.strict and result.errors) else "passed"
    pieces = [
        f"{covered}/{valid} lines"
        + (f" ({overall:.2f} %)" if overall is not None else "")
        + f" in {len(files)} files from {len(result.cells)} cells"
    ]
    if diff_doc is not None:
        pieces.append(
            "diff " + (f"{diff_pct:.2f} %" if diff_pct is not None else "n/a (no executable changes)")
        )
    if failed:
        pieces.append("failed: " + "; ".join(c.reason for c in failed))
    if result.errors:
        pieces.append(f"{len(result.errors)} unreadable input(s)" + (" (--strict)" if options.strict else ""))
    source = options.cobertura_source or str(options.repo.resolve())
    changed_paths = frozenset(changed) if changed is not None else None
    cob = render_cobertura(
        result.files.values(),
        source=source,
        changed_paths=changed_paths,
        max_bytes=options.cobertura_max_bytes,
    )
    document: dict[str, Any] = {
        "version": REPORT_VERSION,
        "kind": "coverage",
        "cell_id": None,
        "status": status,
        "summary": "; ".join(pieces),
        "totals": {"files": len(files), "lines_valid": valid, "lines_covered": covered, "percent": overall},
        "languages": language_totals(result),
        "cells": _cell_rows(result),
        "thresholds": {
            "overall": options.thresholds.overall,
            "diff": options.thresholds.diff,
            "source": options.thresholds.source,
        },
        "gate": [c.to_dict() for c in checks],
        "diff": diff_doc,
        "files": files,
        "cobertura": {
            "path": COBERTURA_NAME,
            "source": source,
            "files_written": cob.files_written,
            "files_omitted": cob.files_omitted,
            "bytes": len(cob.xml.encode("utf-8")),
            "limits": dict(GITLAB_COBERTURA_LIMITS),
            "omitted_reason": cob.reason,
        },
        "warnings": list(result.warnings),
        "errors": [e.to_dict() for e in result.errors],
    }
    markdown = render_markdown(document, max_file_rows=options.max_file_rows)
    return MergedReport(document, cob.xml, markdown, result)


def _diff_document(result: MergeResult, changed: dict[str, tuple[int, ...]], base_ref: str | None) -> dict[str, Any]:
    """The report's ``diff``: the coverage of the lines the change touches, per file."""
    dfiles = diff_coverage(result, changed)
    dvalid = sum(d.valid for d in dfiles)
    dcovered = sum(d.covered for d in dfiles)
    return {
        "base_ref": base_ref or "",
        "lines_valid": dvalid,
        "lines_covered": dcovered,
        "percent": percent(dcovered, dvalid),
        "files": [
            {
                "path": d.path,
                "language": d.language,
                "measured": d.measured,
                "changed_lines": d.changed,
                "lines_valid": d.valid,
                "lines_covered": d.covered,
                "percent": percent(d.covered, d.valid),
                "uncovered_ranges": d.uncovered_ranges,
            }
            for d in dfiles
        ],
    }


def _cell_rows(result: MergeResult) -> list[dict[str, Any]]:
    return [
        {
            "cell_id": c.cell_id,
            "source": c.source,
            "status": c.status,
            "files": c.files,
            "lines_valid": c.valid,
            "lines_covered": c.covered,
            "percent": percent(c.covered, c.valid),
        }
        for c in result.cells
    ]


def cell_sources(paths: Sequence[Path]) -> tuple[Path, ...]:
    """Expand folders into the ``*.json`` files inside them (sorted), keep files as given."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(sorted(p.rglob("*.json")))
        else:
            out.append(p)
    return tuple(out)


def read_merged_report(path: str | Path) -> dict[str, Any]:
    """Read and validate a ``coverage.json`` written by ``coverage merge`` (for the report and the gate)."""
    from xcompat.jsonio import read_json

    document: dict[str, Any] = read_json(path, schema="coverage")
    return document
