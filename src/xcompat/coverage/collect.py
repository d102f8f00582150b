"""``coverage collect``: gather one cell's Python and native coverage under repository paths."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xcompat.coverage.languages import is_cython_generated, language_of
from xcompat.coverage.model import CellCoverage, FileLines, InputProblem, Unmapped, percent
from xcompat.coverage.paths import PathMap, PathMapper
from xcompat.errors import InputError, UsageError

ARTIFACT_VERSION = 1
# How many unmapped paths an artifact lists by name (the total is always recorded).
UNMAPPED_LISTED = 50


@dataclass(frozen=True, kw_only=True)
class CollectOptions:
    cell_id: str | None
    source_root: Path
    python_data: tuple[Path, ...] = ()
    gcov_roots: tuple[Path, ...] = ()
    maps: tuple[PathMap, ...] = ()
    gcov_executable: str | None = None
    coverage_config: str | None = None  # None: find the project's own; "" for none
    include_cython_generated: bool = False


@dataclass
class _Collected:
    """What the inputs of one cell gave so far."""

    lines: dict[str, tuple[str, dict[int, int]]] = field(default_factory=dict)  # repo path -> (origin, hits)
    unmapped: list[Unmapped] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[InputProblem] = field(default_factory=list)
    tools: dict[str, str] = field(default_factory=dict)


def collect(options: CollectOptions) -> CellCoverage:
    """Read every input of one cell; unreadable inputs are recorded, not fatal."""
    if not options.python_data and not options.gcov_roots:
        raise UsageError("nothing to collect: give --python-data and/or --gcov-root")
    root = options.source_root.resolve()
    if not root.is_dir():
        raise UsageError(f"--source-root {options.source_root} is not a folder")
    mapper = PathMapper(root, options.maps)
    into = _Collected()
    if options.python_data:
        _collect_python(options, root, mapper, into)
    _collect_native(options, root, mapper, into)

    files = []
    for path in sorted(into.lines):
        origin, counts = into.lines[path]
        lines = sorted(counts)
        files.append(
            FileLines(path, language_of(path), origin, tuple(lines), tuple(counts[n] for n in lines))
        )
    unmapped = sorted(into.unmapped, key=lambda u: u.recorded)
    return CellCoverage(
        cell_id=options.cell_id,
        source_root=str(root),
        files=tuple(files),
        tools=tuple(sorted(into.tools.items())),
        unmapped=tuple(unmapped[:UNMAPPED_LISTED]),
        unmapped_total=len(unmapped),
        warnings=tuple(into.warnings),
        errors=tuple(into.errors),
    )


def _collect_python(options: CollectOptions, root: Path, mapper: PathMapper, into: _Collected) -> None:
    """coverage.py's data files: each statement executed or not (0/1 per cell)."""
    from xcompat.coverage import python_data

    into.tools["coverage.py"] = python_data.coverage_version()
    if options.coverage_config is None:
        config: str | bool = python_data.find_config(root)
    else:
        config = options.coverage_config or False

    def locate(recorded: str) -> str | None:
        if os.path.isfile(recorded):
            return recorded
        m = mapper.map(recorded)
        return str(root / m.repo_path) if m.repo_path else None

    for data_file in _expand_data_files(options.python_data):
        try:
            for measured in python_data.read_python_data(
                data_file, config=config, locate=locate, warn=into.warnings.append
            ):
                m = mapper.map(measured.recorded)
                if m.repo_path is None:
                    into.unmapped.append(Unmapped(measured.recorded, "coverage.py", m.reason))
                    continue
                _origin, counts = into.lines.setdefault(m.repo_path, ("coverage.py", {}))
                executed = measured.executed
                for n in measured.statements:
                    # 0/1 per cell, also over several parallel-mode data files
                    counts[n] = 1 if n in executed or counts.get(n) else 0
        except InputError as exc:
            into.errors.append(InputProblem(str(data_file), options.cell_id, exc.message))


def _collect_native(options: CollectOptions, root: Path, mapper: PathMapper, into: _Collected) -> None:
    """gcovr's report of each build folder: hit counts, summed."""
    from xcompat.coverage import native

    for build_dir in options.gcov_roots:
        into.tools["gcovr"] = native.gcovr_version()
        try:
            build = build_dir.resolve()
            gcovr_root = native.gcovr_root(build, root)
            document = native.run_gcovr(build, root=gcovr_root, gcov_executable=options.gcov_executable)
            for native_file in native.native_files(document, source=str(build_dir)):
                m = mapper.map(native_file.recorded, base=gcovr_root)
                if m.repo_path is None:
                    into.unmapped.append(Unmapped(native_file.recorded, "gcovr", m.reason))
                    continue
                if not native_file.lines:
                    continue  # no executable lines (declarations only)
                if not options.include_cython_generated and _cython_generated(root / m.repo_path):
                    continue
                _origin, counts = into.lines.setdefault(m.repo_path, ("gcovr", {}))
                for n, c in native_file.lines.items():
                    counts[n] = counts.get(n, 0) + c
        except InputError as exc:
            into.errors.append(InputProblem(exc.file or str(build_dir), options.cell_id, exc.message))


def _expand_data_files(paths: tuple[Path, ...]) -> list[Path]:
    """Data files as given; a folder stands for its ``.coverage`` and ``.coverage.*`` files."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(sorted(q for q in p.iterdir() if q.name == ".coverage" or q.name.startswith(".coverage.")))
        else:
            out.append(p)
    return out


def _cython_generated(path: Path) -> bool:
    if language_of(str(path)) not in ("c", "cpp"):
        return False
    try:
        with open(path, "rb") as fh:
            return is_cython_generated(fh.read(400))
    except OSError:
        return False


def cell_status(cell: CellCoverage) -> tuple[str, str]:
    valid = sum(len(f.lines) for f in cell.files)
    covered = sum(f.covered for f in cell.files)
    pct = percent(covered, valid)
    text = f"{len(cell.files)} files, {covered}/{valid} lines" + (f" ({pct:.2f}%)" if pct is not None else "")
    if cell.errors:
        return "failed", f"{len(cell.errors)} coverage input(s) unreadable; {text}"
    if not cell.files:
        return "failed", "no coverage data mapped to repository files"
    return "passed", text


def cell_to_document(cell: CellCoverage) -> dict[str, Any]:
    status, summary = cell_status(cell)
    return {
        "version": ARTIFACT_VERSION,
        "kind": "coverage",
        "cell_id": cell.cell_id,
        "status": status,
        "summary": summary,
        "source_root": cell.source_root,
        "tools": dict(cell.tools),
        "files": {
            f.path: {"language": f.language, "origin": f.origin, "lines": list(f.lines), "hits": list(f.hits)}
            for f in cell.files
        },
        "unmapped": [{"path": u.recorded, "origin": u.origin, "reason": u.reason} for u in cell.unmapped],
        "unmapped_total": cell.unmapped_total,
        "warnings": list(cell.warnings),
        "errors": [e.to_dict() for e in cell.errors],
    }


def parse_maps(texts: Sequence[str]) -> tuple[PathMap, ...]:
    return tuple(PathMap.parse(t) for t in texts)
