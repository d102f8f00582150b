"""The report model: one immutable object every renderer and every forge reads.

``build_report`` (in ``aggregate.py``) fills it from the stage results of all cells
and the plan; renderers never look at the raw result files again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from xcompat.report.emulation import Emulation
from xcompat.results.stage_result import StageResult
from xcompat.results.status import BUMP_ORDER as _BUMPS
from xcompat.results.status import Bump, CellStatus

Conclusion = Literal["success", "failure", "neutral"]


def _same_release(label: str, tested: str) -> bool:
    """True when ``tested`` is a release of the ``label`` series: label 2.13 covers 2.13.0 and 2.13.1+cpu."""
    base = tested.split("+", 1)[0]
    return base == label or base.startswith(label + ".")


CELL_STATUSES: tuple[CellStatus, ...] = ("failed", "crashed", "missing", "fallback", "skipped", "passed")

# How a status is shown. The words are always printed next to the symbol, so the grid
# stays readable without colour or emoji support (screen readers, plain terminals).
STATUS_SYMBOL: dict[str, str] = {
    "passed": "✅",
    "failed": "❌",
    "crashed": "💥",
    "skipped": "⏭️",
    "missing": "⛔",
    "fallback": "⚠️",
    # Test outcomes shown next to cell statuses (failures, legends).
    "error": "❗",
    "timeout": "⏱️",
    "leaked": "💧",
}
STATUS_ASCII: dict[str, str] = {
    "passed": "ok",
    "failed": "FAIL",
    "crashed": "CRASH",
    "skipped": "skip",
    "missing": "MISSING",
    "fallback": "fallback",
}
# One Bump and one bump order for every reader: xcompat.results.status.
BUMP_ORDER: dict[str, int] = {bump: rank for rank, bump in enumerate(_BUMPS)}


@dataclass(frozen=True, kw_only=True)
class StageStatus:
    kind: str
    status: str
    summary: str


@dataclass(frozen=True, kw_only=True)
class CellReport:
    id: str
    python: str
    platform: str
    arch: str
    backend: str
    toolkit: str | None = None
    frameworks: tuple[tuple[str, str], ...] = ()
    required: bool = True
    planned: bool = True
    status: CellStatus = "missing"
    reason: str = ""
    stages: tuple[StageStatus, ...] = ()
    tests_passed: int = 0
    tests_failed: int = 0
    tests_skipped: int = 0
    # collected, never run: a test file could not be collected, so pytest ran none of them
    tests_not_run: int = 0
    # what its kernels stage tested, the runner's kernels and the project's operators apart
    # ("runner kernels 880/880; project operators 3: 2 passed, 1 failed: ..."); "" without one
    kernels_tested: str = ""
    # Display facts (optional; empty when the results did not say):
    # the runner labels the plan gave this cell, shown when its job never reported;
    runs_on: tuple[str, ...] = ()
    # the framework versions actually installed when the cell ran (probe or test stage),
    # shown when they differ from the cell's label (numpy 2.1 ran as 2.4.6).
    tested_frameworks: tuple[tuple[str, str], ...] = ()
    # how the cell ran when it ran on an emulated lane (xcompat run --arch); None: natively
    emulation: Emulation | None = None

    @property
    def tests_total(self) -> int:
        return self.tests_passed + self.tests_failed + self.tests_skipped

    @property
    def tested_differences(self) -> tuple[tuple[str, str, str], ...]:
        """(name, label version, tested version) where the cell ran another version than its label."""
        label = dict(self.frameworks)
        out = []
        for name, tested in self.tested_frameworks:
            want = label.get(name)
            if want is not None and tested != want and not _same_release(want, tested):
                out.append((name, want, tested))
        return tuple(out)

    @property
    def device(self) -> str:
        """The grid column: platform, arch and backend (with toolkit)."""
        emulated = f" ({self.emulation.label})" if self.emulation is not None else ""
        return f"{self.platform} {self.arch}{emulated} {self.backend}{self.toolkit or ''}"

    @property
    def framework_label(self) -> str:
        return " ".join(f"{name} {version}" for name, version in self.frameworks)

    @property
    def problem(self) -> bool:
        """True when this cell keeps the report from being green."""
        return self.required and self.status != "passed"


@dataclass(frozen=True, kw_only=True)
class Failure:
    cell_id: str | None
    kind: str
    name: str
    outcome: str
    message: str = ""
    duration: float | None = None
    file: str | None = None
    line: int | None = None
    log_tail: str = ""
    required: bool = True


@dataclass(frozen=True, kw_only=True)
class AbiFinding:
    cell_id: str | None
    kind: str
    library: str
    symbol: str
    demangled: str = ""
    required_bump: Bump = "none"
    message: str = ""
    file: str | None = None
    line: int | None = None

    @property
    def display_symbol(self) -> str:
        return self.demangled or self.symbol


@dataclass(frozen=True, kw_only=True)
class AbiSection:
    required_bump: Bump
    findings: tuple[AbiFinding, ...]
    status: str
    summary: str
    # Optional facts for the "To fix" line: the bump the version change makes and the versions.
    actual_bump: Bump | None = None
    old_version: str | None = None
    new_version: str | None = None
    # False when no ABI diff was made (no baseline, its build failed, the diff did not finish):
    # then required_bump and findings say nothing, and no renderer may read them as "unchanged".
    compared: bool = True


@dataclass(frozen=True, kw_only=True)
class FileCoverage:
    path: str
    percent: float | None
    covered: int | None = None
    total: int | None = None
    uncovered: tuple[tuple[int, int], ...] = ()  # inclusive line ranges


@dataclass(frozen=True, kw_only=True)
class CoverageSection:
    status: str
    summary: str
    percent: float | None
    languages: tuple[tuple[str, float], ...] = ()
    files: tuple[FileCoverage, ...] = ()
    diff_percent: float | None = None
    diff_threshold: float | None = None
    diff_files: tuple[FileCoverage, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ContractEntry:
    """One contract result (stubs, runtime libraries, python floor) as the report shows it:
    per cell, or once for the project (``cell_id`` None); ``counted`` False when its matrix key
    (``report``) or the baseline excuses it (``excused`` says why)."""

    kind: str
    label: str
    cell_id: str | None
    status: str
    mode: str  # report | gate
    counted: bool
    excused: str
    summary: str
    findings: tuple[tuple[str, str], ...] = ()  # (code, message)
    changes: tuple[str, ...] = ()  # the runtime libraries' differences from the baseline's import and the first cell


@dataclass(frozen=True, kw_only=True)
class ElsewhereCell:
    """A cell of the matrix that a local run could not run on its machine (another Python,
    platform, architecture or device), and why: the run makes no claim about it."""

    id: str
    required: bool
    why: str


@dataclass(frozen=True, kw_only=True)
class Report:
    title: str
    conclusion: Conclusion
    headline: str
    cells: tuple[CellReport, ...]
    failures: tuple[Failure, ...]
    problems: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    abi: AbiSection | None = None
    coverage: CoverageSection | None = None
    other: tuple[StageResult, ...] = ()
    notes: tuple[str, ...] = ()
    artifact_url: str | None = None
    # a local run's cells that its machine cannot run: listed, never judged
    not_run_here: tuple[ElsewhereCell, ...] = ()
    # the shell command (in the project's folder) that reruns one test, "{test}" standing for
    # its node id; set by the run that installed the wheel it names
    rerun: str | None = None
    # the contract stages' results (stubs, runtime libraries per cell; python floor once)
    contracts: tuple[ContractEntry, ...] = ()

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {status: 0 for status in CELL_STATUSES}
        for cell in self.cells:
            out[cell.status] = out.get(cell.status, 0) + 1
        return out

    def with_artifact_url(self, url: str | None) -> Report:
        from dataclasses import replace

        return replace(self, artifact_url=url)

    def to_dict(self) -> dict[str, Any]:
        """The machine-readable form (``schemas/report.schema.json``)."""

        def cell(c: CellReport) -> dict[str, Any]:
            d = asdict(c)
            d["frameworks"] = dict(c.frameworks)
            d["emulation"] = c.emulation.to_dict() if c.emulation is not None else None
            d["stages"] = [asdict(s) for s in c.stages]
            d["tests"] = {"passed": c.tests_passed, "failed": c.tests_failed, "skipped": c.tests_skipped,
                          "not_run": c.tests_not_run}
            for key in ("tests_passed", "tests_failed", "tests_skipped", "tests_not_run", "runs_on", "tested_frameworks"):
                d.pop(key)
            return d

        def fcov(f: FileCoverage) -> dict[str, Any]:
            return {
                "path": f.path,
                "percent": f.percent,
                "covered": f.covered,
                "total": f.total,
                "uncovered": [list(r) for r in f.uncovered],
            }

        doc: dict[str, Any] = {
            "version": 1,
            "kind": "report",
            "title": self.title,
            "conclusion": self.conclusion,
            "headline": self.headline,
            "counts": self.counts(),
            "problems": list(self.problems),
            "warnings": list(self.warnings),
            "cells": [cell(c) for c in self.cells],
            "failures": [asdict(f) for f in self.failures],
            "abi": None,
            "coverage": None,
            "other": [
                {
                    "kind": r.kind,
                    "cell_id": r.cell_id,
                    "status": r.status,
                    "summary": r.summary,
                    "source": r.source,
                }
                for r in self.other
            ],
            "notes": list(self.notes),
            "artifact_url": self.artifact_url,
            "not_run_here": [asdict(c) for c in self.not_run_here],
            "rerun": self.rerun,
            "contracts": [{**asdict(c), "findings": [{"code": code, "message": message}
                                                     for code, message in c.findings],
                           "changes": list(c.changes)} for c in self.contracts],
        }
        if self.abi is not None:
            doc["abi"] = {
                "required_bump": self.abi.required_bump,
                "compared": self.abi.compared,
                "status": self.abi.status,
                "summary": self.abi.summary,
                "findings": [asdict(f) for f in self.abi.findings],
            }
        if self.coverage is not None:
            cov = self.coverage
            doc["coverage"] = {
                "status": cov.status,
                "summary": cov.summary,
                "percent": cov.percent,
                "languages": dict(cov.languages),
                "files": [fcov(f) for f in cov.files],
                "diff": {
                    "percent": cov.diff_percent,
                    "threshold": cov.diff_threshold,
                    "files": [fcov(f) for f in cov.diff_files],
                },
            }
        return doc
