"""How report facts are named and ordered for people; shared by the Markdown, HTML and text renderers.

* versions sort as versions (``packaging.version``): torch 2.5 before 2.13;
* the grid is one row per device and framework combination and one column per Python,
  so each framework version is named once, and versions common to every cell are named
  once for the whole grid;
* a cell shows its stages ("tests ✅ 6/6 · abi ❌") and the versions it actually ran
  when they differ from its label;
* ABI findings are grouped by kind and library, with readable titles and short
  library names, duplicates merged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from xcompat.report.model import BUMP_ORDER, STATUS_SYMBOL, AbiFinding, CellReport, FileCoverage, Report
from xcompat.results.stages import STAGES, display_rank

LANGUAGE_NAMES = {
    "c": "C",
    "cpp": "C++",
    "c++": "C++",
    "cxx": "C++",
    "cuda": "CUDA",
    "cu": "CUDA",
    "hip": "HIP",
    "python": "Python",
    "py": "Python",
    "cython": "Cython",
    "objc": "Objective-C",
    "objcpp": "Objective-C++",
    "metal": "Metal",
    "rust": "Rust",
    "fortran": "Fortran",
}
ABI_TITLES = {
    "symbol_removed": "Exported symbols removed",
    "symbol_moved": "Exported symbols moved to a library they load",
    "symbol_added": "Exported symbols added",
    "symbol_version_removed": "Symbol versions removed",
    "symbol_version_added": "Symbol versions added",
    "symbol_type_changed": "Symbol types changed",
    "needed_added": "New shared-library dependencies",
    "needed_removed": "Shared-library dependencies dropped",
    "glibc_floor_raised": "glibc floor raised",
    "abi3_floor_raised": "Limited API (abi3) floor raised",
    "abi3_lost": "No longer abi3",
    "requires_python_narrowed": "Requires-Python narrowed",
    "python_api_removed": "Python API removed",
    "python_api_added": "Python API added",
    "python_signature_changed": "Python signatures changed incompatibly",
    "python_signature_extended": "Python signatures extended",
    "torch_op_schema_changed": "Torch op schemas changed",
    "torch_op_removed": "Torch ops removed",
    "torch_op_added": "Torch ops added",
    "cuda_arch_dropped": "CUDA architectures dropped",
    "cuda_arch_added": "CUDA architectures added",
    "wheel_tag_dropped": "Wheel tags dropped",
    "wheel_tag_added": "Wheel tags added",
    "library_removed": "Shared libraries removed",
    "library_added": "Shared libraries added",
    "symbol_versioning_added": "Symbol versioning introduced",
    "symbol_versioning_removed": "Symbol versioning dropped",
    "object_size_changed": "Exported object sizes changed",
    "vtable_size_changed": "Vtable sizes changed",
    "soname_changed": "SONAME changed",
    "rpath_changed": "Library search paths changed",
    "rpath_absolute_added": "Absolute library search paths added",
    "libstdcxx_floor_raised": "libstdc++ floor raised",
    "cxxabi_floor_raised": "C++ ABI (CXXABI) floor raised",
    "floor_raised_within_tag": "Floors raised within the wheel tag's promise",
    "macos_target_raised": "macOS deployment target raised",
    "requires_python_widened": "Requires-Python widened",
    "requires_dist_narrowed": "Dependency requirements narrowed",
    "requires_dist_floor_raised": "Dependency floors raised",
    "requires_dist_added": "Dependencies added",
    "requires_dist_removed": "Dependencies dropped",
    "numpy_capi_target_changed": "NumPy C-API target changed",
    "python_api_unverified": "Python API changes not verified at run time",
    "abidiff_incompatible": "abidiff: incompatible changes",
    "abidiff_changed": "abidiff: compatible changes",
}
# Findings whose fix is to bring something back ("restore X") rather than to undo a change.
RESTORABLE_KINDS = frozenset(
    {
        "symbol_removed",
        "symbol_version_removed",
        "python_api_removed",
        "torch_op_removed",
        "cuda_arch_dropped",
        "wheel_tag_dropped",
        "needed_removed",
    }
)
_SO_SUFFIX = re.compile(
    r"(\.cpython-[^.]+|\.abi3|\.cp\d+[^.]*|\.pypy[^.]*)?(\.so(\.[\d.]+)?|\.pyd|\.dylib|\.dll)$"
)


def version_key(text: str) -> tuple[int, Version | str]:
    """Sort key ordering version strings as versions (2.5 < 2.13), anything else after them."""
    cleaned = text.strip().removesuffix("t")
    try:
        return (0, Version(cleaned))
    except InvalidVersion:
        return (1, text)


def python_key(version: str) -> tuple[int, Version | str, int]:
    kind, key = version_key(version)
    return (kind, key, 1 if version.endswith("t") else 0)


def framework_text(pairs: Iterable[tuple[str, str]]) -> str:
    return " ".join(f"{name} {version}" for name, version in pairs)


def status_symbol(status: str) -> str:
    return STATUS_SYMBOL.get(status, "❔")


def short_library(path: str) -> str:
    """``x86_64/sample_ext/_core.cpython-311-x86_64-linux-gnu.so`` -> ``_core``; ``(wheel)`` -> ``wheel``."""
    if not path:
        return "—"
    if path.startswith("(") and path.endswith(")"):
        return path[1:-1]
    name = path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    short = _SO_SUFFIX.sub("", name)
    return (
        short.removeprefix("lib")
        if short.startswith("lib") and short != "lib" and "." not in short
        else short or name
    )


def language_name(key: str) -> str:
    return LANGUAGE_NAMES.get(key.lower(), key)


def abi_title(kind: str) -> str:
    return ABI_TITLES.get(kind.replace("-", "_"), kind.replace("_", " ").replace("-", " ").capitalize())


# -- the grid ----------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class GridRow:
    device: str
    frameworks: str  # the frameworks that vary between cells, named once for the row
    cells: dict[str, CellReport]  # python -> cell


@dataclass(frozen=True, kw_only=True)
class Grid:
    pythons: tuple[str, ...]
    rows: tuple[GridRow, ...]
    common: tuple[tuple[str, str], ...]  # frameworks every cell has at the same version
    collisions: int  # cells sharing a row and Python with another (shown in the cells list only)


def device_key(cell: CellReport) -> tuple[object, ...]:
    order = {"cpu": 0, "cuda": 1, "rocm": 2, "mps": 3}
    return (
        order.get(cell.backend, 9),
        cell.backend,
        version_key(cell.toolkit or "0"),
        cell.platform,
        cell.arch,
    )


def build_grid(cells: Sequence[CellReport]) -> Grid:
    pythons = tuple(sorted({c.python for c in cells}, key=python_key))
    names = {name for c in cells for name, _ in c.frameworks}
    common: list[tuple[str, str]] = []
    for name in sorted(names):
        values = {dict(c.frameworks).get(name) for c in cells}
        only = next(iter(values)) if len(values) == 1 else None
        if only is not None:
            common.append((name, only))
    common_names = {n for n, _ in common}
    varying = sorted(names - common_names)

    def fw_key(c: CellReport) -> tuple[object, ...]:
        fw = dict(c.frameworks)
        return tuple(version_key(fw.get(n, "")) for n in varying)

    def fw_label(c: CellReport) -> str:
        fw = dict(c.frameworks)
        return framework_text((n, fw[n]) for n in varying if n in fw)

    rows: dict[tuple[str, str], dict[str, CellReport]] = {}
    keys: dict[tuple[str, str], tuple[object, ...]] = {}
    collisions = 0
    for c in cells:
        key = (c.device, fw_label(c))
        keys.setdefault(key, (device_key(c), fw_key(c)))
        slot = rows.setdefault(key, {})
        if c.python in slot:
            collisions += 1
            # The worst one is shown; the cells list has them all.
            if _rank(c) <= _rank(slot[c.python]):
                continue
        slot[c.python] = c
    ordered = sorted(rows, key=lambda k: keys[k])
    return Grid(
        pythons=pythons,
        rows=tuple(GridRow(device=k[0], frameworks=k[1], cells=rows[k]) for k in ordered),
        common=tuple(common),
        collisions=collisions,
    )


STATUS_RANK = {"passed": 0, "skipped": 1, "missing": 2, "fallback": 3, "failed": 4, "crashed": 5}


def _rank(cell: CellReport) -> tuple[int, int]:
    return (1 if cell.required else 0, STATUS_RANK.get(cell.status, 4))


@dataclass(frozen=True, kw_only=True)
class StagePart:
    kind: str
    status: str
    detail: str  # "6/6" for tests, "" otherwise


def stage_parts(cell: CellReport) -> list[StagePart]:
    """The stages a grid cell names, in the order of the table of stage kinds: tests always (with
    counts), others when present and not quiet (``StageKind.quiet``: named only when they did not pass)."""
    parts = []
    for stage in sorted(cell.stages, key=lambda s: display_rank(s.kind)):
        kind = STAGES.get(stage.kind)
        if kind is not None and kind.quiet and stage.status in ("passed", "skipped"):
            continue
        detail = ""
        if stage.kind == "test":
            ran = cell.tests_passed + cell.tests_failed
            detail = (
                f"{cell.tests_passed}/{ran}" if ran else ("no tests" if stage.status != "skipped" else "")
            )
            if cell.tests_not_run:
                detail = f"{detail}, {cell.tests_not_run} not run" if detail else f"{cell.tests_not_run} not run"
        parts.append(
            StagePart(
                kind=kind.shown_as if kind is not None else stage.kind, status=stage.status, detail=detail
            )
        )
    return parts


def stage_text(cell: CellReport) -> str:
    """ "tests ✅ 6/6 · abi ❌"; a cell without results says why."""
    if cell.status == "missing":
        return "no result"
    parts = stage_parts(cell)
    if not parts:
        return cell.status
    return " · ".join(
        f"{p.kind} {status_symbol(p.status)}{(' ' + p.detail) if p.detail else ''}" for p in parts
    )


def tested_note(cell: CellReport) -> str:
    diffs = cell.tested_differences
    return ("ran " + ", ".join(f"{name} {tested}" for name, _, tested in diffs)) if diffs else ""


# -- ABI ---------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class AbiItem:
    """One change, merged over the libraries (and cells) where it appears identically."""

    symbol: str
    detail: str
    libraries: tuple[str, ...]  # full paths, for hover

    @property
    def short_libraries(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for lib in self.libraries:
            seen.setdefault(short_library(lib), None)
        return tuple(seen)


@dataclass(frozen=True, kw_only=True)
class AbiGroup:
    kind: str
    title: str
    bump: str
    items: tuple[AbiItem, ...]
    count: int  # findings before merging duplicates

    @property
    def restorable(self) -> bool:
        return self.kind.replace("-", "_") in RESTORABLE_KINDS


def _strip_library(detail: str, library: str) -> str:
    """The finding's detail without its library's name, so the same change in two libraries merges."""
    return detail.replace(library, "…") if library and "/" in library and library in detail else detail


def group_abi(findings: Sequence[AbiFinding]) -> list[AbiGroup]:
    groups: dict[tuple[str, str], dict[tuple[str, str], list[AbiFinding]]] = {}
    counts: dict[tuple[str, str], int] = {}
    for f in findings:
        key = (f.required_bump, f.kind)
        counts[key] = counts.get(key, 0) + 1
        item_key = (f.display_symbol, _strip_library(f.message, f.library))
        groups.setdefault(key, {}).setdefault(item_key, []).append(f)
    out = []
    for (bump, kind), items in groups.items():
        merged = []
        for (symbol, detail), found in items.items():
            libs: dict[str, None] = {}
            for f in found:
                libs.setdefault(f.library, None)
            merged.append(AbiItem(symbol=symbol, detail=detail, libraries=tuple(libs)))
        merged.sort(key=lambda i: (i.short_libraries, i.symbol))
        out.append(
            AbiGroup(
                kind=kind, title=abi_title(kind), bump=bump, items=tuple(merged), count=counts[(bump, kind)]
            )
        )
    out.sort(key=lambda g: (-BUMP_ORDER.get(g.bump, 0), g.title))
    return out


# -- coverage ----------------------------------------------------------------------------------
def worst_files(files: Sequence[FileCoverage]) -> list[FileCoverage]:
    return sorted(files, key=lambda f: (f.percent if f.percent is not None else 101.0, f.path))


def ranges_text(f: FileCoverage, limit: int = 12) -> str:
    parts = [f"{a}" if a == b else f"{a}-{b}" for a, b in f.uncovered[:limit]]
    if len(f.uncovered) > limit:
        parts.append(f"… +{len(f.uncovered) - limit}")
    return ", ".join(parts)


def pct(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.1f}%"


# -- counts ------------------------------------------------------------------------------------
def test_totals(report: Report) -> tuple[int, int, int]:
    """(passed, failed, skipped) over every cell."""
    return (
        sum(c.tests_passed for c in report.cells),
        sum(c.tests_failed for c in report.cells),
        sum(c.tests_skipped for c in report.cells),
    )


def outcome_parts(report: Report) -> list[str]:
    """The counts after the cells' (tests, ABI, coverage), each said once; plain text for every renderer."""
    parts = []
    passed, failed, skipped = test_totals(report)
    not_run = sum(c.tests_not_run for c in report.cells)
    if passed or failed:
        parts.append(f"tests {passed}/{passed + failed} passed" + (f", {skipped} skipped" if skipped else "")
                     + (f", {not_run} not run (collection failed)" if not_run else ""))
    elif not_run:
        parts.append(f"tests: {not_run} not run (collection failed)")
    if report.abi is not None and not report.abi.compared:
        parts.append("ABI not compared")
    elif report.abi is not None:
        parts.append(
            f"ABI {report.abi.required_bump} bump" if report.abi.required_bump != "none" else "ABI unchanged"
        )
    if report.coverage is not None and report.coverage.percent is not None:
        cov = report.coverage
        diff = f", diff {pct(cov.diff_percent)}" if cov.diff_percent is not None else ""
        parts.append(f"coverage {pct(cov.percent)}{diff}")
    return parts


def verdict_text(report: Report, gating_problems: int) -> str:
    """The headline's verdict: what keeps the report red, or why it is green (``gating_problems``:
    the problems that decide it, else all of them)."""
    if report.conclusion == "success":
        required = sum(1 for c in report.cells if c.required)
        text = f"all {required} required cells passed" if required else "passed"
        elsewhere = sum(1 for c in report.not_run_here if c.required)
        if elsewhere:
            text += f" here; {elsewhere} more required cell{'s' if elsewhere != 1 else ''} not run here"
        return text
    if report.conclusion == "neutral":
        return "nothing conclusive ran"
    n = gating_problems or len(report.problems)
    return f"{n} problem{'s' if n != 1 else ''} keep{'s' if n == 1 else ''} this red" if n else "failed"
