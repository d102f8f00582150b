"""``coverage merge``: one line covered in any cell counts once.

Hit counts are summed across cells (coverage.py records 0/1 per cell, gcov counts
executions), so a line's ``hits`` in the merged report is "cells that ran it" for Python
and "executions over all cells" for native code; covered means hits > 0.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xcompat.coverage.artifact import guess_cell_id, read_cell_artifact
from xcompat.coverage.languages import LANGUAGES, language_of
from xcompat.coverage.model import InputProblem, percent, uncovered_ranges
from xcompat.errors import InputError


@dataclass
class MergedFile:
    path: str
    language: str
    lines: list[int]
    hits: list[int]
    cells: set[str] = field(default_factory=set)  # cells that covered at least one line

    @property
    def valid(self) -> int:
        return len(self.lines)

    @property
    def covered(self) -> int:
        return len(self.hits) - self.hits.count(0)

    def add(self, lines: list[int], hits: list[int]) -> None:
        if lines == self.lines:
            # Same executable lines (the common case: the same source in every cell).
            self.hits = list(map(operator.add, self.hits, hits))
            return
        counts = dict(zip(self.lines, self.hits, strict=False))
        get = counts.get
        for n, h in zip(lines, hits, strict=False):
            counts[n] = get(n, 0) + h
        self.lines = sorted(counts)
        self.hits = [counts[n] for n in self.lines]


@dataclass
class CellSummary:
    cell_id: str
    source: str
    status: str
    files: int = 0
    valid: int = 0
    covered: int = 0


@dataclass
class MergeResult:
    files: dict[str, MergedFile]
    cells: list[CellSummary]
    errors: list[InputProblem]
    warnings: list[str]

    @property
    def valid(self) -> int:
        return sum(f.valid for f in self.files.values())

    @property
    def covered(self) -> int:
        return sum(f.covered for f in self.files.values())


def merge_cells(paths: Sequence[str | Path]) -> MergeResult:
    """Merge cell artifacts; unreadable ones become ``errors`` and the rest still merges."""
    files: dict[str, MergedFile] = {}
    cells: dict[str, CellSummary] = {}
    errors: list[InputProblem] = []
    warnings: list[str] = []
    for raw_path in paths:
        path = Path(raw_path)
        try:
            document = read_cell_artifact(path)
        except InputError as exc:
            errors.append(InputProblem(str(path), guess_cell_id(path), exc.message))
            continue
        cell_id = document.get("cell_id") or guess_cell_id(path)
        try:
            summary = _merge_one(document, cell_id, files)
        except (TypeError, ValueError) as exc:
            # A record passed the shape checks but holds non-numbers deeper in: the cell is
            # dropped whole (_merge_one checks all numbers before it merges anything).
            errors.append(InputProblem(str(path), cell_id, f"malformed line data ({exc})"))
            continue
        summary.source = str(path)
        summary.status = str(document.get("status", "passed"))
        if cell_id in cells:
            prev = cells[cell_id]
            warnings.append(f"cell {cell_id} appears in {prev.source} and {path}; both are merged")
            prev.files += summary.files
            prev.valid += summary.valid
            prev.covered += summary.covered
        else:
            cells[cell_id] = summary
        # A cell's own warnings (a plugin it lacked, tests with another outcome under coverage)
        # stay visible in the merged result, named by cell.
        warnings.extend(f"{cell_id}: {w}" for w in document.get("warnings") or () if isinstance(w, str))
        for problem in document.get("errors") or ():
            if isinstance(problem, dict):
                errors.append(
                    InputProblem(str(problem.get("file", path)), cell_id, str(problem.get("message", "")))
                )
    return MergeResult(files=files, cells=list(cells.values()), errors=errors, warnings=warnings)


def _merge_one(document: dict[str, Any], cell_id: str, files: dict[str, MergedFile]) -> CellSummary:
    records = document["files"]
    # Check every record's numbers before touching the accumulators, so a bad cell
    # leaves nothing half-merged. sum() runs in C and raises TypeError on non-numbers.
    covered_total = 0
    valid_total = 0
    for record in records.values():
        hits = record["hits"]
        sum(hits)
        sum(record["lines"])
        valid_total += len(hits)
        covered_total += len(hits) - hits.count(0)
    for path, record in records.items():
        lines, hits = record["lines"], record["hits"]
        merged = files.get(path)
        if merged is None:
            merged = files[path] = MergedFile(
                path, record.get("language") or language_of(path), list(lines), list(hits)
            )
        else:
            merged.add(lines, hits)
        if hits.count(0) != len(hits):
            merged.cells.add(cell_id)
    return CellSummary(cell_id, "", "", files=len(records), valid=valid_total, covered=covered_total)


@dataclass(frozen=True)
class DiffFile:
    path: str
    language: str
    measured: bool
    changed: int  # changed lines in the file
    valid: int  # changed lines that are executable
    covered: int
    uncovered_ranges: list[list[int]]


def diff_coverage(result: MergeResult, changed: dict[str, tuple[int, ...]]) -> list[DiffFile]:
    out = []
    for path in sorted(changed):
        lines = changed[path]
        merged = result.files.get(path)
        if merged is None:
            language = language_of(path)
            if language != "other":
                out.append(DiffFile(path, language, False, len(lines), 0, 0, []))
            continue
        wanted = set(lines)
        sel_lines: list[int] = []
        sel_hits: list[int] = []
        ranges: list[list[int]] = []
        run_open = False
        for n, h in zip(merged.lines, merged.hits, strict=False):
            if n not in wanted:
                # An unchanged executable line ends a run of uncovered changed lines.
                run_open = False
                continue
            sel_lines.append(n)
            sel_hits.append(h)
            if h:
                run_open = False
            elif run_open:
                ranges[-1][1] = n
            else:
                ranges.append([n, n])
                run_open = True
        covered = len(sel_hits) - sel_hits.count(0)
        out.append(DiffFile(path, merged.language, True, len(lines), len(sel_lines), covered, ranges))
    return out


def language_totals(result: MergeResult) -> dict[str, dict[str, Any]]:
    totals: dict[str, dict[str, Any]] = {}
    for lang in LANGUAGES:
        members = [f for f in result.files.values() if f.language == lang]
        if not members:
            continue
        valid = sum(f.valid for f in members)
        covered = sum(f.covered for f in members)
        cells = sorted(set().union(*(f.cells for f in members)))
        totals[lang] = {
            "files": len(members),
            "lines_valid": valid,
            "lines_covered": covered,
            "percent": percent(covered, valid),
            "cells": cells,
        }
    return totals


def file_record(f: MergedFile) -> dict[str, Any]:
    return {
        "path": f.path,
        "language": f.language,
        "lines_valid": f.valid,
        "lines_covered": f.covered,
        "percent": percent(f.covered, f.valid),
        "cells": sorted(f.cells),
        "uncovered_ranges": uncovered_ranges(f.lines, f.hits),
    }
